"""Erasures and key changes at the CLI say who asked and why, and are audited (issue 39),
on both backends: the deletion job names "cli: <os user>" (no key) and `--reason`, the
audit log gets a row for each, and neither holds an erased word."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from remem.cli.main import main
from remem.memory.memory import open_store
from remem.service.audit import os_user

WORDS = ("vegetarian", "lisbon", "aisle", "seats")


@pytest.fixture
def target(db: str) -> str:
    """A new database on each backend (the `db` fixture of tests/conftest.py)."""
    return db


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> Any:
    code = main(["--db", db, *args, "--json"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert code == 0 and len(lines) == 1, lines
    return json.loads(lines[0])


def test_cli_erasures_name_who_asked_and_why_and_are_audited(
    capsys: pytest.CaptureFixture[str], target: str
) -> None:
    made = cli(capsys, target, "remember", "--actor", "alice", "--text", "Alice is vegetarian")
    cli(capsys, target, "remember", "--actor", "bob", "--text", "Bob moved to Lisbon")
    cli(capsys, target, "remember", "--actor", "bob", "--text", "Bob likes aisle seats")
    one = cli(capsys, target, "forget", "--record", made["record_id"], "--reason", "DSR-1")
    whole = cli(capsys, target, "forget", "--actor", "bob", "--reason", "ticket DSR-2")
    assert one["verified"] and whole["verified"]

    store = open_store(target)
    try:
        jobs = {j["id"]: j for j in store.erasure.deletions("default", 10)}
        rows = store.audit.audit_log("default", action="erase")
    finally:
        store.close()
    record_job, actor_job = jobs[one["job_id"]], jobs[whole["job_id"]]
    who = f"cli: {os_user()}"
    assert (record_job["actor"], record_job["requester"], record_job["reason"]) == (
        "alice", who, "DSR-1"
    )  # fmt: skip
    assert (actor_job["actor"], actor_job["requester"], actor_job["reason"]) == (
        "bob", who, "ticket DSR-2"
    )  # fmt: skip
    assert record_job["requested_by"] is None and actor_job["requested_by"] is None
    said = [(r["key_id"], r["actor"], r["target"], r["detail"]) for r in reversed(rows)]
    done = {"surface": "cli", "user": os_user(), "verified": True}
    assert said == [
        (None, "alice", str(one["job_id"]), done),
        (None, "bob", str(whole["job_id"]), done),
    ]

    # the receipts and the audit log hold no erased word
    from remem.lifecycle.receipt import receipt

    text = json.dumps([receipt("default", j) for j in jobs.values()]) + json.dumps(rows)
    for word in WORDS:
        assert not re.search(rf"\b{word}\b", text, re.IGNORECASE), word


def test_records_import_deletes_name_who_asked_and_are_audited_once(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    made = cli(capsys, target, "remember", "--actor", "ann", "--text", "Ann is vegetarian")
    lines = tmp_path / "batch.jsonl"
    item = {"op": "delete", "request_id": "d1", "record_id": made["record_id"], "reason": "DSR-5"}
    lines.write_text(json.dumps(item) + "\n")
    first = cli(capsys, target, "records", "import", str(lines))
    again = cli(capsys, target, "records", "import", str(lines))  # a repeat erases nothing
    assert first["results"][0]["status"] == again["results"][0]["status"] == "deleted"
    store = open_store(target)
    try:
        (job,) = store.erasure.deletions("default", 10)
        rows = store.audit.audit_log("default", action="erase")
    finally:
        store.close()
    assert (job["actor"], job["requester"], job["reason"]) == ("ann", f"cli: {os_user()}", "DSR-5")
    assert [(r["actor"], r["target"]) for r in rows] == [("ann", str(job["id"]))]
    assert "vegetarian" not in json.dumps(rows) + json.dumps(job).lower()


def test_cli_key_creation_and_revocation_are_audited(
    capsys: pytest.CaptureFixture[str], target: str
) -> None:
    made = cli(capsys, target, "keys", "create", "--tenant", "acme", "--actor", "ann")
    cli(capsys, target, "keys", "revoke", made["id"])
    store = open_store(target)
    try:
        rows = store.audit.audit_log("acme")
        elsewhere = store.audit.audit_log("default")
    finally:
        store.close()
    said = [(r["key_id"], r["action"], r["actor"], r["target"], r["detail"]) for r in rows[::-1]]
    user = {"surface": "cli", "user": os_user()}
    assert said == [
        (None, "key_create", "ann", made["id"], user),
        (None, "key_revoke", "ann", made["id"], user),
    ]
    assert elsewhere == []  # the key's tenant's log, not the CLI's --tenant
