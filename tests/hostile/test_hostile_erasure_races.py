"""Erasures racing the work that derives data from what they erase, and erasures cut
short by a crash, on both backends.

Did not hold: a vector made from an event's text read before a record erasure emptied
it (by the vector catch-up, or a job's embedding of its batch) was stored after the
erasure, which had already verified: the erased text's embedding stayed, on SQLite and
PostgreSQL. Now an event whose text was emptied takes no vector (on PostgreSQL the
insert also locks the event row against an erasure in flight).

Did not either: a forget killed (SIGKILL) before its erasure committed left its
deletion job `running` and everything of it in place, after any restart, until a
forget in the same tenant ran `RESUME_AFTER` later: no worker and no `process()` took
it up. Now both finish such jobs, of every tenant. And one killed after the record's
erasure committed, before the summaries that quoted its event were made again, was
finished with those summaries in place (the erased text with them) and marked done:
the record was gone, so nothing told which summaries to make again. A job's start now
notes the record's events, and a resumed job makes their summaries again.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.embed.base import Vectors
from remem.errors import EmbedderUnavailable
from remem.lifecycle.erasure import RESUME_AFTER
from remem.memory.backfill import fill_vectors
from remem.model import Kind
from remem.pipeline.worker import Worker
from remem.store.roles import Scope
from tests.support.clock import Clock
from tests.support.processes import child_env

DIM = 64
SECRET = "My locker is number 12"


class Outage(HashEmbedder):
    """An embeddings server that is down until `up`, then calls `before` once (if set)
    as it embeds a text holding 'locker': the moment an erasure races it."""

    may_fail = True

    def __init__(self) -> None:
        super().__init__(DIM)
        self.up = False
        self.before: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.up:
            raise EmbedderUnavailable("the embeddings server is down")
        if self.before is not None and any("locker" in t for t in texts):
            run, self.before = self.before, None
            run()
        return super().embed(texts)


def test_a_vector_caught_up_while_its_event_is_erased_is_not_stored(db: str) -> None:
    outage, hashed = Outage(), HashEmbedder(DIM)
    with Memory.open(db, embedder=outage) as mem, Memory.open(db, embedder=hashed) as other:
        event_id = mem.add_event(actor="alice", session="s1", role="user", text=SECRET)
        mem.process()  # the record is made; neither it nor the event has a vector yet
        (record,) = mem.records(actor="alice")
        reports = []
        outage.up = True
        outage.before = lambda: reports.append(other.forget(record_id=record.id))
        fill_vectors(mem.deps, 100)  # reads the event's text, then the erasure commits
        assert reports and reports[0].verified
        (event,) = mem.events(actor="alice")
        assert event.id == event_id and event.text == ""
        query = hashed.embed([SECRET])[0]
        near = mem.store.search.vector_search_events(
            Scope(mem.tenant, "alice"), outage.name, query, 10, datetime.now(UTC)
        )
        assert near == []


def _killed_forget(mem: Memory, clock: Clock) -> int:
    """What a forget of alice killed before its erasure committed leaves: her data, and
    its deletion job logged as running; then the clock past `RESUME_AFTER`."""
    mem.add_event(actor="alice", session="s1", role="user", text=SECRET)
    mem.process()
    assert mem.records(actor="alice")
    left = mem.store.erasure.start_deletion(mem.tenant, "actor", "alice", clock())
    clock.now += RESUME_AFTER + timedelta(minutes=1)
    return left


def _status(mem: Memory, job_id: int) -> str:
    job = mem.store.erasure.deletion(mem.tenant, job_id)
    assert job is not None
    return str(job["status"])


def test_a_forget_killed_before_it_erased_is_carried_out_by_process(db: str, clock: Clock) -> None:
    with Memory.open(db, embedder=HashEmbedder(DIM), clock=clock) as mem:
        left = _killed_forget(mem, clock)
        mem.process()
        assert mem.events(actor="alice") == [] and mem.records(actor="alice") == []
        assert _status(mem, left) == "done"


def test_a_worker_carries_out_a_forget_killed_in_another_tenant(db: str, clock: Clock) -> None:
    embedder = HashEmbedder(DIM)
    with (
        Memory.open(db, tenant="acme", embedder=embedder, clock=clock) as acme,
        Memory.open(db, embedder=embedder, clock=clock) as mem,
    ):
        left = _killed_forget(acme, clock)
        worker = Worker(mem.pipeline, idle_seconds=0.05)
        worker.start()
        try:
            deadline = time.monotonic() + 10
            while _status(acme, left) == "running":
                assert time.monotonic() < deadline, "the worker did not finish the deletion job"
                time.sleep(0.02)
        finally:
            worker.stop()
        assert acme.events(actor="alice") == [] and acme.records(actor="alice") == []
        assert _status(acme, left) == "done"


SUMMARISED = {"strategies": {"offline": {}, "offline-summary": {}}}
KILLED_AT_THE_SUMMARIES = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from remem import Memory
    from remem.config.config import ConfigFile, build
    from remem.embed import HashEmbedder
    from remem.lifecycle import erasure
    erasure.regenerate_summaries = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
    config = build(ConfigFile.model_validate(%r), "test", Path.cwd())
    with Memory.open(sys.argv[1], embedder=HashEmbedder(%d), config=config) as mem:
        mem.forget(record_id=sys.argv[2])
""") % (SUMMARISED, DIM)


def test_a_forget_killed_before_the_summaries_were_made_again_makes_them(
    db: str, clock: Clock
) -> None:
    config = build(ConfigFile.model_validate(SUMMARISED), "test", Path.cwd())
    with Memory.open(db, embedder=HashEmbedder(DIM), config=config, clock=clock) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.")
        mem.add_event(actor="ana", session="s1", role="user", text="Book a quiet table.")
        mem.process()
        home = next(r for r in mem.records(actor="ana") if r.field == "home city")
        killed = subprocess.run([sys.executable, "-c", KILLED_AT_THE_SUMMARIES, db, home.id],
                                env=child_env(), timeout=60)  # fmt: skip
        assert killed.returncode == -signal.SIGKILL
        (left,) = mem.deletions()
        assert (
            left["status"] == "running"
            and mem.store.records.get_record(mem.tenant, home.id) is None
        )
        clock.now = datetime.now(UTC) + RESUME_AFTER + timedelta(minutes=1)
        mem.process()  # finishes the job, then makes the session's summary again
        summaries = [r for r in mem.records(actor="ana", all=True) if r.kind is Kind.SUMMARY]
        assert summaries and all("Lisbon" not in r.text for r in summaries)
        assert _status(mem, int(left["id"])) == "done"
