"""`remem mcp` answers a message the MCP SDK cannot read, on stdio and at /mcp.

Written against a defect: over stdio a line nested 100,000 deep, malformed, with a
lone surrogate escape or over the size bound got no response for its id (the SDK
sent a log notification quoting the line's start, and logged it to stderr), so the
client waited for its own timeout; over HTTP a body nested too deep was a 500.
Now each gets a JSON-RPC 2.0 error with the request's id where it can be recovered
(else null), and neither the answer nor stderr quotes the message. So do a call whose
id is not a string or an integer, or that has none (the SDK read it as a notification
and logged it whole), and one whose arguments are not an object (the SDK answered
-32602 and logged the start of the value).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.mcp import mcp_keys
from tests.support.processes import child_env, free_port, stop

SECRET = "sk-proj-Zq8vT2mN4xK7pL9wR3yH6jB1cF5dG0sA"
DEEP = 100_000


def _request(rid: int, method: str, params: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body)


def _call(rid: Any, arguments: Any) -> str:
    """A tools/call of recall with this id (None: none) and these arguments."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/call"}
    if rid is not None:
        body["id"] = rid
    body["params"] = {"name": "recall", "arguments": arguments}
    return json.dumps(body)


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "0"},
}

BAD_LINES = [  # (line, the id and code of the answer)
    (
        '{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"x":'
        + "[" * DEEP
        + "]" * DEEP
        + "}}",
        11,
        -32700,
    ),
    (
        '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"remember",'
        f'"arguments":{{"text":"my key is {SECRET}"}}',
        12,
        -32700,
    ),
    (
        '{"jsonrpc":"2.0","id":"thirteen","method":"tools/list","params":{"x":"\\ud800"}}',
        "thirteen",
        -32700,
    ),
    (  # over --max-body (1 MiB)
        '{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"x":"' + "a" * 1_100_000 + '"}}',
        14,
        -32600,
    ),
    ("[" * DEEP + SECRET, None, -32700),
    ('{"id": 15, "hello": "world"}', 15, -32600),
    # read by the SDK as a notification of an unknown method, logged with its parameters
    (_call(1.5, {"query": SECRET}), None, -32600),
    (_call(True, {"query": SECRET}), None, -32600),
    (_call({"x": 1}, {"query": SECRET}), None, -32600),
    (_call(None, {"query": SECRET}), None, -32600),
    # answered -32602 by the SDK, which logged the validation error with the value's start
    (_call(16, [SECRET]), 16, -32602),
]


class _Server:
    """`remem mcp` over stdio in a child process, read line by line."""

    def __init__(self, db: str, key: str, stderr: Path) -> None:
        cmd = [sys.executable, "-m", "remem.cli.main", "--db", db, "mcp", "--key", key, "--lexical"]
        self.err = stderr.open("w")
        self.proc = subprocess.Popen(
            cmd, env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def next(self) -> dict[str, Any]:
        try:
            got: dict[str, Any] = json.loads(self.lines.get(timeout=20))
        except queue.Empty:
            pytest.fail("no answer from remem mcp within 20 s")
        return got

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("remem mcp did not stop when stdin closed")
        finally:
            self.pump.join(20)
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self.err.close()


def test_stdio_answers_every_line_it_cannot_read_and_never_quotes_it(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    server = _Server(db, mcp_keys(db)["alice"], tmp_path / "stderr.txt")
    try:
        server.send(_request(1, "initialize", INIT))
        assert server.next()["id"] == 1
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for line, rid, code in BAD_LINES:
            server.send(line)
            got = server.next()
            assert (got.get("id", "absent"), got.get("error", {}).get("code")) == (rid, code), got
            assert SECRET not in json.dumps(got) and "ud800" not in json.dumps(got)
        server.send(_request(20, "tools/list"))
        after = server.next()
        assert after["id"] == 20 and "remember" in [t["name"] for t in after["result"]["tools"]]
        # bytes that are not UTF-8: refused as HTTP refuses them, never stored as U+FFFD
        assert server.proc.stdin is not None
        server.proc.stdin.write(_call(22, {"query": "caf"}).encode().replace(b"caf", b"caf\xe9"))
        server.proc.stdin.write(b"\n")
        server.proc.stdin.flush()
        bad = server.next()
        assert (bad["id"], bad["error"]["code"]) == (22, -32700), bad
        # a raw CR is white space inside a message, not the end of a line
        server.send('{"jsonrpc": "2.0",\r "id": 21,\r "method": "tools/list"}')
        crossed = server.next()
        assert crossed["id"] == 21 and "result" in crossed, crossed
    finally:
        status = server.close()
    assert status == 0
    assert SECRET not in (tmp_path / "stderr.txt").read_text()


def test_http_answers_a_body_it_cannot_read_400_with_the_json_rpc_error(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    key = mcp_keys(db)["alice"]
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", db, "mcp", "--key", key, "--lexical"]
    cmd += ["--transport", "http", "--port", str(port)]
    log = tmp_path / "server.log"
    with log.open("w") as errlog:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=errlog, stderr=errlog)
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                httpx.post(url, json={}, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.05)
        for line, rid, code in BAD_LINES[:3] + BAD_LINES[4:]:
            reply = httpx.post(url, content=line.encode(), headers=headers, timeout=20)
            assert reply.status_code == 400, (reply.status_code, reply.text[:200])
            got = reply.json()
            assert (got["id"], got["error"]["code"]) == (rid, code), got
            assert SECRET not in reply.text
    finally:
        stop(proc)
    assert SECRET not in log.read_text()
