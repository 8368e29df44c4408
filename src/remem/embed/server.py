"""An OpenAI-compatible embeddings server as the embedder (`POST {base_url}/embeddings`).

Any server that speaks the embeddings API of OpenAI works: OpenAI and Azure, Ollama
(`http://localhost:11434/v1`), vLLM, Text Embeddings Inference (`http://host:8080/v1`),
LiteLLM. The HTTP policy is the language model's (`remem.llm.client`): the `openai`
SDK (the llm extra), its own retries off and ours on (`RetryPolicy`: timeouts, cut
connections, 408/409/429 and 5xx are retried with backoff and jitter, a 429's
Retry-After honoured; another 4xx is refused at once: a 400, 413 or 422 as a refusal
of the texts sent, `EmbedderInputRefused`, any other as the server's). The API key is
read from the environment variable the settings name, when a connection is first made;
it is never stored, logged or shown.

Every answer is checked before a vector is used (`EmbedderBadOutput` otherwise): a
body of at most `MAX_RESPONSE_BYTES`, read as it streams in (and within `timeout` in
all, however slowly it trickles); one vector per text,
matched by `index`; each of `dimensions` finite numbers, not all zero. Vectors are
normalised to unit length here, whatever the server does. Texts go in batches of
`batch_size` (at most `MAX_BATCH`); a text is cut to `MAX_TEXT_CHARS` and any secret
in it redacted first (`_screened`).

An outage must not stall every write: after a call fails (its retries spent) the
embedder is *down* for `cooldown_seconds`, and `embed` raises `EmbedderUnavailable`
at once meanwhile (`down` says why). A refusal of the texts (`INPUT_REFUSED`) does not
take it down: other texts are still to be asked. The callers treat any `EmbedderError`
as "no vector now": a write goes on without one and the vector is filled in later
(`remem.memory.backfill`, which sets aside a text refused for good); a recall is
lexical only and says so in its notes.

The test double is `remem.testing.llm_server.ScriptedLLM`, whose `/v1/embeddings`
route a test scripts like its chat route.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from remem.embed.vectors import Vectors
from remem.errors import (
    EmbedderBadOutput,
    EmbedderError,
    EmbedderInputRefused,
    EmbedderRefused,
    EmbedderUnavailable,
    InvalidInput,
)
from remem.llm.retry import RetryPolicy, describe, retry_after, retryable
from remem.llm.settings import shown_url
from remem.policy.dataclasses import find_secrets, redact

log = logging.getLogger("remem.embed")

MAX_BATCH = 2048  # texts in one request: OpenAI's own limit
MAX_DIMENSIONS = 16384
MAX_TEXT_CHARS = 32_000  # a text is cut to this many characters before it is sent
# a body this large holds more than 2048 vectors of 1536 floats written out in JSON
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# the statuses that refuse the texts sent (too long, invalid), not the server's use
INPUT_REFUSED = frozenset({400, 413, 422})


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Where an embeddings server is and how to talk to it (the `[embed]` section).

    `dimensions` is the length of the model's vectors, checked on every answer and
    recorded with the vectors (`vector_models`); `send_dimensions` also asks the server
    for that length (OpenAI's text-embedding-3 models can shorten theirs; others may
    refuse the field). `api_key_env` names the environment variable holding the key (no
    key: none is sent, as local servers want). `name` is what the vectors are stored
    under (default `server:<model>`): two servers of the same model share vectors."""

    base_url: str
    model: str
    dimensions: int
    api_key_env: str | None = None
    batch_size: int = 64
    timeout: float = 30.0
    cooldown_seconds: float = 30.0
    send_dimensions: bool = False
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise InvalidInput(
                "embed base_url must be an http(s) URL, such as http://localhost:11434/v1 "
                "(the value given is not shown: a URL may carry credentials)"
            )
        if not self.model:
            raise InvalidInput("embed model must be named (e.g. model = 'nomic-embed-text')")
        if not 1 <= self.dimensions <= MAX_DIMENSIONS:
            raise InvalidInput(
                f"embed dimensions must lie between 1 and {MAX_DIMENSIONS} (the length of the "
                f"model's vectors, e.g. 768 for nomic-embed-text); got {self.dimensions}"
            )
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise InvalidInput(f"embed batch_size must lie between 1 and {MAX_BATCH}")
        if not 0 < self.timeout <= 600:
            raise InvalidInput(f"embed timeout must lie in (0, 600] seconds; got {self.timeout}")
        if self.cooldown_seconds < 0:
            raise InvalidInput("embed cooldown_seconds cannot be negative")

    @property
    def stored_name(self) -> str:
        """The name the vectors are stored under: `name`, else `server:<model>`."""
        return self.name or f"server:{self.model}"


