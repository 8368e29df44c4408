"""The MCP messages remem answers itself, before the MCP SDK sees them.

The SDK's stdio reader turns a line it cannot parse (malformed JSON, nesting
too deep, a lone surrogate escape) into a log notification that quotes the
line's start, and sends no response, so the client waits for its own timeout
and a secret in the line reaches stderr. Its streamable HTTP transport
answers a body nested too deep with 500. Here such a message gets a JSON-RPC
2.0 error at once (`refusal`): -32700 when it is not JSON the SDK can read,
-32600 when it is JSON but not a JSON-RPC message; with the request's id when
it can be recovered cheaply, else null. Neither the answer nor the log quotes
the message.

Two more the SDK would read and log whole: a message whose id is neither a string nor
an integer (`1.5`, `true`, `{}`) reads to it as a notification of an unknown method,
and a notification of one is logged with its parameters, a secret in a query
included; a request whose parameters are not its method's (`"arguments": [...]`) is
answered -32602 and its validation error logged with the start of the value. Both
are answered here: -32600 (id null) for the first, -32602 with the request's id for
the second.

- stdio: `run_stdio` wraps the SDK's own `stdio_server` in a screened stdin
  and a stdout whose lines never interleave; the SDK's loop is unchanged. A
  line over `max_chars` is refused (-32600) and read no further into memory.
- HTTP: `ScreenMessages`, ASGI middleware inside `BodyLimit`, answers 400.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import IO, Any

import anyio
import anyio.to_thread
from mcp.server.fastmcp import FastMCP
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ClientNotification,
    ClientRequest,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
)
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("remem.mcp")

ID_SCAN_CHARS = 4096  # how much of an unreadable message is searched for its id
# The members before the first nested value are the top level's: an id among them is
# the request's. Bounded pieces, so the scan is linear in ID_SCAN_CHARS.
_SIMPLE = r'(?:"[^"\\]{0,200}"|-?\d{1,20}(?:\.\d{1,20})?|true|false|null)'
_LEADING_ID = re.compile(
    rf'\s*\{{\s*(?:"[^"\\]{{0,64}}"\s*:\s*{_SIMPLE}\s*,\s*)*?"id"\s*:\s*("[^"\\]{{0,200}}"|-?\d{{1,20}})\s*[,}}]'
)

Id = str | int | None


def refusal(text: str | bytes) -> str | None:
    """The JSON-RPC error answering `text`, or None when the SDK can read it as a message."""
    try:
        message = JSONRPCMessage.model_validate_json(text)
    except ValidationError as exc:
        unreadable = any(e["type"] == "json_invalid" for e in exc.errors(include_input=False))
    except (ValueError, RecursionError):
        unreadable = True
    else:
        return _unfit(message.root)
    try:
        parsed: Any = json.loads(text)
    except (ValueError, RecursionError):  # not JSON Python reads either: look at its start
        return answer(PARSE_ERROR, _UNREADABLE, _leading_id(text))
    found = parsed.get("id") if isinstance(parsed, dict) else None
    rid = found if isinstance(found, str | int) and not isinstance(found, bool) else None
    if unreadable:
        return answer(PARSE_ERROR, _UNREADABLE, rid)
    return answer(INVALID_REQUEST, _NOT_A_MESSAGE, rid)


def _unfit(root: object) -> str | None:
    """The error answering a message the SDK reads but would log (see the module
    docstring), or None: the SDK's own validation of a request or notification, run
    first."""
    if isinstance(root, JSONRPCRequest):
        try:
            ClientRequest.model_validate(
                root.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
        except ValidationError:
            return answer(INVALID_PARAMS, _BAD_PARAMS, root.id)
    elif isinstance(root, JSONRPCNotification):
        if "id" in (root.model_extra or {}):
            return answer(INVALID_REQUEST, _BAD_ID, None)
        try:
            ClientNotification.model_validate(
                root.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
        except ValidationError:
            return answer(INVALID_REQUEST, _NOT_A_NOTIFICATION, None)
    return None


_UNREADABLE = (
    "Parse error: the message is not JSON that can be read (malformed, nested too deeply, "
    "or a string with an invalid escape such as a lone surrogate); nothing was done"
)
_BAD_PARAMS = (
    "Invalid params: the parameters are not those of the method (arguments are a JSON "
    "object of the tool's own); nothing was done"
)
_BAD_ID = "Invalid Request: the id must be a string or an integer; nothing was done"
_NOT_A_NOTIFICATION = (
    "Invalid Request: a message without an id is a notification, and this is none the "
    "server takes (a request needs an id); nothing was done"
)
_NOT_A_MESSAGE = (
    "Invalid Request: the message is JSON but not a JSON-RPC 2.0 request, notification "
    "or response; nothing was done"
)


def answer(code: int, message: str, rid: Id) -> str:
    """A JSON-RPC 2.0 error response, as one line of JSON."""
    error = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(error, separators=(",", ":"))


def _leading_id(text: str | bytes) -> Id:
    head = text[:ID_SCAN_CHARS]
    if isinstance(head, bytes):
        head = head.decode("utf-8", "replace")
    match = _LEADING_ID.match(head)
    if match is None:
        return None
    try:
        rid = json.loads(match.group(1))
    except ValueError:
        return None
    return rid if isinstance(rid, str | int) else None


def _not_utf8(line: str) -> str | None:
    """The -32700 answering a stdio line whose bytes are not UTF-8 (read with
    surrogateescape: its bad bytes are lone surrogates), or None."""
    if line.isascii():
        return None
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return answer(PARSE_ERROR, _NOT_UTF8, _leading_id(line))
    return None


_NOT_UTF8 = "Parse error: the message is not UTF-8; nothing was done"


def _too_long(max_chars: int, head: str) -> str:
    message = (
        f"Invalid Request: a message over {max_chars} characters is refused (--max-body); "
        "nothing was done"
    )
    return answer(INVALID_REQUEST, message, _leading_id(head))


# -- stdio ---------------------------------------------------------------------------------


class _Out(anyio.AsyncFile[str]):
    """stdout: the SDK's lines and remem's answers, each written whole."""

    def __init__(self, fp: IO[str]) -> None:
        super().__init__(fp)
        self._turn = anyio.Lock()

    async def write(self, b: str) -> int:
        async with self._turn:
            return await super().write(b)

    async def answer(self, line: str) -> None:
        """Write one line of ours and flush it."""
        async with self._turn:
            await super().write(line + "\n")
            await super().flush()


class _Lines(anyio.AsyncFile[str]):
    """stdin as the SDK's reader sees it: only the lines it can parse."""

    def __init__(self, fp: IO[str], out: _Out, max_chars: int) -> None:
        super().__init__(fp)
        self._out = out
        self._max = max_chars

    async def __aiter__(self) -> AsyncIterator[str]:
        while line := await self._read(self._max + 1):
            if len(line) > self._max:
                head = line[:ID_SCAN_CHARS]
                while line and not line.endswith("\n"):  # the rest, a bounded piece at a time
                    line = await self._read(self._max)
                log.warning("refused an MCP message over %d characters", self._max)
                await self._out.answer(_too_long(self._max, head))
                continue
            if not line.strip():
                continue
            refused = _not_utf8(line) or refusal(line)
            if refused is None:
                yield line
                continue
            log.warning("refused an MCP message the server cannot read; answered an error")
            await self._out.answer(refused)

    async def _read(self, most: int) -> str:
        # a line, or its next `most` characters: a huge line is never held whole
        line: str = await anyio.to_thread.run_sync(self.wrapped.readline, most)
        return line


