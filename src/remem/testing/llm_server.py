"""A scripted OpenAI-compatible chat-completions server on loopback, for tests.

`ScriptedLLM` is a real HTTP server (standard library only: `ThreadingHTTPServer` in
a daemon thread) that stands in for an LLM endpoint: a test points a real client at
`base_url` and scripts what each request gets, faults included (server errors, 429s
with Retry-After, replies slower than the client's timeout, connections cut
mid-response). Scripted replies are served first in, first out; then the optional
`responder` answers; without one the answer is a 500 "ScriptedLLM: no scripted reply
left", so the test fails clearly.

    from remem.testing.llm_server import Reply, ScriptedLLM

    with ScriptedLLM() as llm:
        llm.script(Reply.error(500), Reply.json({"facts": []}))
        client = openai.OpenAI(base_url=llm.base_url, api_key="test", max_retries=1)
        ...
        assert llm.calls == 2 and llm.requests[0]["model"] == "fake-model"

It serves embeddings too (`/v1/embeddings`, for `remem.embed.server`), with a script
of their own (`script_embeddings`: `Reply.vectors`, or the same faults) and then
`embedder` (a function of the texts, by default `HashEmbedder`'s vectors, which may
answer a `Reply` instead: a refusal of some texts); the texts received are in
`embedding_inputs`. No token is kept: `bearer_sha256` is the digest of
the last Bearer token seen, so that a test can check which key was sent.

Run `python -m remem.testing.llm_server --port 8099 --echo` for a server to poke
by hand: every request is answered with `{"echo": <last user message>}`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

NO_REPLY = "ScriptedLLM: no scripted reply left"
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_EMBED_PATHS = ("/v1/embeddings", "/embeddings")
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}

Responder = Callable[[dict[str, Any]], "Reply"]
EmbedFunction = Callable[[list[str]], "list[list[float]] | Reply"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a chat-completion request; build it with the class methods."""

    kind: Literal["completion", "error", "slow", "cut", "body"]
    status: int = 200
    content: str = ""  # the message content of a completion, or the message of an error
    headers: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    then: Reply | None = None

    @classmethod
    def json(
        cls, obj: Any, *, prompt_tokens: int | None = None, completion_tokens: int | None = None
    ) -> Reply:
        """A 200 chat.completion whose message content is `json.dumps(obj)`."""
        return cls("completion", content=json.dumps(obj), prompt_tokens=prompt_tokens,
                   completion_tokens=completion_tokens)  # fmt: skip

    @classmethod
    def text(
        cls, content: str, *, prompt_tokens: int | None = None, completion_tokens: int | None = None
    ) -> Reply:
        """A 200 chat.completion with arbitrary content (invalid JSON, prose, ...)."""
        return cls("completion", content=content, prompt_tokens=prompt_tokens,
                   completion_tokens=completion_tokens)  # fmt: skip

    @classmethod
    def error(
        cls, status: int, message: str = "scripted error", headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An error status with an OpenAI-style body `{"error": {message, type, code}}`."""
        return cls("error", status=status, content=message, headers=tuple((headers or {}).items()))

    @classmethod
    def rate_limited(cls, retry_after: float = 1.0) -> Reply:
        """A 429 whose `Retry-After` header asks the client to wait `retry_after` seconds."""
        return cls.error(429, "rate limited", {"Retry-After": f"{retry_after:g}"})

    @classmethod
    def slow(cls, seconds: float, then: Reply) -> Reply:
        """Sleep `seconds` (not counted in `server_seconds`), then answer with `then`."""
        return cls("slow", seconds=seconds, then=then)

    @classmethod
    def body(cls, obj: Any) -> Reply:
        """A 200 whose JSON body is `obj` as it is (an embeddings answer of any shape:
        wrong counts, dimensions, NaN), or, given bytes, those bytes."""
        raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return cls("body", content=raw.decode("latin-1"))

    @classmethod
    def vectors(cls, rows: list[list[float]]) -> Reply:
        """A 200 embeddings answer holding `rows`, in order."""
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        return cls.body({"object": "list", "data": data, "model": "fake-embed"})

    @classmethod
    def cut(cls) -> Reply:
        """Send a 200 promising a longer body, write half of it and drop the connection."""
        return cls("cut")


class ScriptedLLM:
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script; see the module doc.

    `requests` and `calls` cover chat-completion requests whose body parsed as a
    JSON object; `saw_auth` records only whether any request carried a Bearer
    token. `port=0` (the default) picks a free port.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        model: str = "fake-model",
        port: int = 0,
        embedder: EmbedFunction | None = None,
    ) -> None:
        self.responder = responder
        self.model = model
        self.embedder = embedder or _hash_vectors
        self.saw_auth = False
        self.bearer_sha256: str | None = None  # the last Bearer token's digest, never it
        self._embed_queue: deque[Reply] = deque()
        self._embed_inputs: list[list[str]] = []
        self._port = port
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._seconds = 0.0
        self._busy = 0  # requests whose handler has not yet added its seconds
        self._settled = threading.Condition(self._lock)
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ScriptedLLM:
        """Bind the port and serve in a daemon thread; return self."""
        if self._server is not None:
            raise RuntimeError("ScriptedLLM is already running")
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", self._port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="ScriptedLLM", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any `Reply.slow` sleeper and drop open connections."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # idle keep-alives: their threads see EOF and end
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        thread.join(5)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, `http://127.0.0.1:PORT/v1`."""
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not running; call start() or use `with`")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Append replies to the FIFO queue served before the responder."""
        with self._lock:
            self._queue.extend(replies)

    def script_embeddings(self, *replies: Reply) -> None:
        """Append replies to the embeddings route's own queue, served before `embedder`."""
        with self._lock:
            self._embed_queue.extend(replies)

    @property
    def embedding_inputs(self) -> list[list[str]]:
        """The texts of each embeddings request received so far, in order."""
        with self._lock:
            return [list(t) for t in self._embed_inputs]

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The parsed chat-completion bodies received so far, in order (a copy of the list)."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """How many chat-completion requests were received."""
        with self._lock:
            return len(self._requests)

    @property
    def server_seconds(self) -> float:
        """Seconds spent inside handlers, excluding deliberate `Reply.slow` sleeps. A
        handler adds its own after its answer is sent, so a client that just read one
        could ask before that: this waits (at most a second) for handlers in flight."""
        with self._settled:
            self._settled.wait_for(lambda: self._busy == 0, timeout=1.0)
            return self._seconds

    def _receive(self, request: dict[str, Any]) -> tuple[int, Reply | None]:
        with self._lock:
            self._requests.append(request)
            return len(self._requests), (self._queue.popleft() if self._queue else None)

    def _reply_for(self, request: dict[str, Any]) -> tuple[int, Reply]:
        n, reply = self._receive(request)
        if reply is not None:
            return n, reply
        responder = self.responder
        if responder is None:
            return n, Reply.error(500, NO_REPLY)
        try:
            return n, responder(copy.deepcopy(request))
        except Exception as exc:
            return n, Reply.error(500, f"ScriptedLLM responder raised {type(exc).__name__}: {exc}")

    def _embedding_reply(self, texts: list[str]) -> Reply:
        with self._lock:
            self._embed_inputs.append(list(texts))
            reply = self._embed_queue.popleft() if self._embed_queue else None
        if reply is not None:
            return reply
        try:
            made = self.embedder(texts)
            return made if isinstance(made, Reply) else Reply.vectors(made)
        except Exception as exc:
            return Reply.error(500, f"ScriptedLLM embedder raised {type(exc).__name__}: {exc}")

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for a slow reply or an idle keep-alive

    def __init__(self, address: tuple[str, int], llm: ScriptedLLM) -> None:
        self.llm = llm
        super().__init__(address, _Handler)

    def server_bind(self) -> None:  # skip HTTPServer's getfqdn lookup, which can be slow
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client that went away is no error
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # silent, and never prints headers

    def setup(self) -> None:
        super().setup()
        # headers and body go out as two writes: without this, Nagle's algorithm holds
        # the body until the client's delayed ACK (~40 ms a request on loopback)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.llm._track(self.connection, True)

    def finish(self) -> None:
        self.server.llm._track(self.connection, False)
        super().finish()

    def do_POST(self) -> None:
        """Serve a request, timing it and noting (only) whether it carried a Bearer token."""
        started, llm = time.perf_counter(), self.server.llm
        with llm._lock:
            llm._busy += 1
        slept = 0.0
        try:
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer ") and auth[7:].strip():
                llm.saw_auth = True
                llm.bearer_sha256 = hashlib.sha256(auth[7:].strip().encode()).hexdigest()
            slept = self._route()
        except OSError:  # BrokenPipe, ConnectionReset: the client has gone away
            self.close_connection = True
        finally:
            with llm._settled:
                llm._seconds += time.perf_counter() - started - slept
                llm._busy -= 1
                llm._settled.notify_all()

    do_GET = do_POST

    def _route(self) -> float:
        raw = self._read_body()
        route = (self.command, self.path.split("?")[0].rstrip("/"))
        if route in (("GET", "/v1/models"), ("GET", "/models")):
            model = {"id": self.server.llm.model, "object": "model", "owned_by": "remem"}
            self._send(200, {"object": "list", "data": [model]})
        elif route[0] == "POST" and route[1] in _CHAT_PATHS:
            return self._chat(raw)
        elif route[0] == "POST" and route[1] in _EMBED_PATHS:
            return self._embeddings(raw)
        else:
            self._send(404, _error_body(404, f"no route for {self.command} {self.path}"))
        return 0.0

    def _chat(self, raw: bytes) -> float:
        try:
            request = json.loads(raw)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._send(400, _error_body(400, "the request body is not a JSON object"))
            return 0.0
        n, reply = self.server.llm._reply_for(request)
        slept = 0.0
        while reply.kind == "slow" and reply.then is not None:
            t0 = time.perf_counter()
            self.server.llm._stopping.wait(reply.seconds)
            slept += time.perf_counter() - t0
            reply = reply.then
        if reply.kind == "error":
            self._send(reply.status, _error_body(reply.status, reply.content), reply.headers)
        elif reply.kind == "cut":
            self._send(200, self._completion(request, n, Reply.text("x" * 200)), cut=True)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # abruptly, short of Content-Length
        else:
            self._send(200, self._completion(request, n, reply))
        return slept

    def _embeddings(self, raw: bytes) -> float:
        try:
            request = json.loads(raw)
        except ValueError:
            request = None
        texts = request.get("input") if isinstance(request, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send(400, _error_body(400, "input must be a string or a list of strings"))
            return 0.0
        reply = self.server.llm._embedding_reply(texts)
        slept = 0.0
        while reply.kind == "slow" and reply.then is not None:
            t0 = time.perf_counter()
            self.server.llm._stopping.wait(reply.seconds)
            slept += time.perf_counter() - t0
            reply = reply.then
        if reply.kind == "error":
            self._send(reply.status, _error_body(reply.status, reply.content), reply.headers)
        elif reply.kind == "cut":
            self._send_raw(200, b'{"object": "list", "data": [' + b" " * 200, cut=True)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._send_raw(200, reply.content.encode("latin-1"))
        return slept

    def _completion(self, request: dict[str, Any], n: int, reply: Reply) -> dict[str, Any]:
        p, c = reply.prompt_tokens, reply.completion_tokens
        if p is None:
            p = max(1, sum(_words(m.get("content")) for m in request.get("messages") or []))
        if c is None:
            c = max(1, _words(reply.content))
        message = {"role": "assistant", "content": reply.content}
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.server.llm.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(
        self, status: int, obj: Any, headers: tuple[tuple[str, str], ...] = (), cut: bool = False
    ) -> None:
        self._send_raw(status, json.dumps(obj).encode(), headers, cut)

    def _send_raw(
        self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = (), cut: bool = False
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if cut else body)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": str(status)}}


def _words(content: Any) -> int:
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return len(str(content or "").split())


def _hash_vectors(texts: list[str]) -> list[list[float]]:
    from remem.embed.base import HashEmbedder  # numpy: only when vectors are asked for

    return [[float(x) for x in row] for row in HashEmbedder(64).embed(texts)]


def _echo(request: dict[str, Any]) -> Reply:
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return Reply.json({"echo": users[-1].get("content") if users else None})


def main(argv: list[str] | None = None) -> int:
    """Serve on 127.0.0.1 until Ctrl-C; with --echo, answer `{"echo": <last user message>}`."""
    parser = argparse.ArgumentParser(prog="python -m remem.testing.llm_server")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--echo", action="store_true", help="echo the last user message")
    args = parser.parse_args(argv)
    responder: Responder = _echo if args.echo else (lambda _request: Reply.json({}))
    with ScriptedLLM(responder, model=args.model, port=args.port) as llm:
        print(llm.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
