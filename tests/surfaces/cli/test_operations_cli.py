"""`remem migrate`, `remem backup`, `remem restore` and `remem erasures` on SQLite
(issue 38, item 5): a deploy's migrations once, a stated refusal of newer databases,
and a restore that erases again what was erased after its backup, down to the bytes
of every file the database keeps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from remem import Memory
from remem.cli.main import main
from remem.embed import HashEmbedder
from remem.store.sqlite.store import SCHEMA_VERSION
from tests.support.cli import err, ok

# words found nowhere else; their first seven letters survive stemming in the index
ANN = ["zebrafruit", "xylophonist", "quetzalcoatl"]
CY = "quokkaville"
DOC = "pangolinarium"  # a document's word
KEPT = "wanderlust"  # bob's word, which must stay: proves the files are read


def stored_bytes(folder: Path, skip: Path) -> dict[str, bytes]:
    """Every file under `folder` but `skip` (the backup): the database, its -wal and
    -shm, and the vector files beside it, as raw lowercase bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes().lower()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p != skip
    }


def holding(folder: Path, skip: Path, word: str) -> list[str]:
    return [n for n, data in stored_bytes(folder, skip).items() if word[:7].encode() in data]


def fill(db: Path) -> None:
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        for i in range(5):
            mem.add_event(actor="bob", session="b", role="user", text=f"I feel {KEPT} {i}.")
        mem.add_event(actor="ann", session="a", role="user", text=f"I love {ANN[0]} pies.")
        mem.remember(actor="ann", text=f"Ann's cat is called {ANN[1]}")
        mem.remember(actor="ann", text=f"Ann studies {ANN[2]} myths", kind="preference")
        mem.add_event(actor="cy", session="c", role="user", text=f"I live in {CY.title()}.")
        mem.add_document(text=f"# Visits\n\nThe {DOC} opens at nine.", title="visits")
        mem.recall(query="what does ann like", actor="ann")  # vector files beside the database
        mem.recall(query="how does bob feel", actor="bob")


def test_restore_erases_again_what_was_erased_after_the_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = tmp_path / "live" / "remem.db"
    live.parent.mkdir()
    saved = tmp_path / "backup.db"
    fill(live)
    done = ok(capsys, live, "backup", str(saved))
    assert done["schema"] == SCHEMA_VERSION and saved.stat().st_size == done["bytes"]
    assert all(w[:7].encode() in saved.read_bytes().lower() for w in [*ANN, CY, DOC])
    # after the backup: ann is erased, cy's event made a record that is forgotten, and
    # the document is removed
    with Memory.open(live, embedder=HashEmbedder()) as mem:
        mem.process()
        (made,) = mem.records(actor="cy")
        assert mem.forget(record_id=made.id).verified
        (doc,) = mem.list_documents()
        assert mem.remove_document(doc.id).verified
    ok(capsys, live, "forget", "--actor", "ann")
    out = ok(capsys, live, "restore", str(saved))
    assert out["replayed"] == {"actors": 1, "records": 0, "documents": 1, "events": 1}
    # no byte of the database, its WAL or shared-memory file, or a vector file holds them
    for word in [*ANN, CY, DOC]:
        assert holding(live.parent, saved, word) == [], word
    assert holding(live.parent, saved, KEPT) == ["remem.db"]
    with Memory.open(live, embedder=HashEmbedder()) as mem:
        assert mem.records(actor="ann", all=True) == [] and mem.events(actor="ann") == []
        mem.process()  # cy's job, restored with the backup, makes nothing of an erased event
        assert mem.records(actor="cy", all=True) == []
        assert [r.text for r in mem.recall(query="how does bob feel", actor="bob").records]
        log = mem.deletions()
        assert {(d["target"], d["key"]) for d in log} >= {("actor", "ann")}
        assert mem.list_documents() == []
    for word in [*ANN, CY, DOC]:  # the recall wrote vector files again: from the clean rows
        assert holding(live.parent, saved, word) == [], word


