"""Vector search inside a namespace prefix, on every backend: the prefix narrows, and its
LIKE wildcards are matched literally (the exact scan's parameters are named on PostgreSQL)."""

from __future__ import annotations

from remem.store.roles import Scope, Store
from tests.support.store import NOW, put, rec, vec


def test_vector_search_inside_a_namespace_prefix_escapes_like_wildcards(store: Store) -> None:
    put(store, rec("a1", "Loves tea", namespace="/tenants/t1/actors/alice/facts"),
        rec("a2", "Hates coffee", namespace="/tenants/t1/actors/alice/prefs"))  # fmt: skip
    query = vec(0)  # a1's vector: `put` gives the n-th record vec(n)
    facts = Scope("t1", "alice", "/tenants/t1/actors/alice/facts")
    assert [r for r, _ in store.search.vector_search(facts, "test-8", query, 10, NOW)] == ["a1"]
    wild = Scope("t1", "alice", "/tenants/t1/actors/al_ce/")
    assert store.search.vector_search(wild, "test-8", query, 10, NOW) == []
    everyone = Scope("t1", "alice")
    assert {r for r, _ in store.search.vector_search(everyone, "test-8", query, 10, NOW)} == {
        "a1",
        "a2",
    }


def test_word_search_skips_proposed_records_however_many_rank_above(store: Store) -> None:
    from remem.model import Status

    proposed = [
        rec(f"p{i}", "spade spade spade in the shed", status=Status.PROPOSED) for i in range(6)
    ]
    put(store, *proposed, rec("a1", "a spade somewhere in a long sentence about the shed"))
    alice = Scope("t1", "alice")
    assert [h.id for h in store.search.search_records(alice, "spade shed", 2)] == ["a1"]
    assert [h.id for h in store.search.search_records(alice, "spade shed", 5)] == ["a1"]