class ServerEmbedder:
    """The Embedder over an OpenAI-compatible embeddings server; see the module docstring.
    Thread-safe."""

    may_fail = True  # an outage is expected: callers go on without vectors (`embed_or_none`)

    def __init__(
        self,
        settings: ServerSettings,
        retry: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rng = rng
        self._client: Any = None
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down_reason = ""
        self.requests = 0  # HTTP requests made, retries included
        self.missed = False  # a write went on without vectors (`embed_or_none`)
        self._expect: int | None = settings.dimensions  # None: take what comes (`probe`)

    def __repr__(self) -> str:
        s = self.settings
        return f"ServerEmbedder({shown_url(s.base_url)!r}, model={s.model!r}, dim={s.dimensions})"

    @property
    def name(self) -> str:
        """`ServerSettings.stored_name`."""
        return self.settings.stored_name

    @property
    def dim(self) -> int:
        """The configured `dimensions`."""
        return self.settings.dimensions

    @property
    def fingerprint(self) -> str:
        """What identifies the vectors: the model and its dimension (the server's address
        is left out: the same model behind another address makes the same vectors)."""
        source = f"openai-embeddings|{self.settings.model}|{self.settings.dimensions}"
        return hashlib.sha256(source.encode()).hexdigest()[:16]

    @property
    def down(self) -> str | None:
        """Why the server is taken as down (a call failed less than `cooldown_seconds`
        ago), or None when it is to be asked."""
        with self._lock:
            if time.monotonic() < self._down_until:
                return self._down_reason
        return None

    def close(self) -> None:
        """Close the HTTP connections (they reopen if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of `texts`, shape (len(texts), dim); raises an `EmbedderError`
        (`EmbedderUnavailable` at once while the server is down)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[Vectors] = []
        reason = self.down
        if reason is not None:
            raise EmbedderUnavailable(f"the embeddings server is down: {reason}")
        size = self.settings.batch_size
        try:
            for start in range(0, len(texts), size):
                batch = [_screened(t) for t in texts[start : start + size]]
                rows.append(self._batch(batch))
        except EmbedderError as exc:
            if self.settings.cooldown_seconds > 0 and not isinstance(exc, EmbedderInputRefused):
                with self._lock:
                    self._down_until = time.monotonic() + self.settings.cooldown_seconds
                    self._down_reason = str(exc)
            raise
        return np.concatenate(rows)

    def _batch(self, texts: list[str]) -> Vectors:
        """One request's vectors, retried as the module docstring says."""
        import openai

        failures = 0
        while True:
            try:
                return self._request(texts)
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                error = describe(exc)
                if isinstance(exc, openai.APIStatusError) and not retryable(exc.status_code):
                    if exc.status_code in INPUT_REFUSED:
                        raise EmbedderInputRefused(
                            f"the embeddings server refused the text(s): {error}"
                        ) from None
                    raise EmbedderRefused(
                        f"the embeddings server refused the request: {error}; check the "
                        "model name, the key and the URL in [embed]"
                    ) from None
                failures += 1
                if failures >= self.retry.attempts:
                    raise EmbedderUnavailable(
                        f"the embeddings server failed {failures} times; last: {error}"
                    ) from None
                wait = self.retry.delay(failures, retry_after(exc), self._rng)
                log.info("embeddings call failed (%s); retrying in %.1fs", error, wait)
                self._sleep(wait)

    def _request(self, texts: list[str]) -> Vectors:
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "input": texts,
            "encoding_format": "float",
        }
        if self.settings.send_dimensions:
            kwargs["dimensions"] = self.settings.dimensions
        with self._lock:
            self.requests += 1
        client = self._openai()
        deadline = time.monotonic() + self.settings.timeout  # whole answer, not per read
        with client.embeddings.with_streaming_response.create(**kwargs) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:
                    raise EmbedderUnavailable(
                        f"the embeddings server's answer took over {self.settings.timeout} s"
                    )
                if len(body) > MAX_RESPONSE_BYTES:
                    raise EmbedderBadOutput(
                        f"the embeddings server's answer is over {MAX_RESPONSE_BYTES} bytes "
                        f"for {len(texts)} text(s): is base_url an embeddings server?"
                    )
        return checked_vectors(bytes(body), len(texts), self._expect)

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise InvalidInput(
                        "an embeddings server needs the llm extra: pip install 'remem[llm]'"
                    ) from None
                env = self.settings.api_key_env
                key = os.environ.get(env, "") if env else ""
                self._client = openai.OpenAI(
                    base_url=self.settings.base_url,
                    api_key=key or "unused",  # local servers take any key; the SDK wants one
                    timeout=self.settings.timeout,
                    max_retries=0,  # retries are ours, with our backoff
                )
            return self._client


