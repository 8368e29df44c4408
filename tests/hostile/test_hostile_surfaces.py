"""Hostile use of the surfaces beyond the core: Unicode forms, refused values, exports
killed midway, deep pages, documents, the console, thread state, jobs and keys.

Each test was written against a defect it found (on both backends where the store
is involved): a value typed decomposed was a second value; a field stored
decomposed was no longer found; a card number sent as a time was quoted back; an
export killed midway left the subject's data in a `.partial` file; a deep page of
events read the whole prefix (and a back-dated event made a page repeat one).
"""

from __future__ import annotations

import base64
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput, NotFound, RefusedContent
from remem.memory.memory import open_store
from remem.policy.scope import namespace_for
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.roles import Write
from remem.thread.api import begin_tool_call, checkpoint_list, checkpoint_save, tool_calls
from tests.support.cli import err, ok
from tests.support.mcp import mcp_keys, session_run, tool_error
from tests.support.store import files_bytes

CARD = "4111 1111 1111 1111"  # written with a time's characters: digits and spaces
PASSWORD = "password: Tr0ub4dor&3x"
NEEDLES = ("4111 1111", "Tr0ub4dor")
MALMO_NFC, MALMO_NFD = "Malm\u00f6", "Malmo\u0308"
EARLY = "0001-01-01T00:00:00+05:00"  # before year 1 in UTC
CAFE_NFC, CAFE_NFD = "caf\u00e9 order", "cafe\u0301 order"


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def _key(db: str, **kw: Any) -> str:
    store = open_store(db)
    try:
        return keyring.create_key(store.keys, tenant="acme", **kw)[1]
    finally:
        store.close()


# -- 1. one value, one text, one key, however its accents were typed ---------------------------


def test_a_value_typed_decomposed_restates_the_composed_one(mem: Memory) -> None:
    first = mem.remember(actor="alice", text=f"I live in {MALMO_NFC}", field="home city",
                         value=MALMO_NFC)  # fmt: skip
    again = mem.remember(actor="alice", text=f"I live in {MALMO_NFD}", field="home city",
                         value=MALMO_NFD)  # fmt: skip
    assert again.id == first.id  # said again, not a new value superseding the old
    (only,) = mem.records(actor="alice", all=True)
    assert (only.value, only.text) == (MALMO_NFC, f"I live in {MALMO_NFC}")
    fact = mem.fact(actor="alice", field="home city")
    assert fact.status == "found" and fact.found is not None and fact.found.value == MALMO_NFC


def test_every_stored_string_is_kept_in_nfc_on_every_write_path(mem: Memory, db: str) -> None:
    mem.add_event(actor="alice", session="s1", role="user", text=f"I moved to {MALMO_NFD}",
                  metadata={f"city {MALMO_NFD}": [MALMO_NFD, {"k": MALMO_NFD}]})  # fmt: skip
    (event,) = mem.events(actor="alice")
    assert event.text == f"I moved to {MALMO_NFC}"
    assert event.metadata == {f"city {MALMO_NFC}": [MALMO_NFC, {"k": MALMO_NFC}]}
    rec = mem.remember(actor="alice", text="I like tea")
    fixed = mem.update(rec.id, text=f"I like tea from {MALMO_NFD}")
    assert fixed.text == f"I like tea from {MALMO_NFC}"
    proposal = mem.propose_procedure(text=f"Greet guests from {MALMO_NFD} in Swedish")
    assert mem.get(proposal.id).text == f"Greet guests from {MALMO_NFC} in Swedish"
    mem.reject(proposal.id, reviewer="rev", reason=f"not for {MALMO_NFD}")
    assert mem.history(proposal.id)[-1].reason == f"not for {MALMO_NFC}"
    with pytest.raises(InvalidInput, match="differ only in how their accents"):
        mem.add_event(actor="alice", session="s1", role="user", text="hi",
                      metadata={MALMO_NFC: 1, MALMO_NFD: 2})  # fmt: skip
    assert len(mem.events(actor="alice")) == 1
    # HTTP goes the same way (batch items, events)
    key = _key(db, actor="bob")
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        items = [
            {"text": f"I live in {city}", "field": "home city", "value": city}
            for city in (MALMO_NFC, MALMO_NFD)
        ]
        for item in items:
            got = client.post("/v1/memories/batch-create", json={"records": [item]}, headers=auth)
            assert got.json()["succeeded"] == 1, got.text
        listed = client.get("/v1/memories", params={"all": "true"}, headers=auth).json()
        assert [r["value"] for r in listed["records"]] == [MALMO_NFC], listed


# -- 2. a field stored decomposed (before fields were put in NFC) is still found ----------------


