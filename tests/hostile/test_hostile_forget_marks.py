"""`forget(actor)`'s read-back mark over checkpoints, tool calls, request ids and vector files.

Written against a gap left by tests/hostile/test_hostile_forget_under_writes.py: these
had no key to mark, so the read-back counted all of the actor's rows of them, and a
writer storing one between the erasure's commit and its read-back (a fresh start) made
the report `verified: false`. SQLite's vector files were counted whole, so a recall
rebuilding them from fresh rows right after the commit did the same. Now PostgreSQL
numbers those rows (schema 10) and counts those at or below the mark; SQLite, whose
erasure holds the write lock, counts at most what the erasure left in its transaction,
and only vector files read from a scope version below the erasure's. A row from before
the erasure that survives still leaves it unverified.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from remem import Memory
from remem.thread.api import begin_tool_call, checkpoint_list, checkpoint_save
from remem.thread.checkpoints import CheckpointState


def _thread_state(mem: Memory, workflow: str, request_id: str) -> None:
    """One checkpoint, one tool call and one request id of alice."""
    checkpoint_save(mem, actor="alice", workflow=workflow, state=CheckpointState(step="pay"))
    begin_tool_call(mem, actor="alice", workflow=workflow, idempotency_key=f"{workflow}-k")
    item = {"op": "create", "request_id": request_id, "actor": "alice", "text": "Alice is tall"}
    mem.write_records([item])


def _before_each_read_back(mem: Memory, writes: Callable[[], None]) -> None:
    """Run `writes` between each erasure's commit and its read-back: the race made certain."""
    store: Any = mem.store.erasure.parts
    verify = store.verify_actor

    def written_then_read_back(*args: Any) -> Any:
        writes()
        return verify(*args)

    store.verify_actor = written_then_read_back


def test_thread_state_and_request_ids_stored_after_the_commit_are_a_fresh_start(
    mems: list[Memory],
) -> None:
    mem, other = mems[0], mems[1]
    _thread_state(mem, "refund", "r1")

    def writes() -> None:
        _thread_state(other, "rebook", "r2")  # a new workflow
        _thread_state(other, "refund", "r1")  # the erased workflow and request id, again

    _before_each_read_back(mem, writes)
    report = mem.forget(actor="alice")
    assert report.verified, report.remaining
    assert report.attempts == 1 and not any(report.remaining.values())
    assert (report.deleted["checkpoints"], report.deleted["tool_calls"]) == (1, 1)
    assert report.deleted["requests"] == 1
    # the fresh start is kept, not erased
    assert {c.workflow for c in checkpoint_list(other, actor="alice")} == {"refund", "rebook"}


class _Leaving:
    """An erasure's statements with one that deletes nothing (as a defective erasure)."""

    def __init__(self, sql: Any, name: str) -> None:
        self._sql, self._name = sql, name

    def __getattr__(self, name: str) -> Any:
        statement = getattr(self._sql, name)
        return f"{statement} AND 0 = 1" if name == self._name else statement


@pytest.mark.parametrize(
    ("left", "statement"),
    [("checkpoints", "FORGET_CHECKPOINTS"), ("tool_calls", "FORGET_TOOL_CALLS"),
     ("requests", "FORGET_ACTOR_REQUESTS")],
)  # fmt: skip
def test_a_thread_row_from_before_the_forget_that_survives_leaves_it_unverified(
    mems: list[Memory], left: str, statement: str
) -> None:
    mem, other = mems[0], mems[1]
    _thread_state(mem, "refund", "r1")
    erasure: Any = mem.store.erasure
    erasure.sql = _Leaving(erasure.sql, statement)
    attempts: list[int] = []

    def writes() -> None:  # fresh rows beside the survivors, each attempt
        attempts.append(len(attempts) + 1)
        _thread_state(other, f"rebook{attempts[-1]}", f"r{attempts[-1] + 1}")

    _before_each_read_back(mem, writes)
    report = mem.forget(actor="alice")
    assert not report.verified and report.attempts == 3
    # the third attempt's survivors: the first row and those the first two attempts'
    # writers stored, all before it; not the row stored after it committed
    assert report.remaining[left] == 3, report.remaining


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)  # vector files are SQLite's
def test_vector_files_rebuilt_from_fresh_rows_after_the_commit_are_a_fresh_start(
    mems: list[Memory],
) -> None:
    mem, other = mems[0], mems[1]
    for n in range(3):
        mem.remember(actor="alice", text=f"Alice's locker is {n}")
    mem.recall(actor="alice", query="locker")  # the scope's vector files, from these rows
    store: Any = mem.store.search
    store.sync_vector_files()  # written beside the recall: wait for them
    assert store.vector_files.holding(mem.deps.tenant, "alice") >= 1
    drop = store._drop_scope_vectors

    def dropped_then_rebuilt(tenant: str, actor: str) -> None:
        drop(tenant, actor)
        other.remember(actor="alice", text="Alice's new locker is 40")
        other.recall(actor="alice", query="locker")  # written again, from the fresh row
        other.store.search.sync_vector_files()  # type: ignore[attr-defined]

    store._drop_scope_vectors = dropped_then_rebuilt
    report = mem.forget(actor="alice")
    assert store.vector_files.holding(mem.deps.tenant, "alice") >= 1  # the fresh files
    assert report.verified, report.remaining
    assert report.attempts == 1 and report.remaining["vector_files"] == 0


@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_a_vector_file_from_before_the_forget_that_survives_leaves_it_unverified(
    mems: list[Memory],
) -> None:
    mem = mems[0]
    mem.remember(actor="alice", text="Alice's locker is 12")
    mem.recall(actor="alice", query="locker")
    store: Any = mem.store.search
    store.sync_vector_files()
    assert store.vector_files.holding(mem.deps.tenant, "alice") >= 1
    store._drop_scope_vectors = lambda tenant, actor: None  # a defective erasure keeps them
    report = mem.forget(actor="alice")
    assert not report.verified
    assert report.remaining["vector_files"] >= 1, report.remaining
    assert report.attempts == 3
