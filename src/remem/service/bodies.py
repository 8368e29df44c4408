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
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 1_048_576
DEFAULT_BODY_TIMEOUT = 10.0
DEFAULT_MAX_PENDING_BODIES = 16
RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class BodyLimits:
    """How large, how slow and how many request bodies the server accepts."""

    max_bytes: int = DEFAULT_MAX_BODY
    timeout: float = DEFAULT_BODY_TIMEOUT
    max_pending: int = DEFAULT_MAX_PENDING_BODIES

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.timeout <= 0 or self.max_pending < 1:
            raise ValueError("body limits must be positive")


class BodyLimit:
    """ASGI middleware: read each request body within `limits`, then replay it to `app`."""

    def __init__(self, app: ASGIApp, limits: BodyLimits) -> None:
        self.app = app
        self.limits = limits
        self.pending = 0  # one event loop runs every request, so a plain count is exact

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
        if self.pending >= limits.max_pending:
            await _answer(
                send,
                503,
                "busy",
                "too many request bodies are being received; retry shortly",
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())],
            )
            return
        self.pending += 1
        try:
            async with asyncio.timeout(limits.timeout):
                body = await _read(receive, limits.max_bytes)
        except TimeoutError:
            message = f"the request body did not arrive within {limits.timeout:g} seconds"
            await _answer(send, 408, "request_timeout", message)
            return
        finally:
            self.pending -= 1
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