def _screened(text: str) -> str:
    """What is sent of a text: its first `MAX_TEXT_CHARS` characters with any secret
    redacted. Stored texts are screened before they are written (events redacted,
    records and documents holding one refused); a recall's query is not, so this door
    screens every text itself: nothing a write path would refuse leaves the machine."""
    cut = text[:MAX_TEXT_CHARS]
    return redact(cut, found) if (found := find_secrets(cut)) else cut


def probe_dimensions(settings: ServerSettings, retry: RetryPolicy | None = None) -> int:
    """The length of the vectors the server's model makes, asked with one short text (for
    a server named without its `dimensions`, as `--embedder URL` may be)."""
    probe = ServerEmbedder(replace(settings, cooldown_seconds=0), retry)
    probe._expect = None
    try:
        return int(probe.embed(["dimensions"]).shape[1])
    finally:
        probe.close()


def checked_vectors(body: bytes, count: int, dim: int | None) -> Vectors:
    """The unit vectors an embeddings answer holds, in input order; `EmbedderBadOutput`
    unless it is a JSON object whose `data` holds `count` items, each an `index` (each of
    0..count-1 once) and an `embedding` of `dim` finite numbers, not all zero (None: of
    the first one's length, at most `MAX_DIMENSIONS`)."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise EmbedderBadOutput("the embeddings server's answer is not JSON") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise EmbedderBadOutput("the embeddings server's answer has no `data` list")
    if len(data) != count:
        raise EmbedderBadOutput(
            f"the embeddings server sent {len(data)} vector(s) for {count} text(s)"
        )
    if dim is None:
        first = data[0].get("embedding") if data and isinstance(data[0], dict) else None
        dim = len(first) if isinstance(first, list) and 0 < len(first) <= MAX_DIMENSIONS else 0
        if not dim:
            raise EmbedderBadOutput("the embeddings server's first vector has no usable length")
    out = np.zeros((count, dim), dtype=np.float32)
    seen: set[int] = set()
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise EmbedderBadOutput(f"item {position} of the answer is not an object")
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise EmbedderBadOutput(f"item {position} of the answer has no valid index")
        if index in seen:
            raise EmbedderBadOutput(f"the answer holds index {index} twice")
        seen.add(index)
        vector = item.get("embedding")
        if not isinstance(vector, list):
            raise EmbedderBadOutput(
                f"item {position}'s embedding is not a list of numbers (base64 is not asked for)"
            )
        if len(vector) != dim:
            raise EmbedderBadOutput(
                f"the embeddings server sent a vector of {len(vector)} dimensions where "
                f"[embed] dimensions says {dim}: set dimensions to the model's"
            )
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
            raise EmbedderBadOutput(f"item {position}'s embedding holds a non-number")
        row = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(row)) if np.isfinite(row).all() else math.nan
        if not math.isfinite(norm) or norm == 0.0:
            raise EmbedderBadOutput(
                f"item {position}'s embedding is not a usable vector (NaN, infinite or zero)"
            )
        out[index] = (row / norm).astype(np.float32)
    return out
