"""A statement said again joins the record that already says it (issue 20): its event
enters the record's source, so provenance is whole and erasing the record reaches it,
through `Memory` on the store under test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.model import Record
from remem.store.roles import Store
from tests.support.clock import Clock
from tests.support.store import CLOCK_TIME

SAID = "I prefer window seats on flights."
START = datetime(2026, 4, 1, 9, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def mem(clocked_store: Store, clock: Clock) -> Memory:
    """Memory's clock moves by hand; the store stamps `updated_at` with its own."""
    return Memory(clocked_store, embedder=HashEmbedder(), clock=clock, ids=counter_ids())


def _said_twice(mem: Memory, clock: Clock) -> tuple[str, str, Record]:
    """Ana says the same preference in two sessions a day apart, each processed in turn;
    returns both event ids and the record as the first session left it."""
    first = mem.add_event(actor="ana", session="s1", role="user", text=SAID, time=clock())
    mem.process()
    (before,) = mem.records(actor="ana", all=True)
    clock.now = START + timedelta(days=1)
    again = mem.add_event(actor="ana", session="s2", role="user", text=SAID, time=clock())
    assert mem.process().noops == 1
    return first, again, before


def test_a_preference_said_again_joins_the_source_of_its_record(mem: Memory, clock: Clock) -> None:
    first, again, before = _said_twice(mem, clock)
    (rec,) = mem.records(actor="ana", all=True)
    assert rec.id == before.id
    assert rec.source.event_ids == (first, again)
    # nothing else of the record changes: no supersession, same text, authority, validity
    assert (rec.text, rec.authority, rec.valid_from, rec.valid_until, rec.status) == (
        before.text,
        before.authority,
        before.valid_from,
        before.valid_until,
        before.status,
    )
    assert rec.supersedes is None and rec.superseded_by is None
    assert before.updated_at == START and rec.updated_at == CLOCK_TIME  # it moved
    history = mem.history(rec.id)
    assert [h.action for h in history] == ["ADD", "SOURCE"]
    assert again in history[-1].reason and history[-1].at == START + timedelta(days=1)
    # the events know their record too (what `events_with_records` reads)
    assert set(mem.store.records.events_with_records(mem.tenant, [first, again])) == {first, again}


def test_forgetting_a_restated_record_erases_every_event_that_said_it(
    mem: Memory, clock: Clock
) -> None:
    first, again, before = _said_twice(mem, clock)
    report = mem.forget(record_id=before.id)
    assert report.verified, report.remaining
    assert report.deleted["event_texts"] == 2
    texts = {e.id: e.text for e in mem.events(actor="ana")}
    assert texts == {first: "", again: ""}
    assert mem.records(actor="ana", all=True) == []
    assert mem.recall(actor="ana", query="window seats").records == ()


def test_a_job_run_again_adds_nothing_twice(mem: Memory, clock: Clock) -> None:
    first, again, _ = _said_twice(mem, clock)
    (rec,) = mem.records(actor="ana", all=True)
    for event_id in (again, first):
        strategy = next(j.strategy for j in mem.jobs() if j.event_id == event_id)
        assert mem.store.jobs.requeue_job(mem.tenant, event_id, strategy)
    assert mem.process().jobs_done == 2
    (after,) = mem.records(actor="ana", all=True)
    assert after.source.event_ids == (first, again)
    assert after.updated_at == rec.updated_at
    assert [h.action for h in mem.history(after.id)] == ["ADD", "SOURCE"]


def test_a_statement_said_twice_in_one_batch_is_one_record_holding_both_events(
    mem: Memory, clock: Clock
) -> None:
    """Both turns are processed together: the second joins the record the first made in
    the same batch, and erasing it reaches both events."""
    first = mem.add_event(actor="ana", session="s1", role="user", text=SAID, time=clock())
    again = mem.add_event(
        actor="ana", session="s1", role="user", text=f"Just so you know, {SAID}", time=clock()
    )
    result = mem.process()
    assert (result.records_added, result.noops) == (1, 1)
    (rec,) = mem.records(actor="ana", all=True)
    assert rec.source.event_ids == (first, again)
    assert set(mem.store.records.events_with_records(mem.tenant, [first, again])) == {first, again}
    report = mem.forget(record_id=rec.id)
    assert report.verified and report.deleted["event_texts"] == 2
