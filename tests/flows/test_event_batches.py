"""Batches larger than one INSERT statement (`EVENT_ROWS` events) behave as one batch, on
both backends: every new event is stored once with its job and its full-text entry,
repeats of stored or earlier events are not stored again, and a batch that is refused
(a taken id, an invalid row) writes nothing at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from remem.errors import ConflictError, InvalidInput
from remem.memory.memory import Memory
from remem.store.postgres import sql as postgres_sql
from remem.store.roles import Scope
from remem.store.sqlite import sql as sqlite_sql

ROWS = max(sqlite_sql.EVENT_ROWS, postgres_sql.EVENT_ROWS)
SIZE = 2 * ROWS + 57  # three statements, the last one short


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=None) as m:
        yield m


def row(i: int, text: str | None = None) -> dict[str, Any]:
    return {
        "actor": "bob" if i % 5 == 0 else "alice",
        "session": f"s{i % 3}",
        "role": "user",
        "text": text or f"note {i} about the zebra{i} trip",
        "event_id": f"e{i}",
    }


def stored(mem: Memory) -> dict[str, str]:
    return {e.id: e.text for a in ("alice", "bob") for e in mem.events(actor=a, limit=10_000)}


def test_a_batch_of_several_statements_stores_each_new_event_once(mem: Memory) -> None:
    evens = [row(i) for i in range(0, SIZE, 2)]
    assert mem.add_events(evens) == [True] * len(evens)
    batch = [row(i) for i in range(SIZE)]
    batch[SIZE // 2 : SIZE // 2] = [row(1), row(3)]  # repeats of events earlier in the batch
    ids = [r["event_id"] for r in batch]
    new = [int(e[1:]) % 2 == 1 and e not in ids[:i] for i, e in enumerate(ids)]
    assert mem.add_events(batch) == new
    events = stored(mem)
    assert events == {f"e{i}": f"note {i} about the zebra{i} trip" for i in range(SIZE)}
    jobs = [j.event_id for j in mem.jobs(limit=10_000)]
    assert sorted(jobs) == sorted(events)  # one job each
    for i in (1, ROWS + 1, SIZE - 2):  # found by its words, from every statement
        hits = mem.store.search.search_events(Scope(mem.tenant, row(i)["actor"]), f"zebra{i}", 5)
        assert [h.id for h in hits] == [f"e{i}"]


@pytest.mark.parametrize("at", [5, ROWS + 3, SIZE - 1])
def test_a_taken_id_anywhere_in_the_batch_writes_none_of_it(mem: Memory, at: int) -> None:
    mem.add_events([row(9_999, text="the first event under this id")])
    before, jobs_before = stored(mem), len(mem.jobs(limit=10_000))
    batch = [row(i) for i in range(SIZE)]
    batch[at] = row(9_999, text="another event under a taken id")
    with pytest.raises(ConflictError, match="'e9999' is already used"):
        mem.add_events(batch)
    assert stored(mem) == before
    assert len(mem.jobs(limit=10_000)) == jobs_before


def test_an_invalid_row_late_in_the_batch_writes_none_of_it(mem: Memory) -> None:
    batch = [row(i) for i in range(SIZE)]
    batch[SIZE - 3] = {**row(SIZE - 3), "role": "narrator"}
    with pytest.raises(InvalidInput, match="role must be one of"):
        mem.add_events(batch)
    assert stored(mem) == {}
    assert mem.jobs(limit=10_000) == []
