"""Erasure down to the bytes, and a fresh start after it, through the library.

Item 14: after a forget, none of the erased words is left in the SQLite file,
its WAL or its shared-memory index (read as raw bytes), and a reader that
holds the WAL open makes the erasure report itself as not yet verified. On
PostgreSQL, `forget(vacuum=True)` VACUUMs the tables it touched.

Item 15: an actor's tombstone covers what arrived before the erasure: a job
running when its actor is erased recreates nothing, and events added
afterwards make and recall records again, on both backends.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from remem import Memory
from remem.cli.main import main
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from remem.thread.api import checkpoint_save
from tests.support import pg
from tests.support.cli import ok
from tests.support.clock import Clock, at
from tests.support.llm import llm_config
from tests.support.servers import event_body, running_server

# words found nowhere else in the database; their first seven letters survive
# porter stemming ("kumquats" -> "kumquat"), so a stem in the index is found too
ERASED = {
    "event": "xylophonist",
    "event2": "kumquats",
    "metadata": "quetzalcoatl",
    "record": "vuvuzelas",
    "field": "jabberwocky",
    "value": "zambonis",
    "checkpoint": "gobbledygook",
}
LATER = datetime(2026, 6, 1, tzinfo=UTC)  # the clock: after every event's time
KEPT = "wanderlust"  # bob's word, which must stay: proves the files are read


def file_bytes(db: Path) -> dict[str, bytes]:
    """The raw bytes of the database file and its -wal and -shm files, if present."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(str(db) + suffix)
        if path.exists():
            found[suffix or "db"] = path.read_bytes().lower()
    return found


def leftovers(db: Path, words: list[str]) -> dict[str, list[str]]:
    """Which of `words` (by their first seven letters) each file still holds."""
    return {
        name: [w for w in words if w[:7].encode() in data] for name, data in file_bytes(db).items()
    }


def fill(mem: Memory) -> str:
    """Alice's distinctive words on every surface; bob's one word; return a record id."""
    for i in range(20):
        mem.add_event(actor="bob", session="b", role="user", text=f"I feel {KEPT} {i}.")
    mem.add_event(actor="alice", session="s1", role="user", time=at(0),
                  text=f"I prefer {ERASED['event']} lessons on Mondays.",
                  metadata={"note": ERASED["metadata"]})  # fmt: skip
    mem.add_event(actor="alice", session="s1", role="user", time=at(1),
                  text=f"My favourite fruit is {ERASED['event2']}.")  # fmt: skip
    mem.process()
    rec = mem.remember(
        actor="alice",
        text=f"Alice collects {ERASED['record']}",
        field=ERASED["field"],
        value=ERASED["value"],
    )
    checkpoint_save(mem, actor="alice", workflow="wf",
                    state={"step": "s", "data": {"note": ERASED["checkpoint"]}})  # fmt: skip
    return rec.id


def test_forget_leaves_no_erased_word_in_the_sqlite_files(tmp_path: Path, clock: Clock) -> None:
    db = tmp_path / "m.db"
    words = list(ERASED.values())
    with Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        record_id = fill(mem)
        assert any(leftovers(db, words).values())  # the words are there to be found
        first = mem.forget(record_id=record_id)
        assert not any(leftovers(db, [ERASED["record"], ERASED["value"]]).values())
        report = mem.forget(actor="alice")
        assert leftovers(db, words) == {name: [] for name in file_bytes(db)}
        assert first.verified and first.remaining["wal_frames"] == 0
        assert report.verified and report.remaining["wal_frames"] == 0
        assert report.deleted["events"] == 2 and report.deleted["checkpoints"] == 1
        assert KEPT[:7].encode() in file_bytes(db)["db"]  # bob's words stay
        assert mem.recall(actor="bob", query=KEPT).records or mem.events(actor="bob")
    # and after the store is closed (its last checkpoint) nothing comes back
    assert leftovers(db, words) == {name: [] for name in file_bytes(db)}


