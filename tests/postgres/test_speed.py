"""What keeps recall fast on a large PostgreSQL database, on a real server.

A scope's version (schema 9) moves with every write to its records or vectors
from any process, so a recall can reuse the scope's searches of the domain
centres; a scope holding many vectors of a model, and at most half of them, gets
an HNSW index of its own, which its searches take (the model's index, filtered
to a tenth of its rows, reads ten candidates for each one kept), and an
erasure of the actor drops it, since its definition names the actor.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest

from remem.model import Event, Role
from remem.store.postgres import sql as q
from remem.store.postgres.rows import ALL_TENANTS
from remem.store.postgres.store import PostgresStore
from remem.store.roles import Scope, Write
from tests.support import pg
from tests.support.store import NOW, T, rec
from tests.support.vectors import DIM, MODEL, index_defs, load, unit


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


def scans(admin_dsn: str, app_dsn: str, name: str, least: int) -> int:
    """idx_scan of an index, waited for until it reaches `least` (a closed backend's
    counts reach the shared statistics as it exits) or five seconds pass."""
    deadline = time.monotonic() + 5
    with psycopg.connect(pg.admin_dsn_for(admin_dsn, app_dsn), autocommit=True) as c:
        while True:
            row = c.execute(
                "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", (name,)
            ).fetchone()
            found = int(row[0]) if row else 0
            if found >= least or time.monotonic() > deadline:
                return found
            time.sleep(0.1)
            c.execute("SELECT pg_stat_clear_snapshot()")


def test_a_scope_version_moves_with_every_write_to_the_scope_from_any_process(
    dsn: str,
) -> None:
    a, b = PostgresStore(dsn, max_size=2), PostgresStore(dsn, max_size=2)
    alice, bob = Scope("t1", "alice"), Scope("t1", "bob")
    try:
        seen = [a.search.scope_version(alice)]
        assert seen[0] is not None
        b.records.apply(
            Write(
                tenant="t1",
                inserts=(rec("r1", "I like tea"), rec("r2", "I like jam")),
                vectors=(np.ones(8, np.float32), np.ones(8, np.float32)),
                vector_model="test-8",
            )
        )
        seen.append(a.search.scope_version(alice))
        bob_before = a.search.scope_version(bob)
        b.erasure.forget_record("t1", "r1", NOW)
        seen.append(a.search.scope_version(alice))
        event = Event("e1", "t1", "alice", "s1", Role.USER, "hello", T)
        b.events.add_events([event], [])
        b.search.add_event_vectors("t1", [(event, np.ones(8, np.float32))], "test-8")
        seen.append(a.search.scope_version(alice))
        b.erasure.forget_actor("t1", "alice", datetime.now(UTC))
        seen.append(a.search.scope_version(alice))
        assert seen == sorted(set(seen)), seen  # moved on at every step, never back
        assert a.search.scope_version(bob) == bob_before  # another scope's writes leave it
        assert a.search.scope_version(Scope("t2", "alice")) == 0  # nothing written there
    finally:
        a.close()
        b.close()


def test_a_bulk_load_gives_a_large_scope_its_own_index_which_its_search_takes(
    pg_admin_dsn: str, dsn: str
) -> None:
    rng = np.random.default_rng(8)
    crowd, mine = unit(rng.standard_normal((1000, DIM))), unit(rng.standard_normal((300, DIM)))
    queries = unit(rng.standard_normal((8, DIM)))
    store = PostgresStore(dsn, max_size=1, exact_scan_max=0, scope_index_min=200)
    with store.bulk_load():
        load(store, "bob", crowd)  # 1,000 of 1,300: the model's index is bob's already
        ids = load(store, "alice", mine)
    own = q.ScopeIndex("t1", "alice", MODEL, DIM).name
    defs = index_defs(dsn)
    assert own in defs and "'alice'" in defs[own]
    assert q.ScopeIndex("t1", "bob", MODEL, DIM).name not in defs
    alice = Scope("t1", "alice")
    overlap = 0
    try:
        for query in queries:  # more than psycopg's prepare threshold: prepared ones too
            got = [r for r, _ in store.search.vector_search(alice, MODEL, query, 10, NOW)]
            truth = [ids[i] for i in np.argsort(-(mine @ query), kind="stable")[:10]]
            assert len(got) == 10 and all(r.startswith("alice-") for r in got)
            assert got[0] == truth[0]
            overlap += len(set(got) & set(truth))
        plans = hnsw_plans(store)
        assert plans["generic"] == 0 and plans["custom"] >= 1  # her own index: custom plans
    finally:
        store.close()
    assert overlap >= 0.9 * 10 * len(queries)
    assert scans(pg_admin_dsn, dsn, own, len(queries)) == len(queries)


def test_a_scope_without_an_index_of_its_own_reuses_one_generic_plan(
    pg_admin_dsn: str, dsn: str
) -> None:
    """Only the model's index: the prepared search is not planned again at each search,
    and still walks that index and finds the nearest."""
    rng = np.random.default_rng(10)
    crowd = unit(rng.standard_normal((1000, DIM)))
    store = PostgresStore(dsn, max_size=1, exact_scan_max=0, scope_index_min=2000)
    with store.bulk_load():
        ids = load(store, "bob", crowd)
    model_index = q.VectorIndex("record_vectors", MODEL, DIM).name
    defs = index_defs(dsn)
    assert model_index in defs and not any(n.startswith("record_vectors_scope_") for n in defs)
    queries = unit(rng.standard_normal((10, DIM)))
    overlap = 0
    try:
        for query in queries:
            got = [r for r, _ in store.search.vector_search(Scope("t1", "bob"), MODEL, query,
                                                            10, NOW)]  # fmt: skip
            truth = [ids[i] for i in np.argsort(-(crowd @ query), kind="stable")[:10]]
            assert len(got) == 10 and got[0] == truth[0]
            overlap += len(set(got) & set(truth))
        plans = hnsw_plans(store)
    finally:
        store.close()
    assert overlap >= 0.9 * 10 * len(queries)
    # psycopg prepares it at its fifth run; every later one takes the generic plan
    assert plans["custom"] == 0 and plans["generic"] >= len(queries) - 5, plans
    assert scans(pg_admin_dsn, dsn, model_index, len(queries)) == len(queries)


def hnsw_plans(store: PostgresStore) -> dict[str, int]:
    """How often the prepared HNSW search of a store of one connection ran a generic and
    a custom plan (`pg_prepared_statements`, per session)."""
    rows = store.backend.rows(
        ALL_TENANTS,
        "SELECT coalesce(sum(generic_plans), 0) AS generic, coalesce(sum(custom_plans), 0)"
        " AS custom FROM pg_prepared_statements WHERE statement LIKE '%%halfvec%%'",
    )
    return {"generic": int(rows[0]["generic"]), "custom": int(rows[0]["custom"])}


def test_a_scope_that_grows_large_gets_its_own_index_and_its_erasure_drops_it(
    dsn: str,
) -> None:
    rng = np.random.default_rng(9)
    store = PostgresStore(dsn, max_size=2, scope_index_min=200)
    try:
        with store.bulk_load():  # analysed at its end: the planner knows 1,000 vectors
            load(store, "bob", unit(rng.standard_normal((1000, DIM))))
        own = q.ScopeIndex("t1", "alice", MODEL, DIM).name
        load(store, "alice", unit(rng.standard_normal((150, DIM))))
        assert own not in index_defs(dsn)  # 150: under the threshold
        load(store, "carol", unit(rng.standard_normal((250, DIM))))
        carols = q.ScopeIndex("t1", "carol", MODEL, DIM).name
        assert carols in index_defs(dsn)  # grown past it in one write
        report = store.erasure.forget_actor("t1", "carol", datetime.now(UTC))
        assert report.verified
        defs = index_defs(dsn)
        assert carols not in defs and not any("carol" in d for d in defs.values())
        assert own not in defs
    finally:
        store.close()
