"""Slow and numerous request bodies against a real uvicorn on loopback, over raw sockets.

A client that declares a body and trickles it must get 408 within the body
timeout, a body beyond the number being received must get 503 at once, and a
normal request must still be served meanwhile: on `remem serve`'s app and on
`remem mcp --transport http`. Not about the backend: SQLite files only.
"""

from __future__ import annotations

import json
import select
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn

from remem.embed import HashEmbedder
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from tests.support.mcp import mcp_keys
from tests.support.processes import child_env, free_port, left_running, stop

TIMEOUT = 2.5  # long enough that the requests meant to pass meanwhile do, on a busy machine
DECLARED = 1_048_576  # declared, never sent in full


class Trickler:
    """Raw connections that each declare a 1 MiB body and send one byte every 0.1 s."""

    def __init__(self, port: int, path: str, key: str) -> None:
        self.port, self.path, self.key = port, path, key
        self.socks: list[socket.socket] = []  # still trickling
        self.opened: list[socket.socket] = []
        self.started: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drip, daemon=True)
        self.thread.start()

    def open(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT + 5)
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {self.key}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n"
            f"Content-Length: {DECLARED}\r\n\r\n{{"
        )
        sock.sendall(head.encode())
        self.socks.append(sock)
        self.opened.append(sock)
        self.started.append(time.monotonic())
        return sock

    def _drip(self) -> None:
        while not self.stop.wait(0.1):
            for sock in list(self.socks):
                try:
                    sock.send(b" ")
                except OSError:  # answered and closed by the server
                    self.socks.remove(sock)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        for sock in self.opened:
            sock.close()


@dataclass
class Answer:
    status: int
    raw: bytes
    closed: bool  # the server closed the connection after answering
    after: float  # seconds from opening the connection to the answer's first byte


def _answers(drip: Trickler, socks: list[socket.socket], wait: float) -> list[Answer]:
    """Each connection's whole response, read side by side within `wait` seconds."""
    data = {s: b"" for s in socks}
    first: dict[socket.socket, float] = {}
    closed: set[socket.socket] = set()
    opened = dict(zip(drip.opened, drip.started, strict=True))
    with selectors.DefaultSelector() as sel:
        for sock in socks:
            sel.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + wait
        while len(closed) < len(socks) and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    chunk = sock.recv(65536)
                except OSError:
                    chunk = b""
                first.setdefault(sock, time.monotonic())
                if chunk:
                    data[sock] += chunk
                else:
                    closed.add(sock)
                    sel.unregister(sock)
    return [
        Answer(
            int(data[s].split(b" ")[1]) if data[s] else 0,
            data[s],
            s in closed,
            first.get(s, float("inf")) - opened[s],
        )
        for s in socks
    ]


def _code(raw: bytes) -> str:
    """The error code of a response in the service's error shape."""
    return str(json.loads(raw.split(b"\r\n\r\n", 1)[1])["error"]["code"])


@contextmanager
def _served(db: str) -> Iterator[tuple[int, str]]:
    store = open_store(db)
    key = keyring.create_key(store.keys, tenant="acme", actor="alice")[1]
    store.close()
    app = create_app(
        db,
        embedder=HashEmbedder(),
        worker=False,
        body_timeout=TIMEOUT,
        max_pending_bodies=3,
    )
    port = free_port()
    srv = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="none")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield port, key
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


def test_slow_bodies_time_out_and_the_excess_is_refused_at_once(tmp_path: Path) -> None:
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I like tea"}
    with _served(str(tmp_path / "bodies.db")) as (port, key):
        url = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {key}"}
        drip = Trickler(port, "/v1/events", key)
        try:
            with httpx.Client(base_url=url, headers=auth, timeout=10) as h:
                assert h.get("/healthz").status_code == 200
                # the key authenticates once: its bodies may take any of the slots
                assert h.get("/v1/events", params={"actor_id": "alice"}).status_code == 200
                socks = [drip.open(), drip.open()]
                time.sleep(0.3)  # two of the three slots are taken
                assert h.post("/v1/events", json=event).status_code == 201  # the third slot
                socks.append(drip.open())
                time.sleep(0.3)
                socks.append(drip.open())  # a fourth body while three are being received
                # refused at once, not after the timeout: its answer is there within a
                # second of opening (read later, with the others, by _answers)
                ready, _, _ = select.select([socks[-1]], [], [], 1.0)
                assert ready, "the fourth body was not answered at once"
                time.sleep(0.3)
                # meanwhile, requests without a body take no slot and are served
                assert h.get("/healthz").status_code == 200
                assert h.get("/v1/events", params={"actor_id": "alice"}).status_code == 200
                assert time.monotonic() - drip.started[0] < TIMEOUT
                answers = _answers(drip, socks, TIMEOUT + 5)
                assert sorted(a.status for a in answers) == [408, 408, 408, 503], answers
                for a in answers:
                    assert a.closed, a
                    if a.status == 503:  # answered at once: checked above
                        assert b"retry-after: 1" in a.raw.lower() and _code(a.raw) == "busy"
                    else:
                        assert _code(a.raw) == "request_timeout"
                        assert TIMEOUT - 0.1 < a.after < TIMEOUT + 3, a
                # the slots are free again, and only the normal event was stored
                assert h.post("/v1/events", json=event).status_code == 201
                listed = h.get("/v1/events", params={"actor_id": "alice"}).json()
                assert [e["text"] for e in listed["events"]] == ["I like tea", "I like tea"]
        finally:
            drip.close()