def test_restore_keeps_a_fresh_start_made_before_the_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live, saved = tmp_path / "remem.db", tmp_path / "backup.db"
    with Memory.open(live, embedder=HashEmbedder()) as mem:
        mem.remember(actor="dee", text="Dee likes tea")
        mem.forget(actor="dee")
        mem.remember(actor="dee", text="Dee likes coffee")  # a fresh start
    ok(capsys, live, "backup", str(saved))
    out = ok(capsys, live, "restore", str(saved))
    assert out["replayed"] == {"actors": 0, "records": 0, "documents": 0, "events": 0}
    with Memory.open(live, embedder=HashEmbedder()) as mem:
        assert [r.text for r in mem.records(actor="dee")] == ["Dee likes coffee"]


def test_restore_replays_an_exported_file_when_the_database_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live, saved, marks = tmp_path / "remem.db", tmp_path / "backup.db", tmp_path / "marks.jsonl"
    fill(live)
    ok(capsys, live, "backup", str(saved))
    ok(capsys, live, "forget", "--actor", "ann")
    ok(capsys, live, "erasures", "export", str(marks))
    assert b"zebrafr" not in marks.read_bytes()  # tombstones hold no content
    for p in tmp_path.glob("remem.db*"):  # the disk that held the database is lost
        p.unlink() if p.is_file() else None
    out = ok(capsys, live, "restore", str(saved), "--erasures", str(marks))
    assert out["replayed"]["actors"] == 1
    for word in ANN:
        assert holding(tmp_path, saved, word) == [], word
    assert err(capsys, live, "erasures", "export", str(marks))["message"].endswith(
        "exists; name a new file"
    )


def test_backup_and_restore_refuse_what_they_must(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live, saved = tmp_path / "remem.db", tmp_path / "backup.db"
    with Memory.open(live, embedder=HashEmbedder()) as mem:
        mem.remember(actor="eve", text="Eve likes figs")
    ok(capsys, live, "backup", str(saved))
    assert "never overwrites" in err(capsys, live, "backup", str(saved))["message"]
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert "not a remem database" in err(capsys, live, "restore", str(other))["message"]
    newer = tmp_path / "newer.db"
    ok(capsys, live, "backup", str(newer))
    with sqlite3.connect(newer) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    failed = err(capsys, live, "restore", str(newer))
    assert failed["code"] == "schema_too_new" and "upgrade remem" in failed["message"]
    with Memory.open(live, embedder=HashEmbedder()) as mem:  # refused: nothing was replaced
        assert [r.text for r in mem.records(actor="eve")] == ["Eve likes figs"]
    pg = "postgresql://u@localhost/db"  # no server is asked: the message says what to do
    for args in (["backup", str(tmp_path / "x.db")], ["restore", str(saved)]):
        assert main(["--db", pg, *args, "--json"]) == 1
        assert "pg_dump and pg_restore" in capsys.readouterr().out


def test_migrate_plans_applies_and_refuses_a_newer_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "remem.db"
    plan = ok(capsys, db, "migrate", "--plan")
    assert plan["applied"] == 0 and len(plan["pending"]) == SCHEMA_VERSION
    assert plan["pending"][0] == "0001_initial.sql" and not db.exists()  # nothing made
    done = ok(capsys, db, "migrate")
    assert done["applied_now"] == plan["pending"] and done["pending"] == []
    assert ok(capsys, db, "migrate", "--plan")["pending"] == []
    with sqlite3.connect(db) as conn:  # as if made by the remem before the last migration
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    assert len(ok(capsys, db, "migrate", "--plan")["pending"]) == 1
    refused = err(capsys, db, "serve", "--no-migrate", "--port", "0")
    assert "lacks 1 migration" in refused["message"] and "remem migrate" in refused["message"]
    with sqlite3.connect(db) as conn:  # written by a newer remem: every command refuses it
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for args in (("migrate", "--plan"), ("migrate",), ("recall", "--actor", "a", "--query", "q")):
        failed = err(capsys, db, *args)
        assert failed["code"] == "schema_too_new", args
        assert "upgrade remem to open it" in failed["message"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
