"""The same statement remembered at once by two writers (two processes, two servers):
one record, not two. Each writer decides against the records it reads, then writes; two
that decide at once both found nothing to restate, and both inserted (a hardening run:
16 threads over HTTP left 2 records on PostgreSQL, 2-3 on SQLite under `--workers 2`).
The write now checks again, one writer of the scope at a time (`Write.fresh_since`).

Two `Memory` objects on one database stand for the two processes: each has its own
connections and its own process-local locks. Writer A is paused between its decision and
its write (its store's `records.apply` waits for writer B to finish), which is the
race's order, every time."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from remem import Memory
from remem.embed import HashEmbedder

TEXT = "Carol plays chess on Sundays"


def _paused_until(mem: Memory, go: threading.Event, decided: threading.Event) -> None:
    """Make `mem`'s first write wait for `go` (after saying, by `decided`, that it got there)."""
    records = mem.store.records
    real = records.apply
    calls = [0]

    def apply(write: Any) -> None:
        calls[0] += 1
        if calls[0] == 1:
            decided.set()
            assert go.wait(30), "the test never let writer A go"
        real(write)

    records.apply = apply  # type: ignore[method-assign]


def test_two_writers_of_one_statement_make_one_record(db: str) -> None:
    a = Memory.open(db, embedder=HashEmbedder())
    b = Memory.open(db, embedder=HashEmbedder())
    go, decided = threading.Event(), threading.Event()
    try:
        _paused_until(a, go, decided)
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(a.remember, actor="carol", text=TEXT)
            assert decided.wait(30)  # A decided: nothing to restate; it waits to write
            second = b.remember(actor="carol", text=TEXT)  # B decides the same, and writes
            go.set()
            kept = first.result(timeout=30)
        assert kept.id == second.id  # A restates what B stored instead of a second record
        active = [r for r in b.records(actor="carol") if r.text == TEXT]
        assert [r.id for r in active] == [second.id]
        # a statement said again later is still one record
        assert b.remember(actor="carol", text=TEXT).id == second.id
        assert len([r for r in a.records(actor="carol") if r.text == TEXT]) == 1
    finally:
        a.close()
        b.close()


def test_a_statement_that_replaces_one_of_the_same_words_still_writes(db: str) -> None:
    """A decision that closes the record it finds (a new field value said in the same
    words) is not taken for a race: it is written once, at the first attempt."""
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        old = mem.remember(actor="dan", text="Dan's city is Porto", field="city", value="Porto")
        new = mem.remember(actor="dan", text="Dan's city is Lisbon", field="city", value="Lisbon")
        assert new.id != old.id and mem.get(old.id).status.value != "active"
        again = mem.remember(actor="dan", text="Dan's city is Lisbon", field="city", value="Lisbon")
        assert again.id == new.id
