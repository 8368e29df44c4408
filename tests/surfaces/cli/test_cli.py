"""The CLI contract: fixed JSON fields, clear errors, nothing lost on bad input."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.cli.main import main
from remem.store.sqlite.store import SCHEMA_VERSION
from tests.support.cli import err, ok


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # the CLI contract does not depend on the embedder; keep these tests fast
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def add(capsys: pytest.CaptureFixture[str], db: Path, text: str, time_: str, **kw: str) -> str:
    args = ["event", "add", "--actor", kw.get("actor", "alice"), "--session", "s1",
            "--role", "user", "--text", text, "--time", time_]  # fmt: skip
    if "id" in kw:
        args += ["--id", kw["id"]]
    return str(ok(capsys, db, *args)["event_id"])


def test_the_whole_path_through_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    e1 = add(capsys, db, "Our budget for the trip is $500", "2026-03-01T10:00:00Z", id="b1")
    assert e1 == "b1"
    add(capsys, db, "Our budget increased to $750", "2026-03-05T10:00:00Z")
    add(capsys, db, "ok", "2026-03-05T10:01:00Z")
    events = ok(capsys, db, "event", "list", "--actor", "alice")["events"]
    assert next(e["text"] for e in events) == "Our budget for the trip is $500"
    done = ok(capsys, db, "process")
    assert {"jobs_done", "records_added", "records_updated", "noops"} <= set(done)
    assert done["jobs_done"] == 3 and done["records_updated"] == 1

    listed = ok(capsys, db, "records", "list", "--actor", "alice", "--all")["records"]
    fields = {"id", "text", "kind", "namespace", "status", "superseded_by", "valid_from",
              "valid_until", "source"}  # fmt: skip
    assert all(fields <= set(r) for r in listed)
    old = next(r for r in listed if "$500" in r["text"])
    new = next(r for r in listed if "$750" in r["text"])
    assert old["status"] == "invalid" and old["superseded_by"] == new["id"]
    assert old["source"]["event_ids"] == ["b1"]

    packet = ok(capsys, db, "recall", "--actor", "alice", "--query", "trip budget")
    assert {"records", "conflicts", "tokens", "budget"} <= set(packet)
    item = packet["records"][0]
    assert {"id", "text", "kind", "namespace", "status", "source_date", "source", "score",
            "flags"} <= set(item)  # fmt: skip
    assert item["id"] == new["id"]

    past = ok(capsys, db, "recall", "--actor", "alice", "--query", "trip budget",
              "--valid-at", "2026-03-02T00:00:00Z", "--no-events")  # fmt: skip
    assert [r["id"] for r in past["records"]] == [old["id"]]

    explained = ok(capsys, db, "recall", "--actor", "alice", "--query", "budget", "--explain")
    assert any(r["id"] == old["id"] for r in explained["explain"]["rejected"])

    hist = ok(capsys, db, "records", "history", old["id"])["history"]
    assert [h["action"] for h in hist] == ["ADD", "SUPERSEDED"]
    assert ok(capsys, db, "records", "get", new["id"])["record"]["text"] == new["text"]

    gone = ok(capsys, db, "forget", "--record", new["id"])
    assert gone["verified"] is True and gone["deleted"]["records"] == 1
    all_gone = ok(capsys, db, "forget", "--actor", "alice")
    assert all_gone["verified"] is True
    assert ok(capsys, db, "records", "list", "--actor", "alice", "--all")["records"] == []


def test_remember(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    data = ok(capsys, db, "remember", "--actor", "alice", "--text", "I prefer aisle seats",
              "--kind", "preference", "--valid-until", "2099-01-01T00:00:00Z")  # fmt: skip
    assert set(data) == {"record_id", "status"} and data["status"] == "active"
    rec = ok(capsys, db, "records", "get", data["record_id"])["record"]
    assert rec["kind"] == "preference" and rec["valid_until"].startswith("2099-01-01")


def test_import_keeps_times_and_skips_repeats(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    src = tmp_path / "events.jsonl"
    rows = [
        {"actor": "alice", "session": "s1", "role": "user", "text": "I'm vegetarian",
         "time": "2026-01-02T03:04:05Z", "event_id": "x1"},
        {"actor": "alice", "session": "s1", "role": "assistant", "text": "Noted!", "id": "x2"},
    ]  # fmt: skip
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert ok(capsys, db, "event", "import", str(src)) == {"imported": 2, "skipped": 0}
    assert ok(capsys, db, "event", "import", str(src)) == {"imported": 0, "skipped": 2}
    events = ok(capsys, db, "event", "list", "--actor", "alice")["events"]
    assert events[0]["time"].startswith("2026-01-02T03:04:05")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["event", "add", "--actor", "a", "--session", "s", "--role", "user", "--text", ""],
         "invalid_input"),
        (["event", "add", "--actor", "a", "--session", "s", "--role", "user", "--text", "x",
          "--time", "tomorrow-ish"], "invalid_input"),
        (["event", "add", "--actor", "a", "--session", "s", "--role", "robot", "--text", "x"],
         "usage"),
        (["event", "add", "--actor", "a b", "--session", "s", "--role", "user", "--text", "x"],
         "invalid_input"),
        (["remember", "--actor", "a", "--text", "  "], "invalid_input"),
        (["remember", "--actor", "a", "--text", "x", "--valid-until", "2001-01-01"],
         "invalid_input"),
        (["recall", "--actor", "a", "--query", ""], "invalid_input"),
        (["recall", "--actor", "a", "--query", "x", "--k", "0"], "usage"),
        (["records", "history", "rec_missing"], "not_found"),
        (["records", "get", "rec_missing"], "not_found"),
        (["forget", "--record", "rec_missing"], "not_found"),
        (["forget"], "invalid_input"),
        (["event", "import", "/nonexistent/file.jsonl"], "invalid_input"),
        (["no-such-command"], "usage"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: str
) -> None:
    db = tmp_path / "m.db"
    error = err(capsys, db, *args)
    assert error["code"] == code and error["message"]


def test_huge_text_is_refused_and_nothing_is_stored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    error = err(capsys, db, "event", "add", "--actor", "a", "--session", "s", "--role", "user",
                "--text", "x" * 200_000)  # fmt: skip
    assert "limit" in error["message"]
    assert ok(capsys, db, "event", "list", "--actor", "a")["events"] == []


def test_malformed_jsonl_imports_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    src = tmp_path / "bad.jsonl"
    src.write_text('{"actor": "a", "session": "s", "role": "user", "text": "fine"}\n{oops\n')
    error = err(capsys, db, "event", "import", str(src))
    assert "line 2" in error["message"]
    assert ok(capsys, db, "event", "list", "--actor", "a")["events"] == []


def test_missing_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    error = err(capsys, tmp_path / "no" / "such" / "dir.db", "records", "list", "--actor", "a")
    assert error["code"] == "store_error" and "does not exist" in error["message"]


def test_corrupt_file_is_refused_and_left_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "junk.db"
    junk = os.urandom(8192)
    db.write_bytes(junk)
    error = err(capsys, db, "records", "list", "--actor", "a")
    assert error["code"] == "store_corrupt"
    assert db.read_bytes() == junk


def test_foreign_sqlite_file_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    assert err(capsys, db, "records", "list", "--actor", "a")["code"] == "store_corrupt"


def test_newer_database_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    add(capsys, db, "I'm vegetarian", "2026-01-01T00:00:00Z")
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    error = err(capsys, db, "event", "list", "--actor", "alice")
    assert error["code"] == "schema_too_new" and "newer remem" in error["message"]


def test_errors_without_json_are_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["--db", str(tmp_path / "m.db"), "records", "history", "nope"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("remem: error:")


def _interruptible() -> None:
    """In the child: take Ctrl-C as a shell in the foreground would (a background
    parent, e.g. a CI script started with `&`, leaves SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_import_keeps_whole_batches(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    src = tmp_path / "big.jsonl"
    with src.open("w") as f:
        for i in range(200_000):
            f.write(json.dumps({"actor": "a", "session": "s", "role": "user",
                                "text": f"note {i}", "event_id": f"n{i}"}) + "\n")  # fmt: skip
    env = dict(os.environ, REMEM_MINILM_DIR="/nonexistent")
    proc = subprocess.Popen(
        [sys.executable, "-m", "remem.cli.main", "--db", str(db), "event", "import", str(src),
         "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=_interruptible,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    if conn.execute("SELECT count(*) FROM events").fetchone()[0] > 0:
                        break
            except sqlite3.OperationalError:
                continue
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    with sqlite3.connect(db) as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        jobs = conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
    if proc.returncode == 0:  # it finished before the signal landed
        assert events == 200_000
    else:
        assert proc.returncode == 130
        assert json.loads(out)["error"]["code"] == "interrupted"
        assert 0 < events < 200_000 and events % 500 == 0
    assert jobs == events  # every stored event has its job: the outbox held


def test_procedure_review_through_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    prop = ok(capsys, db, "procedure", "propose", "--text", "Refunds need approval", "--name", "r")
    assert prop["status"] == "proposed"
    assert ok(capsys, db, "procedure", "list")["records"] == []
    listed = ok(capsys, db, "procedure", "list", "--all")["records"]
    assert [r["id"] for r in listed] == [prop["record_id"]]
    done = ok(capsys, db, "records", "approve", prop["record_id"], "--by", "dana")
    assert done == {"record_id": prop["record_id"], "status": "active"}
    assert [r["id"] for r in ok(capsys, db, "procedure", "list")["records"]] == [done["record_id"]]
    assert err(capsys, db, "records", "reject", prop["record_id"], "--by", "x")["code"] == (
        "conflict"
    )
    other = ok(capsys, db, "procedure", "propose", "--text", "Skip checks")
    rejected = ok(capsys, db, "records", "reject", other["record_id"], "--by", "dana",
                  "--reason", "unsafe")  # fmt: skip
    assert rejected["status"] == "invalid"


def test_export_a_subject_then_forget_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    add(capsys, db, "Our budget for the trip is $500", "2026-03-01T10:00:00Z", id="b1")
    add(capsys, db, "Our budget increased to $750", "2026-03-05T10:00:00Z", id="b2")
    add(capsys, db, "I love tea", "2026-03-05T10:00:00Z", actor="bob", id="c1")
    ok(capsys, db, "process")
    out = tmp_path / "alice.jsonl"
    summary = ok(capsys, db, "export", "--actor", "alice", "--out", str(out))
    assert summary == {"path": str(out), "events": 2, "records": 2}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in rows if r["type"] == "event"} == {"b1", "b2"}
    records = [r for r in rows if r["type"] == "record"]
    old = next(r for r in records if r["status"] == "invalid")
    assert [h["action"] for h in old["history"]] == ["ADD", "SUPERSEDED"]
    assert all(r["actor"] == "alice" for r in rows)  # nothing of bob's

    assert main(["--db", str(db), "export", "--actor", "alice"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["type"] for line in lines].count("record") == 2

    assert ok(capsys, db, "forget", "--actor", "alice")["verified"] is True
    empty = ok(capsys, db, "export", "--actor", "alice", "--out", str(out))
    assert (empty["events"], empty["records"]) == (0, 0) and out.read_text() == ""
    assert err(capsys, db, "export", "--actor", "alice")["code"] == "invalid_input"


def test_worker_processes_jobs_as_a_process_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = dict(os.environ, REMEM_MINILM_DIR="/nonexistent")
    for i, text in enumerate(["I'm vegetarian.", "I live in Lisbon.", "ok", "I love tea."]):
        main(["--db", str(db), "event", "add", "--actor", "a", "--session", "s", "--role",
              "user", "--text", text, "--time", f"2026-01-0{i + 1}T00:00:00Z"])  # fmt: skip
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", str(db), "worker", "--interval", "0.05"]
    first = subprocess.run([*cmd, "--max-jobs", "2", "--json"], capture_output=True, text=True,
                           env=env, timeout=120)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["jobs_done"] == 2
    # a worker stopped with Ctrl-C exits cleanly with what it did
    proc = subprocess.Popen(
        [*cmd, "--json"], stdout=subprocess.PIPE, env=env, text=True, preexec_fn=_interruptible
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0] == 4:
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out)["jobs_done"] == 2
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 3


def test_remem_client_is_the_http_client() -> None:
    import remem
    from remem.service.client import Client

    assert remem.Client is Client