def _stored_decomposed(mem: Memory, actor: str) -> str:
    """A record of `actor` whose field was stored in NFD, as remem stored fields before
    they were normalised: written through the store, below every write check."""
    model = mem.remember(actor="model", text="My usual coffee is a flat white",
                         field=CAFE_NFC, value="flat white")  # fmt: skip
    old = replace(model, id="rec_OLDNFD" + actor, actor=actor, field=CAFE_NFD,
                  namespace=namespace_for(mem.tenant, actor, model.kind))  # fmt: skip
    mem.store.records.apply(Write(tenant=mem.tenant, inserts=(old,)))
    return old.id


def test_a_field_stored_decomposed_is_found_and_superseded_by_its_nfc_name(mem: Memory) -> None:
    old_id = _stored_decomposed(mem, "carol")
    for spelling in (CAFE_NFC, CAFE_NFD):
        fact = mem.fact(actor="carol", field=spelling)
        assert fact.status == "found" and fact.found is not None, spelling
        assert (fact.found.record_id, fact.found.value) == (old_id, "flat white")
    assert CAFE_NFC in [f.field for f in mem.profile(actor="carol").facts]
    newer = mem.remember(actor="carol", text="My usual coffee is an espresso", field=CAFE_NFC,
                         value="espresso")  # fmt: skip
    assert mem.get(old_id).status.value == "invalid"  # superseded, not a conflict
    fact = mem.fact(actor="carol", field=CAFE_NFC)
    assert fact.status == "found" and fact.found is not None
    assert fact.found.record_id == newer.id


# -- 3. no refused value is quoted back, on any surface -----------------------------------------


def test_a_card_number_sent_as_a_time_is_never_quoted_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "times.db")
    keys = mcp_keys(db)
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        for call in (lambda: mem.recall(actor="alice", query="tea", as_of=CARD),
                     lambda: mem.remember(actor="alice", text="I like tea", valid_until=CARD),
                     lambda: mem.records(actor="alice", as_of="9999-12-31T23:59:59-23:59"),
                     lambda: mem.records(actor="alice", limit=4111111111111111),
                     lambda: mem.add_event(actor="alice", session="s", role="user", text="x",
                                           time=41111111111111)):  # fmt: skip
            with pytest.raises(InvalidInput) as caught:
                call()
            message = str(caught.value)
            assert not any(n in message for n in ("4111", "9999-12-31T23")), message

    async def as_alice(s: ClientSession) -> None:
        for name, args in (("recall", {"query": "tea", "as_of": CARD}),
                           ("recall", {"query": "tea", "valid_at": CARD}),
                           ("remember", {"text": "I like tea", "valid_until": CARD}),
                           ("list_memories", {"as_of": CARD}),
                           ("get_fact", {"field": "home city", "as_of": EARLY})):  # fmt: skip
            error = tool_error(await s.call_tool(name, args))
            assert "4111" not in error and "0001-01-01" not in error, error

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
    assert "4111" not in (tmp_path / "server.log").read_text()
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {keys['alice']}"}
        got = client.post("/v1/memories/retrieve", json={"query": "tea", "as_of": CARD},
                          headers=auth)  # fmt: skip
        assert got.status_code == 422 and "4111" not in got.text, got.text
    error = err(capsys, Path(db), "recall", "--actor", "alice", "--query", "tea", "--as-of", CARD)
    assert "4111" not in error["message"], error


# -- 4. an export killed midway leaves nothing of the subject behind ---------------------------


