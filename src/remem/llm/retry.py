"""How remem retries a model endpoint (chat or embeddings): a small value object and
the pure rules of which failures are retried, no I/O."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter, for one model call and for a whole job.

    A call is tried up to `attempts` times on timeouts, cut connections, 429s
    and 5xx, and up to `malformed_attempts` times when its answer does not
    match the response schema. A job whose call still failed waits
    `delay(job_attempt)` before it is taken again, up to `job_attempts` times;
    then it is 'failed' and waits for `remem jobs retry`.
    """

    attempts: int = 4
    malformed_attempts: int = 2
    base_seconds: float = 0.5
    max_seconds: float = 30.0
    job_attempts: int = 5
    job_base_seconds: float = 10.0
    job_max_seconds: float = 600.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.malformed_attempts < 1 or self.job_attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.base_seconds < 0 or self.max_seconds < 0 or self.job_base_seconds < 0:
            raise ValueError("backoff seconds cannot be negative")

    def delay(
        self,
        attempt: int,
        retry_after: float | None = None,
        rng: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait after the `attempt`-th failed try of a call (1-based).

        Full exponential backoff with jitter between half and all of it; a
        server's Retry-After is honoured as a floor (capped at `max_seconds`).
        """
        return _backoff(self.base_seconds, self.max_seconds, attempt, retry_after, rng)

    def job_delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Seconds a failed job waits before it is taken again."""
        return _backoff(self.job_base_seconds, self.job_max_seconds, attempt, None, rng)


def _backoff(
    base: float, cap: float, attempt: int, floor: float | None, rng: Callable[[], float]
) -> float:
    wait = min(cap, base * 2.0 ** max(attempt - 1, 0))
    wait *= 0.5 + rng() / 2
    if floor is not None:
        wait = max(wait, min(floor, cap))
    return wait


RETRYABLE_STATUS = frozenset({408, 409, 429})


def retryable(status: int) -> bool:
    """Whether an HTTP status is worth another try: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def retry_after(exc: Exception) -> float | None:
    """The seconds a failed call's Retry-After header asks for (None: none, or an HTTP
    date, which our own backoff replaces)."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def describe(exc: Exception) -> str:
    """A failed call as logs and messages show it: the error's class and HTTP status
    (never its body, which may echo what was sent)."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    return f"{name} (HTTP {status})" if status is not None else name
