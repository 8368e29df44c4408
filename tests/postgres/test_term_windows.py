"""Word search on PostgreSQL through kept term windows (`remem.store.postgres.terms`):
the very hits of the SQL statement it replaces, and nothing kept past a write, a
closed record or an erasure, whichever store (process) made it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import pytest

from remem.model import Status
from remem.store.postgres import sql as q
from remem.store.postgres.store import PostgresStore
from remem.store.postgres.terms import QUIET_SEARCHES, TermWindows
from remem.store.roles import Scope, Write
from remem.store.values import Hit, StatusChange
from tests.support import pg
from tests.support.store import NOW, put, rec

WINDOW = 40  # small, so that common words fill their window many times over
VOCAB = ("budget trip sister lives nairobi laptop costs oysters dentist friday "
         "garden runs piano lessons allergic peanuts").split()  # fmt: skip
QUERIES = ("trip budget", "sister nairobi", "laptop costs budget", "allergic peanuts",
           "friday dentist garden", "piano", "runs lessons oysters trip", "nothing here",
           "the", "budget budget trip")  # fmt: skip


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


@pytest.fixture
def stores(dsn: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one database: what two processes of one deployment are."""
    a, b = PostgresStore(dsn, max_size=2), PostgresStore(dsn, max_size=2)
    yield a, b
    a.close()
    b.close()


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(VOCAB, size=int(rng.integers(2, 7)))) for _ in range(n)]


def load(store: PostgresStore, tenant: str, actor: str, n: int, seed: int) -> list[str]:
    records = [
        rec(f"{tenant}-{actor}-{i}", t, actor=actor, tenant=tenant,
            namespace=f"/tenants/{tenant}/actors/{actor}/{'work' if i % 3 else 'home'}",
            metadata={"team": "blue" if i % 2 else "red"})
        for i, t in enumerate(texts(n, seed))
    ]  # fmt: skip
    for i in range(0, n, 100):
        put(store, *records[i : i + 100])
    return [r.id for r in records]


def sql_hits(store: PostgresStore, scope: Scope, query: str, limit: int) -> list[Hit]:
    built = q.search_records(scope, query, limit, WINDOW)
    if built is None:
        return []
    return [Hit(r["id"], float(r["score"])) for r in store.backend.rows(scope.tenant, *built)]


def windows(store: PostgresStore) -> TermWindows:
    store.search.terms = TermWindows(store.backend, window=WINDOW)
    return store.search.terms


def settled(tw: TermWindows, scope: Scope) -> None:
    """Enough searches at the scope's version that the next ones read windows."""
    for _ in range(QUIET_SEARCHES + 1):
        tw.search(scope, "budget", 5)


def warmed(store: PostgresStore, seed: int) -> tuple[TermWindows, Scope]:
    """Windows of their own over 300 records of alice's, past the quiet searches."""
    tw = windows(store)
    load(store, "t1", "alice", 300, seed=seed)
    scope = Scope("t1", "alice")
    settled(tw, scope)
    return tw, scope


def same(got: list[Hit], expected: list[Hit]) -> None:
    assert [h.id for h in got] == [h.id for h in expected]
    assert [h.score for h in got] == pytest.approx([h.score for h in expected], rel=1e-6)


SCOPES = (
    Scope("t1", "alice"),
    Scope("t1", "alice", namespace_prefix="/tenants/t1/actors/alice/work"),
    Scope("t1", "alice", metadata=(("team", "red"),)),
    Scope("t1", "bob"),
    Scope("t2", "alice"),
)


def test_kept_windows_give_the_hits_of_the_statement(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    store, _ = stores
    tw = windows(store)
    load(store, "t1", "alice", 600, seed=1)
    load(store, "t1", "bob", 120, seed=2)
    load(store, "t2", "alice", 300, seed=3)
    # some of alice's matches closed (invalid stays searchable) and some deleted
    closing = [StatusChange(f"t1-alice-{i}", Status.DELETED if i % 2 else Status.INVALID,
                            NOW + timedelta(days=1), None, "INVALIDATE")
               for i in range(560, 600, 3)]  # fmt: skip
    store.records.apply(Write(tenant="t1", changes=tuple(closing)))

    for scope in SCOPES:
        settled(tw, scope)
        for query in QUERIES:
            for limit in (1, 7, 50):
                same(tw.search(scope, query, limit), sql_hits(store, scope, query, limit))
        assert tw.held(scope.tenant, scope.actor) > 0  # the windows answered, not SQL
    assert all(h.id.startswith("t1-bob-") for h in tw.search(SCOPES[3], "trip budget", 50))


def test_a_write_by_another_store_is_seen_at_once(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = stores
    tw, scope = warmed(a, seed=4)
    before = tw.search(scope, "oysters nairobi", 10)
    assert before and tw.held("t1", "alice") > 0

    put(b, rec("new-1", "Oysters in Nairobi, oysters", actor="alice", tenant="t1"))
    after = tw.search(scope, "oysters nairobi", 10)

    assert "new-1" in [h.id for h in after]
    same(after, sql_hits(a, scope, "oysters nairobi", 10))
    for _ in range(QUIET_SEARCHES + 1):  # and once windows are read again at the new version
        same(tw.search(scope, "oysters nairobi", 10), sql_hits(a, scope, "oysters nairobi", 10))


def test_a_record_closed_by_another_store_leaves_the_hits(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = stores
    tw, scope = warmed(a, seed=5)
    best = tw.search(scope, "piano lessons", 3)[0].id

    gone = StatusChange(best, Status.DELETED, NOW, None, "DELETE")
    b.records.apply(Write(tenant="t1", changes=(gone,)))
    for _ in range(QUIET_SEARCHES + 2):
        hits = tw.search(scope, "piano lessons", 3)
        assert best not in [h.id for h in hits]
        same(hits, sql_hits(a, scope, "piano lessons", 3))


def test_an_erasure_drops_what_was_kept_of_the_scope(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    store, _ = stores
    load(store, "t1", "alice", 200, seed=6)
    load(store, "t1", "bob", 200, seed=7)
    tw = store.search.terms  # the store's own, which its erasure knows
    for scope in (Scope("t1", "alice"), Scope("t1", "bob")):
        settled(tw, scope)
        assert tw.search(scope, "garden friday", 10)
    assert tw.held("t1", "alice") > 0

    store.erasure.forget_actor("t1", "alice", NOW)

    assert tw.held("t1", "alice") == 0
    assert tw.held("t1", "bob") > 0  # another scope's stay
    assert tw.search(Scope("t1", "alice"), "garden friday", 10) == []


def test_what_is_kept_stays_within_its_bounds(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    store, _ = stores
    load(store, "t1", "alice", 400, seed=8)
    tw = TermWindows(store.backend, window=WINDOW, rows_held=3 * WINDOW, ids_held=60)
    for scope in SCOPES[:3]:  # three filters of one scope, each with conditions of its own
        settled(tw, scope)
        for query in QUERIES:
            same(tw.search(scope, query, 20), sql_hits(store, scope, query, 20))
            rows, ids = tw.size()
            assert rows <= 3 * WINDOW
            assert ids <= 60 + 2 * 20  # or one stretch of candidates just read, alone
