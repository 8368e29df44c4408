"""What an erasure left for work that overtook it, on both backends (and two races of
SQLite's own: its rowids, and the vector files beside the database).

Did not hold: an extraction job shows its model the earlier turns of the session as
context. A forget of the record one of those turns made, landing while the job waited
for the model, emptied the turn and verified itself; then the model's answer, which
restated the erased turn as a fact of the new one, was written: "Ana lives in Lisbon"
was back, from nothing the erasure could find. Now the write of a batch checks, in its
own transaction, that none of the turns the batch read (its sources and its context)
was erased since; if one was, nothing is written and the batch is extracted again from
what remains.

Did not either: a record's deletion job started by an older remem notes its record's
actor but none of its events. Resumed after its erasure had committed (the process was
killed before it made the summaries again), it found the record gone and nothing saying
which summaries quoted it, and closed as done with the session's summary still holding
the erased words. Such a job now makes again every summary of the actor that covers an
event a tombstone covers.

And a record's erasure stopped retrying once the record's row was gone: a forget sent
twice (a retried request) found the record erased by the other and reported itself
unverified, its job `failed`. On SQLite, a record stored between an erasure's commit and
its read-back took the erased rowid, and its own vector and full-text entry were read
back as the erased record's: unverified too, and the retry stopped at once; so it did
when another process's recall wrote the scope's vector file, from vectors read before
the erasure, after the erasure had removed it. The read-back now goes by the record's
id, and a retry of a record already gone erases again what its job noted (and the
scope's files) and reads back by that.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.lifecycle.erasure import RESUME_AFTER
from remem.model import Kind
from remem.store.roles import Scope
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.clock import T0, Clock, at
from tests.support.llm import llm_config

DIM = 64
CONTEXT = "Earlier in this session"  # the heading of the context turns in a prompt


def test_a_fact_drawn_from_a_turn_erased_while_the_model_answered_is_not_stored(
    db: str,
) -> None:
    started, release = threading.Event(), threading.Event()
    shown: list[str] = []

    def model(request: dict[str, Any]) -> Reply:
        system = str(request["messages"][0]["content"])
        user = str(request["messages"][-1]["content"])
        if "durable facts" in system and CONTEXT in user and not started.is_set():
            shown.append(user)
            started.set()  # the job for the second turn is waiting for the model now
            release.wait(20)
            # the model restates the earlier turn, as a fact of the new one
            fact = {"text": "Ana lives in Lisbon.", "attribute": "home city",
                    "value": "Lisbon", "event": 1}  # fmt: skip
            return Reply.json({"facts": [fact]})
        return memory_model(request)

    with ScriptedLLM(model) as llm:
        config = llm_config(llm, {"semantic": {}})
        clock = Clock(T0 + timedelta(days=30))
        with Memory.open(db, embedder=HashEmbedder(DIM), config=config, clock=clock) as mem:
            mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                          time=at(0))  # fmt: skip
            mem.process()
            (home,) = mem.records(actor="ana")
            mem.add_event(actor="ana", session="s1", role="user",
                          text="I walk to work from there.", time=at(1))  # fmt: skip
            worker = threading.Thread(target=mem.process)
            worker.start()
            try:
                assert started.wait(20)
                report = mem.forget(record_id=home.id)
            finally:
                release.set()
                worker.join(30)
            assert report.verified
            assert "I live in Lisbon." in shown[0]  # the model was shown the erased turn
            texts = [r.text for r in mem.records(actor="ana", all=True)]
            assert texts and not any("lisbon" in t.lower() for t in texts), texts
            assert any("walk to work" in t for t in texts)  # the new turn still made its fact


SUMMARISED = {"strategies": {"offline": {}, "offline-summary": {}}}


def _older_deletion_job(mem: Memory, record_id: str, actor: str, now: datetime) -> int:
    """The row an older remem's `forget(record_id=...)` wrote as it began: running, its
    result noting the record's actor and nothing of its events."""
    store = mem.store
    params = {"tenant": mem.tenant, "target": "record", "key": record_id, "status": "running",
              "attempts": 0, "result": store.backend.json_param({"actor": actor}),
              "error": None, "at": store.backend.at(now), "actor": actor,
              "requested_by": None, "requester": None, "reason": None}  # fmt: skip
    with store.backend.transaction(mem.tenant) as db:
        row = db.execute(store.erasure.sql.LOG_DELETION, params).fetchone()
    return int(row["id"])


