"""`remem mcp` through the MCP SDK's own client, over stdio and streamable HTTP.

The database is the `mcp_db` fixture: each case runs on a SQLite file and on a
PostgreSQL database.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from remem.memory.memory import Memory, open_store
from tests.support import pg
from tests.support.backends import BACKENDS
from tests.support.clock import Clock
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error
from tests.support.processes import child_env, free_port, left_running, stop

TOOLS = {"remember", "recall", "list_memories", "forget", "get_fact", "get_profile"}


@pytest.fixture(params=BACKENDS)
def mcp_db(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The database `remem mcp` runs on: a new SQLite file, then a fresh PostgreSQL
    database's URL (the session's server, see `tests.support.pg`), where no model opens."""
    if request.param == "sqlite":
        yield str(tmp_path / "mcp.db")
        return
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    with pg.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
        yield pg.as_url(dsn)


def test_stdio_tools_scope_and_forget(tmp_path: Path, mcp_db: str) -> None:
    db = mcp_db
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        listed = await s.list_tools()
        assert TOOLS <= {t.name for t in listed.tools}
        remember = next(t for t in listed.tools if t.name == "remember")
        assert remember.inputSchema["properties"]["text"]["maxLength"] == 4000

        rec = tool_data(await s.call_tool("remember", {"text": "I am allergic to peanuts"}))
        assert rec["actor"] == "alice" and rec["id"].startswith("rec")

        packet = tool_data(await s.call_tool("recall", {"query": "peanuts allergy"}))
        assert rec["id"] in [r["id"] for r in packet["records"]]
        assert any("peanuts" in r["text"] for r in packet["records"])

        # outside the key's scope: an error result, never data
        bob = tool_error(await s.call_tool("recall", {"query": "peanuts", "actor_id": "bob"}))
        assert "forbidden" in bob and "bob" in bob
        assert "peanuts" not in bob.replace("'peanuts'", "")
        tool_error(await s.call_tool("remember", {"text": "x", "actor_id": "bob"}))
        tool_error(await s.call_tool("list_memories", {"actor_id": "bob"}))
        # subject erasure is for admin keys only
        assert "admin" in tool_error(await s.call_tool("forget", {"actor_id": "alice"}))
        # inputs are validated before any work
        assert tool_error(await s.call_tool("remember", {"text": ""}))
        assert tool_error(await s.call_tool("recall", {"query": "x", "top_k": 0}))
        assert "exactly one" in tool_error(await s.call_tool("forget", {}))

        listed_recs = tool_data(await s.call_tool("list_memories", {}))
        assert [r["id"] for r in listed_recs["records"]] == [rec["id"]]

        gone = tool_data(await s.call_tool("forget", {"record_id": rec["id"]}))
        assert gone["verified"] is True
        assert tool_data(await s.call_tool("list_memories", {}))["records"] == []
        again = await s.call_tool("recall", {"query": "peanuts allergy", "include_events": False})
        assert rec["id"] not in [r["id"] for r in tool_data(again)["records"]]
        assert "not_found" in tool_error(await s.call_tool("forget", {"record_id": rec["id"]}))

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
    assert left_running(db) == []
    # the erasure names its actor and who asked, and the audit log has it (no content)
    store = open_store(db)
    try:
        job = store.erasure.deletions("acme", 1)[0]
        assert job["actor"] == "alice" and job["requester"] == "mcp: agent key for actor alice"
        assert job["requested_by"] is not None and job["reason"] is None
        (row,) = store.audit.audit_log("acme", action="erase")
        assert (row["actor"], row["target"], row["detail"]["surface"]) == (
            "alice", str(job["id"]), "mcp"
        )  # fmt: skip
        assert "peanut" not in json.dumps(store.audit.audit_log("acme")).lower()
    finally:
        store.close()


def test_mcp_and_http_refuse_out_of_scope_calls_in_the_same_words(
    tmp_path: Path, mcp_db: str
) -> None:
    # one scope module decides for both faces: the same key, the same refusal
    from fastapi.testclient import TestClient

    from remem.service.http import create_app

    db = mcp_db
    keys = mcp_keys(db)
    calls = {"admin": {"query": "x"}, "alice": {"query": "x", "actor_id": "bob"}}
    said: dict[str, str] = {}

    def over_mcp(name: str) -> Callable[[ClientSession], Awaitable[None]]:
        async def body(s: ClientSession) -> None:
            said[name] = tool_error(await s.call_tool("recall", calls[name]))

        return body

    with open(tmp_path / "server.log", "w") as errlog:
        for name in calls:
            session_run(db, keys[name], errlog, over_mcp(name))
    with TestClient(create_app(db, worker=False)) as client:
        for name, args in calls.items():
            r = client.post(
                "/v1/memories/retrieve",
                json=args,
                headers={"Authorization": f"Bearer {keys[name]}"},
            )
            error = r.json()["error"]
            # the SDK puts "Error executing tool recall: " before a tool's error
            assert said[name].endswith(f": {error['code']}: {error['message']}"), name
    assert said["admin"].endswith(": actor_id is required with a key for the whole tenant")
    assert said["alice"].endswith("forbidden: this API key may not act on actor 'bob'")


