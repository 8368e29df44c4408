"""`forget(actor)` under constant writes of the same actor, on both backends.

Written against a defect: the read-back after the erasure counted every row of the
actor, so rows a writer stored after the erasure committed (a fresh start) counted
as survivors; under constant writes all three attempts came back `verified: false`,
a false alarm. Now the erasure notes, in its transaction, the largest key of each
kind of the actor's rows (SQLite: those it left, none: 0; PostgreSQL: those there
when it began), and the read-back counts only rows at or below it: a row written
meanwhile has a larger key. A row from before the erasure that survives still
makes the report unverified.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from remem import Memory


def _writing(mem: Memory, kind: str, stop: threading.Event, errors: list[BaseException],
             written: list[str]) -> threading.Thread:  # fmt: skip
    def write() -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                if kind == "event":
                    said = f"I prefer aisle seats on flight {n}"
                    event = mem.add_event(actor="alice", session="s", role="user", text=said)
                    written.append(event)
                else:
                    written.append(mem.remember(actor="alice", text=f"Alice's locker is {n}").id)
        except BaseException as exc:
            errors.append(exc)

    return threading.Thread(target=write)


def test_forget_actor_under_constant_writes_is_verified(mems: list[Memory]) -> None:
    writer_a, writer_b, eraser = mems
    stop, errors, written = threading.Event(), [], []  # type: ignore[var-annotated]
    threads = [_writing(writer_a, "event", stop, errors, written),
               _writing(writer_b, "record", stop, errors, written)]  # fmt: skip
    for t in threads:
        t.start()
    try:
        while len(written) < 20:
            time.sleep(0.01)
        reports = [eraser.forget(actor="alice") for _ in range(3)]
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    assert all(r.verified for r in reports), [r.remaining for r in reports]
    assert reports[0].deleted["events"] > 0 and reports[0].deleted["records"] > 0
    assert [r.attempts for r in reports] == [1, 1, 1]
    # the writers went on after each forget: a fresh start, kept
    assert eraser.events(actor="alice") or eraser.records(actor="alice", all=True)


def _leaving(mem: Memory, name: str) -> None:
    """Make the store's erasure leave the rows `name` would delete (as a defective one)."""
    store: Any = mem.store.erasure.parts
    parts = {"events": "erase_actor_events", "records": "erase_records"}
    if name == "events":
        setattr(store, parts[name], lambda db, tenant, actor: (0, 0))
    else:
        setattr(store, parts[name], lambda db, tenant, found: {"records": 0, "vectors": 0,
                                                               "fulltext": 0})  # fmt: skip


@pytest.mark.parametrize("left", ["events", "records"])
def test_a_row_from_before_the_forget_that_survives_leaves_it_unverified(
    mems: list[Memory], left: str
) -> None:
    mem = mems[0]
    mem.add_event(actor="alice", session="s1", role="user", text="I live in Porto")
    mem.remember(actor="alice", text="Alice's locker is 12")
    _leaving(mem, left)
    report = mem.forget(actor="alice")
    assert not report.verified
    assert report.remaining[left] >= 1, report.remaining
    assert report.attempts == 3


def test_rows_stored_after_the_erasure_committed_are_a_fresh_start(mems: list[Memory]) -> None:
    """The race made certain: another writer stores an event and a record of the actor
    between the erasure's commit and its read-back."""
    mem, other = mems[0], mems[1]
    for n in range(3):
        mem.add_event(actor="alice", session="s", role="user", text=f"I live in Porto {n}")
        mem.remember(actor="alice", text=f"Alice's locker is {n}")
    store: Any = mem.store.erasure.parts
    verify, fresh = store.verify_actor, []

    def written_then_read_back(*args: Any) -> Any:
        fresh.append(other.add_event(actor="alice", session="s", role="user", text="Hi again"))
        fresh.append(other.remember(actor="alice", text="Alice's new locker is 40").id)
        return verify(*args)

    store.verify_actor = written_then_read_back
    report = mem.forget(actor="alice")
    assert report.verified, report.remaining
    assert report.attempts == 1 and not any(report.remaining.values())
    assert (report.deleted["events"], report.deleted["records"]) == (3, 3)
    kept = [e.id for e in mem.events(actor="alice")] + [r.id for r in mem.records(actor="alice")]
    assert set(fresh) <= set(kept)  # the fresh start is kept, not erased
