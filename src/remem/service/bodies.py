"""The request-body guard in front of the HTTP service and the MCP HTTP transport.

A body is read whole before the app sees it, so three bounds keep slow or
large bodies from holding the server:

- size: a body over `max_bytes` (declared or as it arrives) is 413;
- time: a body not received in full within `timeout` seconds of the request
  is 408, and the connection is closed;
- number: at most `max_pending` bodies are being received at once; a request
  with a body beyond that is 503 with `Retry-After` at once, never buffered.

So the bodies being received hold at most `max_pending` * `max_bytes` bytes.
Requests without a body (GET, `Content-Length: 0`) take no slot.

A body is read before the key is checked (the route checks it, on a worker thread,
with a read of the database), so a stranger could hold every slot with slow bodies and
have every write answered 503. Given `TrustedKeys` (the HTTP service does), a request
whose bearer key has not authenticated in this process within `TRUSTED_SECONDS` (none,
unknown, revoked, or not yet seen) takes one of at most a quarter of the slots
(`stranger_slots`, at least one); requests with a key that has take the others. The
key is still checked by the route, as before: the slots decide only who waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 1_048_576
DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_MAX_PENDING_BODIES = 16
RETRY_AFTER_SECONDS = 1
TRUSTED_SECONDS = 300.0  # how long a key that authenticated counts as known
TRUSTED_MAX = 4096  # keys known at once; the least recently seen is forgotten first


@dataclass(frozen=True)
class BodyLimits:
    """How large, how slow and how many request bodies the server accepts."""

    max_bytes: int = DEFAULT_MAX_BODY
    timeout: float = DEFAULT_BODY_TIMEOUT
    max_pending: int = DEFAULT_MAX_PENDING_BODIES

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.timeout <= 0 or self.max_pending < 1:
            raise ValueError("body limits must be positive")

    @property
    def stranger_slots(self) -> int:
        """The slots requests without a known key may hold at once."""
        return max(1, self.max_pending // 4)


class TrustedKeys:
    """Digests of the bearer keys that authenticated in this process lately (see the
    module): `add` after a key is verified, `knows` from the event loop."""

    def __init__(self, seconds: float = TRUSTED_SECONDS, size: int = TRUSTED_MAX) -> None:
        self.seconds = seconds
        self.size = size
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()  # routes verify keys on worker threads

    def add(self, key: str) -> None:
        """Note a key that has just authenticated (as its header carried it: latin-1)."""
        digest = hashlib.sha256(key.encode("latin-1", "replace")).digest()
        with self._lock:
            self._seen[digest] = time.monotonic()
            self._seen.move_to_end(digest)
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)

    def knows(self, authorization: bytes | None) -> bool:
        """Whether an Authorization header carries a key noted within `seconds`."""
        if authorization is None or authorization[:7].lower() != b"bearer ":
            return False
        digest = hashlib.sha256(authorization[7:].strip()).digest()
        with self._lock:
            seen = self._seen.get(digest)
        return seen is not None and time.monotonic() - seen < self.seconds


class BodyLimit:
    """ASGI middleware: read each request body within `limits`, then replay it to `app`."""

    def __init__(
        self, app: ASGIApp, limits: BodyLimits, trusted: TrustedKeys | None = None
    ) -> None:
        self.app = app
        self.limits = limits
        self.trusted = trusted  # None: every request may take any slot
        self.pending = 0  # one event loop runs every request, so a plain count is exact
        self.strangers = 0  # of them, those without a known key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limits.max_bytes):
            await _answer(send, 413, "body_too_large", _over(limits.max_bytes))
            return
        if not _has_body(headers, declared):
            await self.app(scope, receive, send)
            return
        stranger = self.trusted is not None and not self.trusted.knows(
            headers.get(b"authorization")
        )
        if self.pending >= limits.max_pending or (
            stranger and self.strangers >= limits.stranger_slots
        ):
            await _answer(
                send,
                503,
                "busy",
                "too many request bodies are being received; retry shortly",
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())],
            )
            return
        self.pending += 1
        self.strangers += stranger
        try:
            async with asyncio.timeout(limits.timeout):
                body = await _read(receive, limits.max_bytes)
        except TimeoutError:
            message = f"the request body did not arrive within {limits.timeout:g} seconds"
            await _answer(send, 408, "request_timeout", message)
            return
        finally:
            self.pending -= 1
            self.strangers -= stranger
        if body is None:
            await _answer(send, 413, "body_too_large", _over(limits.max_bytes))
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _has_body(headers: dict[bytes, bytes], declared: bytes | None) -> bool:
    if declared is not None:
        return declared != b"0"
    return b"transfer-encoding" in headers


async def _read(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None once it is over `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)


def _over(limit: int) -> str:
    return f"the request body is over the limit of {limit} bytes"


async def _answer(
    send: Send,
    status: int,
    code: str,
    message: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """An error in the service's shape, closing the connection (the body was not read)."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