def test_stdio_tenant_key_and_bad_key(tmp_path: Path, mcp_db: str) -> None:
    db = mcp_db
    keys = mcp_keys(db)

    async def as_admin(s: ClientSession) -> None:
        # a tenant-wide key must name the actor, and reaches every actor of its tenant
        assert "actor_id is required" in tool_error(await s.call_tool("recall", {"query": "x"}))
        carol = tool_data(
            await s.call_tool("remember", {"text": "Carol flies to Oslo", "actor_id": "carol"})
        )
        assert carol["tenant"] == "acme"
        erased = tool_data(await s.call_tool("forget", {"actor_id": "carol"}))
        assert erased["verified"] is True

    async def as_globex(s: ClientSession) -> None:
        # another tenant's key sees nothing of acme's
        out = tool_data(await s.call_tool("list_memories", {"actor_id": "alice"}))
        assert out["records"] == []

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["admin"], errlog, as_admin)
        session_run(db, keys["globex"], errlog, as_globex)

    bad = subprocess.run(
        [sys.executable, "-m", "remem.cli.main", "--db", db, "--json", "mcp", "--key", "rk_nope"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "unauthorized"
    assert left_running(db) == []


def test_stdio_facts_profile_and_pins(tmp_path: Path, mcp_db: str) -> None:
    db = mcp_db
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        args = {"text": "I live in Porto", "field": "home", "value": "Porto"}
        rec = tool_data(await s.call_tool("remember", args))
        got = tool_data(await s.call_tool("get_fact", {"field": "city"}))
        assert got["status"] == "found" and got["record_id"] == rec["id"]
        assert got["field"] == "home city" and got["value"] == "Porto"
        assert tool_data(await s.call_tool("get_fact", {"field": "diet"}))["status"] == "not_found"
        prof = tool_data(await s.call_tool("get_profile", {}))
        assert [(f["field"], f["record_id"]) for f in prof["facts"]] == [("home city", rec["id"])]
        packet = tool_data(await s.call_tool("recall", {"query": "anything", "pin": ["home"]}))
        assert [p["id"] for p in packet["pinned"]] == [rec["id"]]
        early = {"as_of": "2000-01-01T00:00:00Z"}
        assert tool_data(await s.call_tool("list_memories", early))["records"] == []
        assert (
            tool_data(await s.call_tool("get_fact", {"field": "home", **early}))["candidates"] == []
        )
        # scoped to the key, and bad input is a tool error with the reason
        for call in [("get_profile", {"actor_id": "bob"}),
                     ("get_fact", {"field": "home", "actor_id": "bob"})]:  # fmt: skip
            text = tool_error(await s.call_tool(*call))
            assert "forbidden" in text and "Porto" not in text
        assert "as_of" in tool_error(
            await s.call_tool("get_fact", {"field": "home", "as_of": "soon"})
        )
        assert tool_error(await s.call_tool("get_profile", {"budget_tokens": 0}))

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
    assert left_running(db) == []


def test_streamable_http_needs_the_key(tmp_path: Path, mcp_db: str) -> None:
    db = mcp_db
    keys = mcp_keys(db)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", db, "mcp", "--key", keys["alice"]]
    cmd += ["--transport", "http", "--port", str(port), "--lexical"]
    with open(tmp_path / "server.log", "w") as errlog:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=errlog, stderr=errlog)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                status = httpx.post(url, json={}, timeout=2).status_code
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.05)
        assert status == 401  # no key, no session
        for sent in (f"Bearer {keys['globex']}", f"Basic {keys['alice']}", keys["alice"]):
            assert httpx.post(url, json={}, headers={"Authorization": sent}).status_code == 401

        async def main() -> None:
            headers = {"Authorization": f"bearer {keys['alice']}"}  # the scheme in any case
            with anyio.fail_after(20):
                async with (
                    httpx.AsyncClient(headers=headers) as http,
                    streamable_http_client(url, http_client=http) as (read, write, _),
                    ClientSession(read, write) as s,
                ):
                    await s.initialize()
                    rec = tool_data(await s.call_tool("remember", {"text": "I live in Porto"}))
                    packet = tool_data(await s.call_tool("recall", {"query": "Porto"}))
                    assert rec["id"] in [r["id"] for r in packet["records"]]
                    tool_error(await s.call_tool("recall", {"query": "x", "actor_id": "bob"}))

        anyio.run(main)
    finally:
        stop(proc)
    assert left_running(db) == []


def test_stdio_recall_as_of_known_at_and_valid_at(tmp_path: Path, mcp_db: str) -> None:
    # what the agent believed at one time about another (issue 21, item 6): Porto was
    # written on 5 January; that Alice moved to Lyon on 1 February was written on 10 March
    db = mcp_db
    keys = mcp_keys(db)
    clock = Clock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    with Memory(open_store(db), tenant="acme", embedder=None, clock=clock) as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="I live in Porto.",
                      time=clock())  # fmt: skip
        mem.process()
        clock.now = datetime(2026, 3, 10, 9, tzinfo=UTC)
        mem.add_event(actor="alice", session="s2", role="user", text="I moved to Lyon.",
                      time="2026-02-01T10:00:00Z")  # fmt: skip
        mem.process()
    query = "Where did she live, or move?"

    async def as_alice(s: ClientSession) -> None:
        async def places(**when: str) -> list[str]:
            args = {"query": query, "include_events": False, **when}
            packet = tool_data(await s.call_tool("recall", args))
            return [it["text"].split()[-1] for it in packet["records"]]

        assert await places() == ["Lyon"]
        march_1 = "2026-03-01T00:00:00Z"
        assert await places(known_at=march_1, valid_at="2026-01-15T00:00:00Z") == ["Porto"]
        assert await places(as_of=march_1) == ["Porto"]  # Lyon held then, not yet known
        assert await places(known_at=march_1) == ["Porto"]
        assert await places(valid_at="2026-02-15T00:00:00Z") == ["Lyon"]
        for name, bad in [("known_at", "soon"), ("valid_at", "\x00")]:
            text = tool_error(await s.call_tool("recall", {"query": query, name: bad}))
            assert name in text and "internal error" not in text, text

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
    assert left_running(db) == []