def test_a_record_forget_an_older_remem_left_running_makes_its_summaries_again(
    db: str,
) -> None:
    config = build(ConfigFile.model_validate(SUMMARISED), "test", Path.cwd())
    clock = Clock(T0 + timedelta(days=30))
    with Memory.open(db, embedder=HashEmbedder(DIM), config=config, clock=clock) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                      time=at(0))  # fmt: skip
        mem.add_event(actor="ana", session="s1", role="user", text="Book a quiet table.",
                      time=at(1))  # fmt: skip
        mem.process()
        home = next(r for r in mem.records(actor="ana") if r.field == "home city")
        summaries = [r for r in mem.records(actor="ana") if r.kind is Kind.SUMMARY]
        assert any("Lisbon" in r.text for r in summaries)
        # an older remem's forget: its job, then its erasure committed; then it was killed
        # before it made the summaries again
        job = _older_deletion_job(mem, home.id, "ana", clock())
        assert mem.store.erasure.forget_record(mem.tenant, home.id, clock()).verified
        clock.advance(seconds=RESUME_AFTER.total_seconds() + 60)
        mem.process()  # finishes the job, then makes the session's summary again
        done = mem.store.erasure.deletion(mem.tenant, job)
        assert done is not None and done["status"] == "done"
        summaries = [r for r in mem.records(actor="ana", all=True) if r.kind is Kind.SUMMARY]
        assert summaries and not any("Lisbon" in r.text for r in summaries), summaries
        assert any("quiet table" in r.text for r in summaries)