def _open_in(pid: int, folder: Path) -> list[tuple[str, int]]:
    """The files (by /proc link text) process `pid` holds open in `folder`, with sizes."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
            size = os.stat(fd).st_size
        except OSError:
            continue
        if target.startswith(str(folder) + "/") and ".db" not in target:
            found.append((target, size))
    return found


def test_an_export_killed_midway_leaves_no_file_holding_the_subject(tmp_path: Path) -> None:
    db = tmp_path / "export.db"
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        rows = [{"actor": "alice", "session": f"s{i % 7}", "role": "user",
                 "text": f"I was treated at the Elmwood clinic, visit {i} " + "x" * 400}
                for i in range(3000)]  # fmt: skip
        mem.import_events(rows)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "alice.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "remem", "--db", str(db), "--json", "export", "--actor", "alice",
           "--out", str(out)]  # fmt: skip
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, writing = time.monotonic() + 60, []
        while time.monotonic() < deadline and child.poll() is None:
            writing = [(t, n) for t, n in _open_in(child.pid, out_dir) if n > 0]
            if writing:
                break
            time.sleep(0.001)
        assert writing, "the export finished before it was seen writing"
        os.kill(child.pid, signal.SIGSTOP)  # mid-export, its data half written
        # nobody else can reach the half-written file: it has no name in the folder
        assert sorted(p.name for p in out_dir.iterdir()) == [], writing
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert list(out_dir.iterdir()) == []  # the crash left no copy of the subject
    # a leftover of an export killed by the earlier code (or where O_TMPFILE is missing)
    # is removed by the next export to that place
    for stale in (out_dir / "alice.jsonl.partial", out_dir / ".alice.jsonl.remem-export"):
        stale.write_text('{"text": "Elmwood"}\n')
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["alice.jsonl"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().count("\n") == 3000


# -- 5. a deep page of events is read by key ----------------------------------------------------


def test_http_event_pages_are_read_by_key_and_never_repeat_an_event(db: str) -> None:
    key = _key(db, actor="alice")
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        # pairs of events at one time: a page may end between them
        events = [{"actor_id": "alice", "session_id": "s", "role": "user", "text": f"turn {i}",
                   "time": (t0 + timedelta(minutes=i // 2)).isoformat(), "event_id": f"e{i}"}
                  for i in range(7)]  # fmt: skip
        assert client.post("/v1/events", json={"events": events}, headers=auth).status_code == 201
        seen: list[str] = []
        cursors: list[str] = []
        params: dict[str, Any] = {"actor_id": "alice", "limit": 3}
        for page_no in range(10):
            page = client.get("/v1/events", params=params, headers=auth).json()
            seen += [e["event_id"] for e in page["events"]]
            if page_no == 0:  # an event back-dated before everything arrives between pages
                early = {**events[0], "event_id": "early", "time": "2020-01-01T00:00:00Z"}
                client.post("/v1/events", json=early, headers=auth)
            if page["next_cursor"] is None:
                break
            cursors.append(base64.urlsafe_b64decode(page["next_cursor"] + "==").decode())
            params["cursor"] = page["next_cursor"]
        assert seen == [f"e{i}" for i in range(7)]  # each once, in order
        assert all(c.startswith("k:") for c in cursors), cursors  # the last key, no offset
        with_session = {"actor_id": "alice", "session_id": "s", "limit": 4}
        first = client.get("/v1/events", params=with_session, headers=auth).json()
        rest = client.get("/v1/events", params={**with_session, "cursor": first["next_cursor"]},
                          headers=auth).json()  # fmt: skip
        ids = [e["event_id"] for e in first["events"] + rest["events"]]
        assert ids == ["early", *(f"e{i}" for i in range(7))] and rest["next_cursor"] is None
        forged = base64.urlsafe_b64encode(b"k:2026-03-01|1").decode()
        got = client.get("/v1/events", params={"actor_id": "alice", "cursor": forged},
                         headers=auth)  # fmt: skip
        assert got.status_code == 400 and "cursor is not one" in got.text
    with Memory.open(db, tenant="acme", embedder=HashEmbedder()) as mem:  # the library: one read
        page, after = mem.events_page(actor="alice", limit=5)
        rest, end = mem.events_page(actor="alice", after=after, limit=5)
        assert [e.id for e in page + rest] == ["early", *(f"e{i}" for i in range(7))]
        assert end is None
        for bad in ("ab", (t0, -1), (t0.replace(tzinfo=None), 1), (t0, True)):
            with pytest.raises(InvalidInput, match="after must be the key"):
                mem.events_page(actor="alice", after=bad)  # type: ignore[arg-type]


# -- 6. a secret pasted where a name or an id goes is refused, not stored ---------------------

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a well-formed name, and a token


def test_a_name_or_client_key_holding_a_secret_is_refused_on_every_write(
    mem: Memory, db: str
) -> None:
    calls = [
        lambda: mem.remember(actor=TOKEN, text="I like tea"),
        lambda: mem.add_event(actor=TOKEN, session="s", role="user", text="hi"),
        lambda: mem.add_event(actor="alice", session=TOKEN, role="user", text="hi"),
        lambda: mem.add_event(actor="alice", session="s", role="user", text="hi", event_id=TOKEN),
        lambda: mem.import_events(
            [{"actor": "alice", "session": TOKEN, "role": "user", "text": "hi"}]
        ),
        lambda: mem.propose_procedure(text="Say hello", actor=TOKEN),
        lambda: checkpoint_save(mem, actor="alice", workflow=TOKEN, state={"step": "a"}),
        lambda: checkpoint_save(mem, actor=TOKEN, workflow="w", state={"step": "a"}),
        lambda: begin_tool_call(mem, actor="alice", workflow="w", idempotency_key=TOKEN),
        lambda: begin_tool_call(
            mem, actor="alice", workflow="w", idempotency_key="k1", tool_call_id=TOKEN
        ),
        lambda: mem.add_document(text="Team handbook", title="h", scope=f"actor:{TOKEN}"),
        lambda: mem.add_document(text="Team handbook", title="h", scope=f"namespace:{TOKEN}"),
    ]
    calls.append(lambda: keyring.create_key(mem.store.keys, tenant=mem.tenant, actor=TOKEN))
    for call in calls:
        with pytest.raises((RefusedContent, InvalidInput)) as caught:
            call()
        assert "a1B2c3D4" not in str(caught.value) and "access token" in str(caught.value)
    assert keyring.list_keys(mem.store.keys) == []
    with pytest.raises(InvalidInput, match="request_id contains an access token") as caught:
        mem.write_records([{"actor": "alice", "text": "I like tea", "request_id": TOKEN}])
    assert "a1B2c3D4" not in str(caught.value)
    assert mem.records(actor="alice", all=True) == [] and mem.events(actor="alice") == []
    assert checkpoint_list(mem, actor="alice") == [] and tool_calls(mem, actor="alice") == []
    assert mem.list_documents() == []
    if "://" not in db:
        assert b"a1B2c3D4" not in files_bytes(db)
    key = _key(db, role="admin")
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {key}"}
        event = {"actor_id": "alice", "session_id": TOKEN, "role": "user", "text": "hi"}
        got = client.post("/v1/events", json=event, headers=auth)
        assert got.status_code == 422 and "a1B2c3D4" not in got.text, got.text
        doc = {"text": "Team handbook", "title": "h", "scope": f"actor:{TOKEN}"}
        got = client.post("/v1/documents", json=doc, headers=auth)
        assert got.status_code == 422 and "a1B2c3D4" not in got.text, got.text
    assert mem.events(actor="alice") == [] and mem.list_documents() == []


def test_an_id_or_actor_holding_a_secret_is_not_quoted_back_by_not_found_or_forbidden(
    mem: Memory, db: str
) -> None:
    with pytest.raises(NotFound) as caught:
        mem.get(TOKEN)
    assert "a1B2c3D4" not in str(caught.value) and "access token" in str(caught.value)
    with pytest.raises(NotFound, match="no record 'rec_nothing'"):  # a plain id is still named
        mem.get("rec_nothing")
    alice, admin = _key(db, actor="alice"), _key(db, role="admin")
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        as_alice = {"Authorization": f"Bearer {alice}"}
        as_admin = {"Authorization": f"Bearer {admin}"}
        for method, path, auth in (("get", f"/v1/memories/{TOKEN}", as_alice),
                                   ("delete", f"/v1/memories/{TOKEN}", as_alice),
                                   ("get", f"/v1/documents/{TOKEN}", as_alice),
                                   ("get", f"/v1/actors/{TOKEN}/profile", as_alice),
                                   ("delete", f"/v1/keys/{TOKEN}", as_admin),
                                   ("get", f"/v1/jobs/list?status={TOKEN}", as_admin)):  # fmt: skip
            got = client.request(method, path, headers=auth)
            assert got.status_code in (403, 404, 422), (path, got.text)
            assert "a1B2c3D4" not in got.text, (path, got.text)


def test_recall_sizes_are_never_quoted_back_and_a_bool_is_no_size(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "sizes.db", embedder=HashEmbedder()) as mem:
        mem.remember(actor="alice", text="I like green tea")
        for kw in ({"k": 4111111111111111}, {"k": True}, {"budget": 4111111111111111},
                   {"budget": False}, {"k": "4111 1111"}):  # fmt: skip
            with pytest.raises(InvalidInput, match="must be an integer") as caught:
                mem.recall(actor="alice", query="tea", **kw)
            assert "4111" not in str(caught.value), caught.value
        with pytest.raises(InvalidInput, match="must be an integer") as caught:
            mem.profile(actor="alice", budget=4111111111111111)
        assert "4111" not in str(caught.value)
        assert len(mem.recall(actor="alice", query="tea", k=1).records) == 1


# -- 7. JSON nested past the parser's depth is a clear CLI error, not a traceback -------------


def test_cli_json_nested_too_deep_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "deep.db"
    deep = "[" * 100_000 + "]" * 100_000
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"actor": "alice", "text": "ok"}\n' + deep + "\n")
    for args in (["event", "import", str(lines)], ["records", "import", str(lines)]):
        error = err(capsys, db, *args)
        assert error["code"] == "invalid_input" and "line 2" in error["message"], error
    base = ["--actor", "alice", "--workflow", "w"]
    error = err(capsys, db, "checkpoint", "save", *base, "--state", deep)
    assert error["code"] == "invalid_input" and "too deep" in error["message"], error
    error = err(capsys, db, "toolcall", "begin", *base, "--key", "k1", "--request", deep)
    assert error["code"] == "invalid_input" and "too deep" in error["message"], error
    assert ok(capsys, db, "records", "list", "--actor", "alice")["records"] == []
