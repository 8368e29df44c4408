"""An erasure never keeps a secret sent as the actor it names.

Found by a fuzz run (2026-12-07): `remem forget --actor ghp_...` and an `erasures
replay` line whose key was a token wrote the token into the tombstones, the deletion
log and the audit log, which refuses deletes, so it stayed for good. Every write
refuses such a name, so it names no one; an actor stored under one before writes
checked names still has its data erased.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from remem import Memory, RefusedContent
from remem.model import Event, Role
from remem.timeutil import utcnow
from tests.support.cli import err, ok

TOKEN = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


def _holds(db: Path, text: str) -> list[str]:
    """The tables of the SQLite file at `db` whose rows hold `text` anywhere."""
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            t
            for t in tables
            if any(text in repr(row) for row in conn.execute(f'SELECT * FROM "{t}"'))
        ]
    finally:
        conn.close()


def test_forgetting_a_token_as_an_actor_is_refused_and_keeps_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=None) as mem:
        mem.remember(actor="zed", text="Zed likes figs")
        with pytest.raises(RefusedContent):
            mem.forget(actor=TOKEN)
    refused = err(capsys, db, "forget", "--actor", TOKEN)
    assert refused["code"] == "refused_content" and TOKEN not in refused["message"]
    marks = tmp_path / "marks.jsonl"
    line = {
        "tenant": "default",
        "kind": "actor",
        "key": TOKEN,
        "created_at": "2026-12-01T00:00:00Z",
    }
    marks.write_text(json.dumps(line) + "\n", encoding="utf-8")
    replayed = ok(capsys, db, "erasures", "replay", str(marks))
    assert replayed["replayed"]["actors"] == 0
    assert _holds(db, TOKEN) == []
    with Memory.open(db, embedder=None) as mem:  # nothing else was touched
        assert [r.text for r in mem.records(actor="zed")] == ["Zed likes figs"]


def test_an_actor_stored_under_such_a_name_before_the_check_is_still_erased(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=None) as mem:
        # written below the checks, as a database from before them holds it
        old = Event("ev_old1", mem.tenant, TOKEN, "s1", Role.USER, "Figs for breakfast", utcnow())
        mem.store.events.add_events([old], [])
        report = mem.forget(actor=TOKEN)
        assert report.verified and report.deleted["events"] == 1
        assert mem.store.actors.summaries(mem.tenant, only=TOKEN) == []
