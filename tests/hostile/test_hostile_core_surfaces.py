"""Hostile use of the core surfaces (records, forget, export, names), on both backends.

Each test here was written against a defect it found: a forgotten record's
history kept the reviewer's reason (free text that may quote what was erased);
a correction could end in the past, so the fact fell out of recall behind an
inverted validity; an error echoed a secret sent where a name goes; a
procedure's name was stored unscreened; `remem export --out` into a missing
folder was a traceback, and an export was written readable by every user.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
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
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.thread.api import (
    begin_tool_call,
    checkpoint_list,
    checkpoint_load,
    checkpoint_save,
    tool_calls,
)
from tests.support.cli import err, ok
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error
from tests.support.store import files_bytes

PASSWORD = "password: Tr0ub4dor&3x"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
NEEDLES = ("Tr0ub4dor", "a1B2c3D4e5F6")


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


# -- forget takes the reasons of a record's history with it ---------------------------------


def test_forgetting_an_actor_erases_the_reasons_in_its_records_history(
    mem: Memory, db: str
) -> None:
    proposal = mem.propose_procedure(text="Greet the user by first name", actor="alice")
    mem.reject(proposal.id, reviewer="rev", reason="it names the Elmwood Oncology clinic")
    assert "Elmwood" in mem.history(proposal.id)[-1].reason  # kept while the record lives
    report = mem.forget(actor="alice")
    assert report.verified
    history = mem.history(proposal.id)
    assert [h.action for h in history][:2] == ["PROPOSE", "REJECT"]  # ids and actions stay
    assert all("Elmwood" not in h.reason and h.text is None for h in history)
    if "://" not in db:  # SQLite: not in the file either
        assert b"Elmwood" not in files_bytes(db)


def test_forgetting_a_record_erases_its_reasons_and_is_verified(mem: Memory, db: str) -> None:
    proposal = mem.propose_procedure(text="Close every ticket with a summary", actor="bob")
    mem.reject(proposal.id, reviewer="rev", reason="bob's diagnosis Marfan does not belong here")
    report = mem.forget(record_id=proposal.id)
    assert report.verified and report.remaining.get("history_text") == 0
    assert all("Marfan" not in h.reason for h in mem.history(proposal.id))
    assert [h.action for h in mem.history(proposal.id)][-1] == "DELETE"
    if "://" not in db:
        assert b"Marfan" not in files_bytes(db)


# -- a correction cannot end before it begins -----------------------------------------------


def test_a_correction_ending_in_the_past_is_refused_and_changes_nothing(mem: Memory) -> None:
    rec = mem.remember(actor="alice", text="I live in Oslo", field="home", value="Oslo")
    for past in ("2001-01-01T00:00:00Z", "0001-01-01T05:00:00+05:00"):
        with pytest.raises(InvalidInput, match="valid_until must be in the future"):
            mem.update(rec.id, text="I live in Bergen", valid_until=past)
    change = {"op": "update", "record_id": rec.id, "text": "I live in Bergen"}
    results = mem.write_records([{**change, "valid_until": "2001-01-01"}])
    assert results[0]["status"] == "error" and results[0]["error"]["code"] == "invalid_input"
    (only,) = mem.records(actor="alice", all=True)  # the old one, untouched and active
    assert (only.id, only.status.value, only.valid_until) == (rec.id, "active", None)
    found = mem.fact(actor="alice", field="home").found
    assert found is not None and found.value == "Oslo"


# -- a secret sent where a name goes ----------------------------------------------------------


def test_library_errors_never_echo_a_secret_sent_as_a_name(mem: Memory) -> None:
    proposal = mem.propose_procedure(text="Say goodbye politely", actor="alice")
    calls = [
        lambda: mem.approve(proposal.id, reviewer=PASSWORD),
        lambda: mem.remember(actor=PASSWORD, text="I like tea"),
        lambda: mem.add_event(actor="alice", session=PASSWORD, role="user", text="hi"),
        lambda: mem.add_event(actor="alice", session="s", role=PASSWORD, text="hi"),  # type: ignore[arg-type]
        lambda: mem.remember(actor="alice", text="I like tea", sensitivity=PASSWORD),
        lambda: mem.remember(actor="alice", text="I like tea", namespace=f"/elsewhere/{TOKEN}"),
        lambda: mem.recall(actor=f"{TOKEN} x", query="tea"),
        lambda: mem.recall(actor="alice", query="tea", as_of=PASSWORD),
        lambda: mem.remember(actor="alice", text="I like tea", valid_until=TOKEN),
    ]
    for call in calls:
        with pytest.raises(InvalidInput) as caught:
            call()
        message = str(caught.value)
        assert not any(n in message for n in NEEDLES), message
        assert "not shown)" in message
    with pytest.raises(InvalidInput, match=r"\(not shown\); nothing was written") as caught:
        mem.write_records([{"actor": "alice", "text": "I like tea", "request_id": PASSWORD}])
    assert not any(n in str(caught.value) for n in NEEDLES)
    assert mem.records(actor="alice") == []


def test_a_procedure_name_holding_a_secret_is_refused(mem: Memory) -> None:
    with pytest.raises(RefusedContent, match="the procedure name contains") as caught:
        mem.propose_procedure(text="Rotate the deploy key weekly", name=f"deploy-{TOKEN}")
    assert "a1B2c3D4e5F6" not in str(caught.value)
    assert mem.procedures(all=True) == []


def test_http_and_cli_errors_never_echo_a_secret_sent_as_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "names.db")
    store = open_store(db)
    _, admin = keyring.create_key(store.keys, tenant="acme", role="admin")
    store.close()
    with TestClient(create_app(db, embedder=HashEmbedder())) as client:
        auth = {"Authorization": f"Bearer {admin}"}
        event = {"session_id": "s", "role": "user", "text": "hi"}
        bodies: list[tuple[str, dict[str, Any]]] = [
            ("/v1/events", {**event, "actor_id": TOKEN + "!"}),
            ("/v1/events", {**event, "actor_id": "alice", "session_id": PASSWORD}),
            ("/v1/memories/retrieve", {"actor_id": PASSWORD, "query": "tea"}),
            ("/v1/memories/batch-create", {"records": [{"actor_id": "alice", "text": "tea",
                                                        "request_id": PASSWORD}]}),
        ]  # fmt: skip
        for path, body in bodies:
            got = client.post(path, json=body, headers=auth)
            assert got.status_code == 422 or got.json()["results"][0]["status"] == 422, got.text
            assert not any(n in got.text for n in NEEDLES), got.text
        got = client.get("/v1/memories", params={"actor_id": PASSWORD}, headers=auth)
        assert got.status_code == 422 and not any(n in got.text for n in NEEDLES)
        asked = {"actor_id": "alice", "query": "tea", "as_of": PASSWORD}
        got = client.post("/v1/memories/retrieve", json=asked, headers=auth)
        assert got.status_code == 422 and not any(n in got.text for n in NEEDLES), got.text
    for args in (["recall", "--actor", PASSWORD, "--query", "tea"],
                 ["remember", "--actor", "alice", "--text", "tea", "--sensitivity", PASSWORD],
                 ["records", "approve", "rec_x", "--by", PASSWORD]):  # fmt: skip
        error = err(capsys, Path(db), *args)
        assert not any(n in error["message"] for n in NEEDLES), error


# -- export: a clear error, no leftovers, private -------------------------------------------


def test_cli_export_to_a_missing_folder_is_a_clear_error_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "export.db"
    ok(capsys, db, "remember", "--actor", "alice", "--text", "I live in Oslo")
    missing = tmp_path / "no" / "such" / "out.jsonl"
    error = err(capsys, db, "export", "--actor", "alice", "--out", str(missing))
    assert error["code"] == "invalid_input" and "cannot write the export" in error["message"]
    assert not missing.parent.exists()
    out = tmp_path / "out.jsonl"
    assert ok(capsys, db, "export", "--actor", "alice", "--out", str(out))["records"] == 1
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # a subject's data: its owner's only
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("out")] == ["out.jsonl"]


# -- a forget killed midway is still a job, and the next forget finishes it -----------------

FORGETTER = """
import sys
from remem import Memory
from remem.embed import HashEmbedder
with Memory.open(sys.argv[1], embedder=HashEmbedder()) as mem:
    print("ready", flush=True)
    mem.forget(actor="alice")
    print("finished", flush=True)
