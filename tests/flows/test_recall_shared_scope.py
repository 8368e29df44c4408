"""A recall skips the tenant's shared scope while it holds no records, and no longer.

Every recall also searches the tenant's approved procedures (`SHARED_ACTOR`); most
tenants have none, so `remem.recall.gather` looks at that scope's version first and
searches it only if it may hold records. What that must never cost: a procedure written
by this process or another, after recalls that found the scope empty, is found by the
next recall."""

from __future__ import annotations

from pathlib import Path

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.memory.memory import open_store
from remem.store.sqlite.sql import scope_token
from remem.store.sqlite.store import SQLiteStore
from tests.support.backends import both_backends
from tests.support.clock import Clock


@both_backends
def test_a_procedure_written_after_recalls_of_an_empty_scope_is_found(
    mem: Memory, db_path: Path | str, clock: Clock
) -> None:
    mem.remember(actor="alice", text="Alice books her travel in March")
    for _ in range(2):
        assert mem.recall(actor="alice", query="booking travel dates").records
    other = Memory(open_store(db_path), embedder=HashEmbedder(), clock=clock)  # another writer
    try:
        proposed = other.propose_procedure(text="Always confirm the travel dates before booking")
        found = [it.id for it in mem.recall(actor="alice", query="confirm travel dates").records]
        assert proposed.id not in found  # proposed only: searched, not returned
        other.approve(proposed.id, reviewer="dana")
    finally:
        other.close()
    found = [it.id for it in mem.recall(actor="alice", query="confirm travel dates").records]
    assert proposed.id in found
    mine = mem.propose_procedure(text="Escalate refunds over $100 to a manager")
    mem.approve(mine.id, reviewer="dana")
    found = [it.id for it in mem.recall(actor="bob", query="refunds manager escalate").records]
    assert mine.id in found


def test_an_empty_shared_scope_is_not_searched(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.remember(actor="alice", text="Alice books her travel in March")
        mem.recall(actor="alice", query="booking travel")
        store = mem.store
        assert isinstance(store, SQLiteStore)
        shared = scope_token("default", "_shared")
        sent: list[str] = []
        store.backend.conn.set_trace_callback(sent.append)
        try:
            assert mem.recall(actor="alice", query="booking travel").records
        finally:
            store.backend.conn.set_trace_callback(None)
        assert not [s for s in sent if shared in s]  # no word search of `_shared`
        assert [s for s in sent if scope_token("default", "alice") in s]