class RacingClock(Clock):
    """A clock that, at its first reading after `race` was set, runs it: another writer's
    turn at that moment of the work reading it."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.race: Callable[[], None] | None = None

    def __call__(self) -> datetime:
        run, self.race = self.race, None
        if run is not None:
            run()
        return self.now


def test_a_record_another_forget_erased_first_is_verified_by_what_the_job_knows(
    db: str,
) -> None:
    clock, embedder = RacingClock(T0 + timedelta(days=30)), HashEmbedder(DIM)
    with (
        Memory.open(db, embedder=embedder, clock=clock) as mem,
        Memory.open(db, embedder=embedder) as other,
    ):
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                      time=at(0))  # fmt: skip
        mem.process()
        (home,) = mem.records(actor="ana")
        first = []
        # the same forget sent twice (a retried request): the other one erases the record
        # after this one found it, before this one's erasure runs
        clock.race = lambda: first.append(other.forget(record_id=home.id))
        report = mem.forget(record_id=home.id)
        assert first and first[0].verified
        assert report.verified, report
        assert mem.records(actor="ana", all=True) == []
        assert [e.text for e in mem.events(actor="ana")] == [""]
        assert {j["status"] for j in mem.deletions()} == {"done"}


def test_a_record_stored_right_after_an_erasure_is_not_read_back_as_left(
    tmp_path: Path,
) -> None:
    """SQLite gives a new row max(rowid) + 1: the newest record's erased rowid. A record
    stored between the erasure's commit and its read-back takes it, with a vector and a
    full-text entry of its own, which the read-back must not take for the erased one's.
    (PostgreSQL keys both by the record's id.) The other writer runs when the erasing
    connection sends its first statement after that commit (SQLite's trace hook)."""
    db, embedder = str(tmp_path / "m.db"), HashEmbedder(DIM)
    with Memory.open(db, embedder=embedder) as mem, Memory.open(db, embedder=embedder) as other:
        mem.remember(actor="ana", text="Ana keeps bees on the roof.")
        home = mem.remember(actor="ana", text="Ana lives in Lisbon.")  # the newest rowid
        conn = mem.store.backend.conn  # type: ignore[attr-defined]
        seen: list[str] = []

        def after_the_commit(sql: str) -> None:
            if seen[-2:] == ["erased", "COMMIT"]:
                other.remember(actor="bob", text="Bob rides a red bicycle.")
                seen.append("raced")
            elif "INSERT INTO history" in sql and "'DELETE'" in sql and not seen:
                seen.append("erased")
            elif seen == ["erased"] and sql.strip() == "COMMIT":
                seen.append("COMMIT")

        conn.set_trace_callback(after_the_commit)
        try:
            report = mem.forget(record_id=home.id)
        finally:
            conn.set_trace_callback(None)
        assert seen == ["erased", "COMMIT", "raced"]
        assert report.verified, report
        (job,) = mem.deletions()
        assert job["status"] == "done"
        # the other writer's record is whole: its full-text entry and its vector
        (bike,) = mem.records(actor="bob")
        hits = mem.store.search.search_records(Scope(mem.tenant, "bob"), "bicycle", 5)
        assert [h.id for h in hits] == [bike.id]
        assert set(mem.store.search.record_vectors(mem.tenant, [bike.id], embedder.name)) == {
            bike.id
        }


def test_a_vector_file_written_behind_an_erasure_is_erased_by_its_retry(tmp_path: Path) -> None:
    """Another process's recall read the scope's vectors before a record's erasure
    committed and writes its vector file (a cache beside the SQLite file) after the
    erasure removed the scope's files: the read-back finds the erased vector in it. That
    writer removes its file once it sees the erasure; until then, the retry must remove
    it and read back again, though the record's row is gone. The three turns are pinned
    with SQLite's trace hook on each connection: the recall stops before it ends its read;
    the erasure's first read-back lets it go on until its file is written; the file's
    writer waits, before it checks the scope, for the erasure's next write."""
    db, embedder = str(tmp_path / "m.db"), HashEmbedder(DIM)
    with Memory.open(db, embedder=embedder) as mem:
        home = mem.remember(actor="ana", text="Ana lives in Lisbon.")
    shutil.rmtree(db + ".vectors", ignore_errors=True)  # caches only: a cold machine
    read, go_on, erased_again = threading.Event(), threading.Event(), threading.Event()
    with Memory.open(db, embedder=embedder) as mem, Memory.open(db, embedder=embedder) as other:
        files = mem.store.search.vector_files  # type: ignore[attr-defined]
        path = files.path(mem.tenant, "ana", "records")
        loading: list[str] = []

        def reader(sql: str) -> None:
            thread = threading.current_thread().name
            if thread == "remem-vector-file" and not erased_again.is_set():
                erased_again.wait(20)  # the file's writer, before it checks the scope
            elif thread == "recall" and "FROM record_vectors" in sql and "ORDER BY" in sql:
                loading.append(sql)
            elif thread == "recall" and loading and sql.strip() == "COMMIT" and not read.is_set():
                read.set()  # the scope's vectors are read, the read not yet ended
                go_on.wait(20)

        seen: list[str] = []

        def eraser(sql: str) -> None:
            if "INSERT INTO history" in sql and "'DELETE'" in sql and not seen:
                seen.append("erased")
            elif seen == ["erased"] and sql.strip() == "COMMIT":
                seen.append("COMMIT")
            elif seen == ["erased", "COMMIT"]:  # the first read-back: the files are gone
                seen.append("read back")
                go_on.set()
                deadline = time.monotonic() + 20
                while not path.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)  # the recall's file being written
                seen.append("file" if path.exists() else "no file")
            elif seen[-1:] == ["file"] and sql.startswith("BEGIN IMMEDIATE"):
                seen.append("next write")
                erased_again.set()

        other.store.backend.conn.set_trace_callback(reader)  # type: ignore[attr-defined]
        mem.store.backend.conn.set_trace_callback(eraser)  # type: ignore[attr-defined]
        recall = threading.Thread(
            target=lambda: other.recall(actor="ana", query="where does ana live"), name="recall"
        )
        recall.start()
        try:
            assert read.wait(20)
            report = mem.forget(record_id=home.id)
        finally:
            go_on.set()
            erased_again.set()
            recall.join(30)
            mem.store.backend.conn.set_trace_callback(None)  # type: ignore[attr-defined]
            other.store.backend.conn.set_trace_callback(None)  # type: ignore[attr-defined]
        assert seen == ["erased", "COMMIT", "read back", "file", "next write"], seen
        assert report.verified and report.attempts == 2, report  # the first found the file
        assert mem.deletions()[0]["status"] == "done"
        other.store.search.sync_vector_files()  # type: ignore[attr-defined]
        assert files.holding(mem.tenant, "ana", {home.id}) == 0