def test_forgetting_an_extracted_record_takes_its_event_words_out_of_the_files(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        fill(mem)
        (rec,) = [r for r in mem.records(actor="alice") if ERASED["event"] in r.text]
        report = mem.forget(record_id=rec.id)
        gone = [ERASED["event"], ERASED["metadata"]]  # the event's text and its metadata
        assert leftovers(db, gone) == {name: [] for name in file_bytes(db)}
        assert report.verified and report.deleted["event_texts"] == 1
        assert ERASED["event2"][:7].encode() in file_bytes(db)["db"]  # alice's other event


def test_a_reader_holding_the_wal_leaves_the_erasure_unverified(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        fill(mem)
        reader = sqlite3.connect(db)  # another process's connection, reading a snapshot
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM events").fetchone()
            blocked = mem.forget(actor="alice")
            assert not blocked.verified and blocked.remaining["wal_frames"] > 0
            assert mem.deletions()[0]["status"] == "failed"
            assert mem.events(actor="alice") == []  # every surface is clean already
        finally:
            reader.close()
        again = mem.forget(actor="alice")  # the reader is gone: the checkpoint goes through
        assert again.verified and again.remaining["wal_frames"] == 0
        assert mem.deletions()[0]["status"] == "done"
        assert leftovers(db, list(ERASED.values())) == {name: [] for name in file_bytes(db)}


# -- item 15, on both backends --------------------------------------------------------


@pytest.fixture
def target(db: str) -> str:
    """A new database on each backend (the `db` fixture of tests/conftest.py)."""
    return db


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def test_a_job_running_when_its_actor_is_erased_recreates_nothing(
    target: str, llm: ScriptedLLM
) -> None:
    started, release = threading.Event(), threading.Event()

    def stalled(request: dict[str, Any]) -> Reply:
        started.set()  # the worker is extracting alice's event now
        release.wait(20)
        return memory_model(request)

    llm.responder = stalled
    config = llm_config(llm)
    with Memory.open(target, embedder=HashEmbedder(), config=config, clock=Clock(LATER)) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                      time=at(0), event_id="e1")  # fmt: skip
        worker = threading.Thread(target=mem.process)
        worker.start()
        try:
            assert started.wait(20)
            report = mem.forget(actor="ana")
        finally:
            release.set()
            worker.join(30)
        assert report.verified
        assert mem.records(actor="ana", all=True) == []
        assert mem.events(actor="ana") == []
        assert mem.recall(actor="ana", query="where does ana live").records == ()


def test_after_an_erasure_new_events_make_and_recall_records(target: str) -> None:
    clock = Clock(LATER)
    with Memory.open(target, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        mem.add_event(actor="alice", session="s1", role="user", time=at(0),
                      text="I'm allergic to peanuts.", event_id="turn-1")  # fmt: skip
        mem.process()
        mem.add_event(actor="alice", session="s1", role="user", time=at(1),
                      text="I live in Lisbon.")  # fmt: skip
        mem.forget(actor="alice")  # with that event's job still pending
        erased = clock()
        clock.advance(minutes=5)
        # the same event id again: ids repeat across conversations, a fresh start is new
        mem.add_event(actor="alice", session="s2", role="user", time=at(2),
                      text="I prefer aisle seats on long flights.", event_id="turn-1")  # fmt: skip
        result = mem.process()
        assert result.jobs_done == 1 and result.records_added >= 1
        assert result.skipped_tombstoned == 0
        texts = [r.text for r in mem.records(actor="alice")]
        assert any("aisle" in t.lower() for t in texts)
        assert not any("peanut" in t.lower() or "lisbon" in t.lower() for t in texts)
        packet = mem.recall(actor="alice", query="which seat should I book?")
        assert any("aisle" in r.text.lower() for r in packet.records)
        assert mem.fresh_start("bob") is None
        note = mem.fresh_start("alice")
        assert note is not None and note["erased_at"] == erased.isoformat()
        assert "start a new memory" in note["message"]
        (job,) = mem.deletions()  # the erasure is still on record
        assert job["target"] == "actor" and job["key"] == "alice" and job["status"] == "done"


def test_record_tombstones_hold_until_the_actor_is_erased_then_ids_start_afresh(
    target: str,
) -> None:
    clock = Clock(LATER)
    with Memory.open(target, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        mem.add_event(actor="alice", session="s1", role="user", time=at(0),
                      text="I'm allergic to peanuts.", event_id="turn-1")  # fmt: skip
        (stale,) = mem.store.jobs.claim_jobs(clock(), 10, 60)  # worker A takes it, then stalls
        clock.advance(seconds=61)
        assert mem.process().jobs_done == 1  # worker B takes it over after the lease
        (rec,) = mem.records(actor="alice")
        assert mem.forget(record_id=rec.id).verified
        result = mem.pipeline.run_jobs([stale])  # worker A wakes up: the tombstone stops it
        assert result.skipped_tombstoned == 1
        assert mem.records(actor="alice", all=True) == []
        mem.forget(actor="alice")
        mem.add_event(actor="alice", session="s2", role="user", time=at(3),
                      text="I prefer window seats.", event_id="turn-1")  # fmt: skip
        assert mem.process().records_added >= 1  # the old event's tombstone went with it
        assert [r.source.event_ids for r in mem.records(actor="alice")] == [("turn-1",)]


def test_forget_with_vacuum_vacuums_what_the_erasure_touched(pg_admin_dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        admin = pg.admin_dsn_for(pg_admin_dsn, dsn)

        def vacuums() -> int:
            with psycopg.connect(admin, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'events'"
                ).fetchone()
                assert row is not None
                return int(row[0])

        with Memory.open(pg.as_url(dsn), embedder=HashEmbedder()) as mem:
            mem.add_event(actor="alice", session="s1", role="user", text="I like tea.")
            mem.forget(actor="alice")
            before = vacuums()
            report = mem.forget(actor="alice", vacuum=True)
            assert report.verified
            assert vacuums() == before + 1


# -- the surfaces: CLI and HTTP -------------------------------------------------------


def test_cli_event_add_after_forget_says_it_starts_a_new_memory(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db: Any = target  # a file path or a PostgreSQL URL: `--db` takes either
    add = ["event", "add", "--actor", "alice", "--session", "s1", "--role", "user"]
    before = ok(capsys, db, *add, "--text", "I like tea.")
    assert "fresh_start" not in before
    forgot = ok(capsys, db, "forget", "--actor", "alice", "--vacuum")
    assert forgot["verified"] is True
    after = ok(capsys, db, *add, "--text", "I like coffee.")
    note = after["fresh_start"]
    assert set(note) == {"erased_at", "message"} and "new memory" in note["message"]
    listed = ok(capsys, db, "deletions")["deletions"]
    assert [(d["target"], d["key"], d["status"]) for d in listed] == [("actor", "alice", "done")]
    assert ok(capsys, db, "process")["records_added"] >= 1
    # the human form puts the note on stderr, the event id alone on stdout
    assert main(["--db", str(db), *add, "--text", "I like juice."]) == 0
    out = capsys.readouterr()
    assert len(out.out.split()) == 1 and "was erased at" in out.err


def test_http_create_event_after_forget_carries_the_note(target: str) -> None:
    with running_server(target) as server, server.http("agent") as h, server.http("admin") as a:
        first = h.post("/v1/events", json=event_body("carol", "I like tea.")).json()
        assert "fresh_start" not in first["events"][0]
        assert a.post("/v1/subjects/carol/forget").json()["verified"] is True
        batch = {
            "events": [event_body("carol", "I like coffee."), event_body("dave", "I like tea.")]
        }
        created = h.post("/v1/events", json=batch)
        assert created.status_code == 201
        carol, dave = created.json()["events"]
        assert carol["created"] is True and "was erased at" in carol["fresh_start"]["message"]
        assert "fresh_start" not in dave
        assert h.get("/v1/events", params={"actor_id": "carol"}).json()["events"]


def test_forgetting_a_record_made_of_a_bare_answer_empties_its_question(target: str) -> None:
    """ "not anymore" says nothing alone: the record is made of the assistant's question
    too, so its erasure empties both turns, or recall would hand the question back."""
    with Memory.open(target, embedder=HashEmbedder(), clock=Clock(LATER)) as mem:
        mem.add_event(actor="alice", session="s1", role="assistant", time=at(0),
                      text="Are you still vegetarian?", event_id="q")  # fmt: skip
        mem.add_event(actor="alice", session="s1", role="user", time=at(1),
                      text="not anymore", event_id="a")  # fmt: skip
        mem.process()
        (rec,) = [r for r in mem.records(actor="alice") if "vegetarian" in r.text]
        assert rec.source.event_ids == ("q", "a")
        report = mem.forget(record_id=rec.id)
        assert report.verified and report.deleted["event_texts"] == 2
        assert [e.text for e in mem.events(actor="alice")] == ["", ""]
        assert not mem.recall(actor="alice", query="is alice vegetarian").records
