"""Embedded mode without the trap: a recall first runs what is pending for its actor.

A user who adds events and recalls without `process()` gets the records anyway:
recall runs up to `CATCH_UP_JOBS` of the actor's ready jobs (leased, as a worker
would), says in `notes` and `explain` what is still pending, leaves jobs another
worker holds alone, and runs nothing of other actors. Each case on both backends.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.memory.aio import AsyncMemory
from remem.memory.catch_up import CATCH_UP_JOBS
from remem.store.flows.jobs import BACKLOG_SCAN
from tests.support.backends import both_backends
from tests.support.clock import Clock, at

pytestmark = both_backends


def _say(mem: Memory, actor: str, text: str, day: float = 0) -> str:
    return mem.add_event(actor=actor, session="s1", role="user", text=text, time=at(day))


def _kinds(packet: object) -> list[str]:
    return [it.kind for it in packet.records]  # type: ignore[attr-defined]


def test_recall_without_process_hands_back_the_records(mem: Memory) -> None:
    _say(mem, "ola", "I'm vegetarian, so please no meat.")
    packet = mem.recall(actor="ola", query="is she vegetarian?", explain=True)
    records = [it for it in packet.records if it.kind != "event"]
    assert records, f"only raw events came back: {packet.records}"
    assert "vegetarian" in records[0].text.lower()
    assert mem.jobs(status="pending", actor="ola") == []
    assert packet.explain is not None and packet.explain["pending"] == {"ran": 1, "left": 0}
    assert not any("pending" in n for n in packet.notes)


def test_only_the_recalled_actors_jobs_run(mem: Memory) -> None:
    _say(mem, "ola", "I live in Faro.")
    _say(mem, "bo", "I live in Porto.")
    mem.recall(actor="ola", query="does she live in Faro?")
    assert [j.status for j in mem.jobs(actor="ola")] == ["done"]
    assert [j.status for j in mem.jobs(actor="bo")] == ["pending"]


def test_a_bounded_catch_up_says_what_is_left(mem: Memory) -> None:
    rows = [
        {"actor": "ola", "session": "s1", "role": "user", "time": at(0, hours=i),
         "text": f"I visited museum number {i} in Lisbon."}
        for i in range(CATCH_UP_JOBS + 5)
    ]  # fmt: skip
    mem.add_events(rows)
    packet = mem.recall(actor="ola", query="museums", explain=True)
    assert packet.explain is not None
    ran, left = packet.explain["pending"]["ran"], packet.explain["pending"]["left"]
    # at most CATCH_UP_JOBS, fewer when CATCH_UP_SECONDS ran out first (a slow machine)
    assert 0 < ran <= CATCH_UP_JOBS and ran + left == CATCH_UP_JOBS + 5
    assert any(f"{left} extraction job(s) of actor 'ola' still pending" in n for n in packet.notes)
    for _ in range(5):  # each recall runs more, until none is left
        again = mem.recall(actor="ola", query="museums")
        if not any("pending" in n for n in again.notes):
            break
    assert mem.jobs(status="pending", actor="ola") == []


def test_an_actors_job_behind_a_long_tenant_backlog_is_found(mem: Memory) -> None:
    """Past BACKLOG_SCAN waiting jobs in the tenant, the backlog is read from the actor's
    own events instead: the actor's job is still found and run, the others left."""
    rows = [
        {"actor": "bo", "session": "s1", "role": "user", "time": at(0), "text": f"Note {i}."}
        for i in range(BACKLOG_SCAN)
    ]
    mem.add_events(rows)
    _say(mem, "ola", "I live in Faro.", day=1)
    packet = mem.recall(actor="ola", query="does she live in Faro?", explain=True)
    assert packet.explain is not None and packet.explain["pending"] == {"ran": 1, "left": 0}
    assert len(mem.jobs(status="pending", actor="bo", limit=BACKLOG_SCAN)) == BACKLOG_SCAN


def test_a_job_another_worker_holds_is_left_to_it(mem: Memory, clock: Clock) -> None:
    _say(mem, "ola", "I live in Faro.")
    held = mem.store.jobs.claim_jobs(clock(), 10, lease_seconds=600)  # a worker leased it
    assert len(held) == 1
    started = time.monotonic()
    packet = mem.recall(actor="ola", query="does she live in Faro?", explain=True)
    assert time.monotonic() - started < 5  # never waits for the other worker
    assert [j.status for j in mem.jobs(actor="ola")] == ["running"]
    assert packet.explain is not None and packet.explain["pending"] == {"ran": 0, "left": 1}
    assert any("1 extraction job(s) of actor 'ola' still pending" in n for n in packet.notes)
    clock.advance(seconds=601)  # that worker died: its lease ran out
    mem.recall(actor="ola", query="does she live in Faro?")
    assert [j.status for j in mem.jobs(actor="ola")] == ["done"]


def test_a_memory_without_catch_up_leaves_the_jobs_to_the_worker(
    db_path: Path | str, clock: Clock
) -> None:
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock, catch_up=0) as mem:
        _say(mem, "ola", "I live in Faro.")
        packet = mem.recall(actor="ola", query="does she live in Faro?", explain=True)
        assert _kinds(packet) == ["event"]
        assert [j.status for j in mem.jobs(actor="ola")] == ["pending"]
        assert packet.explain is not None and packet.explain["pending"] == {"ran": 0, "left": 1}
        assert any("still pending" in n for n in packet.notes)


def test_async_recall_catches_up_too(db_path: Path | str, clock: Clock) -> None:
    async def main() -> list[str]:
        opened = AsyncMemory.open(db_path, embedder=HashEmbedder(), clock=clock)
        async with opened as mem:
            await mem.add_event(actor="ola", session="s1", role="user", text="I live in Faro.")
            packet = await mem.recall(actor="ola", query="does she live in Faro?")
            return _kinds(packet)

    kinds = asyncio.run(main())
    assert kinds and kinds[0] != "event", kinds


def test_catch_up_bad_bound_is_refused(db_path: Path | str) -> None:
    from remem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="catch_up"):
        Memory.open(db_path, embedder=HashEmbedder(), catch_up=-1)


def test_nothing_pending_needs_no_write_lock(tmp_path: Path, db_backend: str) -> None:
    """With nothing pending, recall only reads: a writer holding SQLite's lock does not
    hold it up (the check is one indexed read, not a claim)."""
    if db_backend != "sqlite":
        pytest.skip("SQLite's file write lock")
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=HashEmbedder(), ids=counter_ids()) as mem:
        _say(mem, "ola", "I live in Faro.")
        mem.process()
        other = sqlite3.connect(path, timeout=0)
        other.execute("BEGIN IMMEDIATE")  # another process writing, for a while
        try:
            started = time.monotonic()
            packet = mem.recall(actor="ola", query="does she live in Faro?")
            assert time.monotonic() - started < 2
            assert packet.records
        finally:
            other.rollback()
            other.close()
