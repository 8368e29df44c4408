"""Corrections of one record at once: one supersedes it, the others are told to retry.

Written against a defect found on PostgreSQL: eight threads correcting the same
active record (`Memory.update`, HTTP batch-update) each read it active, and each
closed it again with its own successor, so one record had eight active successors
and the field "office" eight current values. A record is superseded only while it is
active, in the transaction that closes it; a writer that finds it closed already gets
a `ConflictError` (HTTP 409) and nothing of its write is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import ConflictError
from remem.model import Status

WRITERS = 8


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def _correct_at_once(mem: Memory, old_id: str) -> list[str]:
    """`WRITERS` threads correcting `old_id` at once: each one's new id, or "conflict"."""
    start = threading.Barrier(WRITERS)
    outcomes: list[str] = []

    def correct(i: int) -> None:
        start.wait()
        try:
            outcomes.append(mem.update(old_id, text=f"Ana's office is in building {i + 2}").id)
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=correct, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_concurrent_corrections_of_one_record_leave_one_successor(mem: Memory) -> None:
    for round_ in range(3):  # a race: three rounds, each must hold
        actor = f"ana{round_}"
        old = mem.remember(actor=actor, text="Ana's office is in building 1", field="office",
                           value="building 1")  # fmt: skip
        outcomes = _correct_at_once(mem, old.id)
        made = [o for o in outcomes if o != "conflict"]
        assert len(made) == 1 and len(outcomes) == WRITERS, outcomes
        records = mem.records(actor=actor, all=True)
        active = [r for r in records if r.status is Status.ACTIVE]
        assert [r.id for r in active] == made
        closed = mem.get(old.id)
        assert closed.status is Status.INVALID and closed.superseded_by == made[0]
        assert len(records) == 2  # nothing of a refused correction was stored