async def serve_stdio(server: FastMCP, max_chars: int) -> None:
    """Serve `server` over this process's stdin and stdout (FastMCP's `run_stdio_async`,
    with the screened streams)."""
    # UTF-8 whatever the platform's default, as the SDK's own stdio_server does
    out = _Out(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    # lines end at "\n" only: a raw "\r" is white space inside a JSON message, not its end;
    # bytes that are not UTF-8 are kept as lone surrogates, so `_not_utf8` refuses the line
    # (replaced by U+FFFD, they were stored as such)
    stdin = TextIOWrapper(
        sys.stdin.buffer, encoding="utf-8", errors="surrogateescape", newline="\n"
    )
    lines = _Lines(stdin, out, max_chars)
    low = server._mcp_server  # FastMCP's lowlevel server: no public name for it
    async with stdio_server(stdin=lines, stdout=out) as (read, write):
        await low.run(read, write, low.create_initialization_options())


def run_stdio(server: FastMCP, max_chars: int) -> None:
    """Serve `server` over stdio until the client closes stdin."""
    anyio.run(serve_stdio, server, max_chars)


# -- HTTP ----------------------------------------------------------------------------------


class ScreenMessages:
    """ASGI middleware: a POST body the SDK cannot read as a message is answered 400 with
    the JSON-RPC error, never passed on. Inside `BodyLimit`, so the body is bounded and
    already in memory."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        message: Message = {"type": "http.request", "more_body": True}
        while message["type"] == "http.request" and message.get("more_body", False):
            message = await receive()
            parts.append(message.get("body", b""))
        body = b"".join(parts)
        if message["type"] == "http.request" and body.strip():
            refused = refusal(body)
            if refused is not None:
                log.warning("refused an MCP message the server cannot read; answered 400")
                await _send_json(send, 400, refused.encode())
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                if message["type"] != "http.request":
                    return message  # a disconnect, passed on as it came
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