"""


def _alice_rows(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM records WHERE actor = 'alice'").fetchone()[0])


def test_a_forget_killed_after_its_erasure_is_listed_and_finished_by_the_next(
    tmp_path: Path,
) -> None:
    db = tmp_path / "killed.db"
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        for i in range(20):
            mem.remember(actor="alice", text=f"I was treated at the Elmwood clinic, visit {i}")
        mem.recall(actor="alice", query="Elmwood clinic")  # its vector files are written
        other = mem.remember(actor="bob", text="I like green tea")
    # a reader holding a snapshot makes the erasure's WAL checkpoint wait (3 s): the
    # forgetting process is killed there, after its erasure committed, before it finished
    reader = sqlite3.connect(db)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM records").fetchall()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", FORGETTER, str(db)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while _alice_rows(db) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _alice_rows(db) == 0, "the erasure did not commit"
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.stdout.read() == ""  # it never finished
    finally:
        child.kill()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
        reader.rollback()
        reader.close()
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        (job,) = mem.deletions()  # the erasure left its job behind, not finished
        assert (job["target"], job["key"], job["status"]) == ("actor", "alice", "running")
        mem.add_event(actor="alice", session="s2", role="user", text="I moved to Porto")
    later = datetime.now(UTC) + timedelta(hours=1)  # the job is long overdue then
    with Memory.open(db, embedder=HashEmbedder(), clock=lambda: later) as mem:
        assert mem.forget(record_id=other.id).verified
        jobs = {j["key"]: j for j in mem.deletions()}
        assert jobs["alice"]["status"] == "done" and jobs["alice"]["result"]["verified"]
        assert jobs[other.id]["status"] == "done"
        # the erasure was not run again: the fresh start's event stays
        assert [e.text for e in mem.events(actor="alice")] == ["I moved to Porto"]
        assert mem.records(actor="alice", all=True) == []
    data = b"".join(p.read_bytes() for p in tmp_path.rglob("killed.db*") if p.is_file())
    assert b"Elmwood" not in data  # the file, its WAL and the vector files


def test_a_deletion_job_left_running_before_its_erasure_is_carried_out(mem: Memory) -> None:
    carol = mem.remember(actor="carol", text="I was treated at the Elmwood clinic")
    bob = mem.remember(actor="bob", text="I like green tea")
    # a process that logged the job and died before its erasure committed
    started = datetime.now(UTC) - timedelta(hours=1)
    job_id = mem.store.erasure.start_deletion(mem.tenant, "actor", "carol", started)
    assert [j["status"] for j in mem.deletions()] == ["running"]
    assert mem.forget(record_id=bob.id).verified
    jobs = {j["id"]: j for j in mem.deletions()}
    assert jobs[job_id]["status"] == "done" and jobs[job_id]["result"]["verified"]
    assert mem.records(actor="carol", all=True) == []
    with pytest.raises(NotFound):
        mem.get(carol.id)


# -- one field, however its accents were typed -------------------------------------------

CAFE_NFC, CAFE_NFD = "caf\u00e9 order", "cafe\u0301 order"


def test_a_field_in_nfc_and_nfd_is_one_field(mem: Memory) -> None:
    first = mem.remember(actor="alice", text="My usual coffee is a flat white", field=CAFE_NFC,
                         value="flat white")  # fmt: skip
    found = mem.fact(actor="alice", field=CAFE_NFD).found
    assert found is not None and (found.value, found.record_id) == ("flat white", first.id)
    newer = mem.remember(actor="alice", text="My usual coffee is an espresso", field=CAFE_NFD,
                         value="espresso")  # fmt: skip
    active = [r for r in mem.records(actor="alice") if r.field is not None]
    assert [(r.id, r.field) for r in active] == [(newer.id, CAFE_NFC)]  # superseded, not split
    for spelling in (CAFE_NFC, CAFE_NFD):
        fact = mem.fact(actor="alice", field=spelling)
        assert fact.status == "found" and fact.found is not None
        assert fact.found.value == "espresso"


def test_http_reads_a_field_sent_decomposed(tmp_path: Path) -> None:
    db = str(tmp_path / "fields.db")
    store = open_store(db)
    _, key = keyring.create_key(store.keys, tenant="acme", actor="alice")
    store.close()
    with TestClient(create_app(db, embedder=HashEmbedder())) as client:
        auth = {"Authorization": f"Bearer {key}"}
        item = {"text": "My usual coffee is a flat white", "field": CAFE_NFC, "value": "flat white"}
        made = client.post("/v1/memories/batch-create", json={"records": [item]}, headers=auth)
        assert made.json()["succeeded"] == 1
        got = client.get(f"/v1/actors/alice/facts/{CAFE_NFD}", headers=auth)
        assert got.status_code == 200 and got.json()["status"] == "found", got.text
        assert got.json()["value"] == "flat white"


# -- the library's limits and batch sizes --------------------------------------------------

BAD_COUNTS: list[Any] = [-1, 0, 2.5, True, 10**30, "10", None]


@pytest.mark.parametrize("bad", BAD_COUNTS, ids=[repr(b) for b in BAD_COUNTS])
def test_library_limits_and_batches_must_be_whole_numbers_in_range(mem: Memory, bad: Any) -> None:
    mem.remember(actor="alice", text="I like green tea")
    mem.add_event(actor="alice", session="s1", role="user", text="I live in Oslo")
    row = {"actor": "alice", "session": "s1", "role": "user", "text": "I cycle to work"}
    calls = [
        lambda: mem.records(actor="alice", limit=bad),
        lambda: mem.events(actor="alice", limit=bad),
        lambda: mem.jobs(limit=bad),
        lambda: mem.deletions(bad),
        lambda: mem.process(batch=bad),
        lambda: mem.import_events([row], batch=bad),
    ]
    if bad is not None:
        calls.append(lambda: mem.process(limit=bad))
    for call in calls:
        with pytest.raises(InvalidInput, match="must be a whole number from 1 to"):
            call()
    assert [e.text for e in mem.events(actor="alice")] == ["I live in Oslo"]  # nothing imported
    assert [j.status for j in mem.jobs()] == ["pending"]  # nothing processed
    assert len(mem.records(actor="alice", limit=1)) == 1


def test_http_events_cursor_past_any_page_is_a_clear_400(tmp_path: Path) -> None:
    db = str(tmp_path / "cursor.db")
    store = open_store(db)
    _, key = keyring.create_key(store.keys, tenant="acme", actor="alice")
    store.close()
    with TestClient(create_app(db, embedder=HashEmbedder())) as client:
        auth = {"Authorization": f"Bearer {key}"}
        far = base64.urlsafe_b64encode(b"o:99999999999999").decode().rstrip("=")
        got = client.get("/v1/events", params={"actor_id": "alice", "cursor": far}, headers=auth)
        assert got.status_code == 400 and "cursor is not one" in got.json()["error"]["message"]


# -- a self-managed batch item names an actor: it may not change another's record -----------


def test_a_batch_item_for_one_actor_cannot_change_anothers_record(
    mem: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str], db: str
) -> None:
    bob = mem.remember(actor="bob", text="Bob likes coffee")
    results = mem.write_records(
        [
            {"op": "update", "actor": "alice", "record_id": bob.id, "text": "Bob likes tea",
             "request_id": "r1"},
            {"op": "delete", "actor": "alice", "record_id": bob.id, "request_id": "r2"},
        ]
    )  # fmt: skip
    assert [r["error"]["code"] for r in results] == ["not_found", "not_found"]
    assert "coffee" not in json.dumps(results)
    (kept,) = mem.records(actor="bob", all=True)  # read as the owner: unchanged
    assert (kept.id, kept.text, kept.status.value) == (bob.id, "Bob likes coffee", "active")
    assert mem.deletions() == []
    # the item naming the record's own actor, or none, still changes it
    (ok_,) = mem.write_records([{"op": "update", "actor": "bob", "record_id": bob.id,
                                 "text": "Bob likes tea", "request_id": "r1"}])  # fmt: skip
    assert ok_["status"] == "updated"
    if "://" not in db:  # the CLI's records import goes the same way
        lines = tmp_path / "items.jsonl"
        item = {"op": "delete", "actor": "alice", "record_id": ok_["record_id"]}
        lines.write_text(json.dumps(item) + "\n")
        out = ok(capsys, Path(db), "records", "import", str(lines))
        assert out["failed"] == 1 and out["results"][0]["error"]["code"] == "not_found"
        assert [r.text for r in mem.records(actor="bob")] == ["Bob likes tea"]


# -- MCP: unknown arguments are errors, refused values are not quoted back --------------------


def test_mcp_refuses_unknown_arguments_and_never_quotes_a_refused_value(
    tmp_path: Path, db: str
) -> None:
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        # HTTP's names are top_k and budget_tokens; the guesses were silently ignored
        for name, args in (("recall", {"query": "tea", "k": 3}),
                           ("recall", {"query": "tea", "budget": 50}),
                           ("get_profile", {"budget": 50}),
                           ("remember", {"text": "I like tea", "actor": "bob"})):  # fmt: skip
            error = tool_error(await s.call_tool(name, args))
            assert "Extra inputs are not permitted" in error, error
        long_text = f"my {PASSWORD} and then " + "words " * 1000  # over the 4000 limit
        for name, args in (("remember", {"text": long_text}),
                           ("list_memories", {"limit": 10**6, "as_of": None}),
                           ("recall", {"query": "tea", "top_k": TOKEN})):  # fmt: skip
            error = tool_error(await s.call_tool(name, args))
            assert not any(n in error for n in NEEDLES) and "input_value" not in error, error
        assert tool_data(await s.call_tool("list_memories", {"all": True}))["records"] == []
        assert tool_data(await s.call_tool("recall", {"query": "tea", "top_k": 3}))["records"] == []

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
    log = (tmp_path / "server.log").read_text()
    assert not any(n in log for n in NEEDLES)


# -- thread state: versions and retentions past what a store or a datetime holds -----------


def test_thread_state_refuses_versions_and_retentions_out_of_range(
    mem: Memory, db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"step": "pay"}
    saved = checkpoint_save(mem, actor="alice", workflow="refund", state=state)
    for call in (
        lambda: checkpoint_save(mem, actor="alice", workflow="refund", state=state,
                                expected_version=10**30),
        lambda: checkpoint_save(mem, actor="alice", workflow="other", state=state,
                                retention=timedelta(days=999_999_999)),
        lambda: begin_tool_call(mem, actor="alice", workflow="refund", idempotency_key="k1",
                                retention=timedelta(days=999_999_999)),
    ):  # fmt: skip
        with pytest.raises(InvalidInput):
            call()
    assert [c.workflow for c in checkpoint_list(mem, actor="alice")] == ["refund"]
    assert checkpoint_load(mem, actor="alice", workflow="refund").version == saved.version
    assert tool_calls(mem, actor="alice") == []
    if "://" not in db:
        base = ["--actor", "alice", "--workflow", "w2"]
        for days in ("nan", "1e12", "inf"):
            for args in (["checkpoint", "save", *base, "--state", '{"step": "a"}'],
                         ["toolcall", "begin", *base, "--key", "k2"]):  # fmt: skip
                error = err(capsys, Path(db), *args, "--retention-days", days)
                assert "retention-days" in error["message"]
        assert [c.workflow for c in checkpoint_list(mem, actor="alice")] == ["refund"]