def test_strangers_cannot_take_the_slots_of_keys_that_authenticated(tmp_path: Path) -> None:
    """No key, a wrong key, or a key not yet seen: one slot of three in all
    (`stranger_slots`), so slow strangers cannot have a known key's writes refused."""
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I like tea"}
    with _served(str(tmp_path / "strangers.db")) as (port, key):
        url = f"http://127.0.0.1:{port}"
        strangers = Trickler(port, "/v1/events", "not-a-key")
        unseen = Trickler(port, "/v1/events", key)  # valid, but has not authenticated yet
        try:
            socks = [strangers.open()]
            time.sleep(0.3)  # the strangers' one slot is taken
            late = [strangers.open(), unseen.open()]
            refused = _answers(strangers, late[:1], 2) + _answers(unseen, late[1:], 2)
            assert [(a.status, _code(a.raw)) for a in refused] == [(503, "busy")] * 2
            assert all(a.after < 1.0 for a in refused), refused  # at once, not at the timeout
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10
            ) as h:
                assert h.get("/v1/events", params={"actor_id": "alice"}).status_code == 200
                # the key is known now: its bodies take the other slots, strangers or not
                known = Trickler(port, "/v1/events", key)
                try:
                    socks.append(known.open())
                    time.sleep(0.3)
                    assert h.post("/v1/events", json=event).status_code == 201
                    assert time.monotonic() - strangers.started[0] < TIMEOUT
                finally:
                    known.close()
            answers = _answers(strangers, socks[:1], TIMEOUT + 5)
            assert [a.status for a in answers] == [408], answers
        finally:
            strangers.close()
            unseen.close()


def test_the_mcp_http_transport_bounds_bodies_too(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    key = mcp_keys(db)["alice"]
    port = free_port()
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", db, "mcp", "--key", key, "--lexical"]
    cmd += ["--transport", "http", "--port", str(port)]
    cmd += ["--body-timeout", str(TIMEOUT), "--max-pending-bodies", "1"]
    with open(tmp_path / "server.log", "w") as errlog:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=errlog, stderr=errlog)
    drip = Trickler(port, "/mcp", key)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.05)
        socks = [drip.open()]
        time.sleep(0.3)
        socks.append(drip.open())
        answers = sorted(_answers(drip, socks, TIMEOUT + 5), key=lambda a: a.status)
        assert [a.status for a in answers] == [408, 503], answers
        assert answers[0].closed and TIMEOUT - 0.1 < answers[0].after < TIMEOUT + 3
        assert answers[1].after < 1.0
    finally:
        drip.close()
        stop(proc)
    assert left_running(db) == []


def test_serve_passes_its_connection_limits_to_uvicorn(tmp_path: Path) -> None:
    db = str(tmp_path / "serve.db")
    port = free_port()
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", db, "serve", "--port", str(port)]
    cmd += ["--lexical", "--no-worker", "--max-connections", "3", "--keep-alive", "1"]
    url = f"http://127.0.0.1:{port}/healthz"
    with open(tmp_path / "serve.log", "w") as errlog:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=errlog, stderr=errlog)
    idle: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                assert httpx.get(url, timeout=2).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        # a kept-alive connection is closed once idle for --keep-alive seconds
        kept = socket.create_connection(("127.0.0.1", port), timeout=5)
        idle.append(kept)
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = b""
        while not answer.endswith(b'{"status":"ok"}'):
            answer += kept.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        t0 = time.monotonic()
        assert kept.recv(65536) == b""  # closed by the server
        assert 0.5 < time.monotonic() - t0 < 4
        # beyond --max-connections open connections, a request is 503
        for _ in range(3):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.3)
        assert httpx.get(url, timeout=5).status_code == 503
        for sock in idle:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(url, timeout=5).status_code == 200
    finally:
        for sock in idle:
            sock.close()
        stop(proc)
