"""What only the PostgreSQL backend promises: row-level security, SKIP LOCKED, migrations.

The store contract itself is proved by `tests/conformance` on both backends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from remem.errors import SchemaTooNew, StoreError
from remem.model import Event, Role
from remem.store import postgres_sql as q
from remem.store.base import Scope
from remem.store.postgres import SCHEMA_VERSION, PostgresStore
from tests import pg_helpers
from tests.conformance.test_store import NOW, T, put, rec, vec

TENANT_TABLES = [
    "events", "jobs", "records", "record_events", "history", "record_vectors",
    "event_vectors", "tombstones", "deletions",
]  # fmt: skip


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    dsn = pg_helpers.acquire()
    yield dsn
    pg_helpers.release()


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg_helpers.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


@pytest.fixture
def store(dsn: str) -> Iterator[PostgresStore]:
    s = PostgresStore(dsn, max_size=4)
    yield s
    s.close()


def ev(i: int, tenant: str = "t1", actor: str = "alice") -> Event:
    return Event(
        f"e{i}", tenant, actor, "s1", Role.USER, f"green tea {i}", T + timedelta(minutes=i)
    )


def fill_two_tenants(store: PostgresStore) -> None:
    for tenant in ("t1", "t2"):
        store.add_events([ev(1, tenant), ev(2, tenant)], ["offline"])
        put(store, rec(f"{tenant}-a", "Loves green tea", tenant=tenant))
        store.add_event_vectors(tenant, [(ev(1, tenant), vec(3))], "test-8")
        store.forget_record(tenant, f"{tenant}-a", NOW)  # tombstones, history
        put(store, rec(f"{tenant}-b", "Hates coffee", tenant=tenant))
        store.record_deletion(tenant, "record", f"{tenant}-a", None, "x", NOW)


def test_unscoped_query_under_one_tenant_sees_nothing_of_another(
    store: PostgresStore, dsn: str
) -> None:
    fill_two_tenants(store)
    with psycopg.connect(dsn) as conn:
        for table in TENANT_TABLES:
            with conn.transaction():
                conn.execute(q.SET_TENANT, ("t1",))
                tenants = {r[0] for r in conn.execute(f"SELECT tenant FROM {table}")}
            assert tenants == {"t1"}, table  # every table holds rows of both tenants
            with conn.transaction():  # no tenant named: no rows at all
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        with conn.transaction():
            conn.execute(q.SET_ALL_TENANTS)
            assert conn.execute("SELECT count(DISTINCT tenant) FROM records").fetchone() == (2,)


def test_a_tenant_cannot_write_rows_of_another(store: PostgresStore, dsn: str) -> None:
    fill_two_tenants(store)
    with psycopg.connect(dsn) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute(q.SET_TENANT, ("t1",))
            conn.execute(
                "INSERT INTO tombstones (tenant, kind, key, created_at) "
                "VALUES ('t2', 'actor', 'x', now())"
            )
        with conn.transaction():
            conn.execute(q.SET_TENANT, ("t1",))
            gone = conn.execute("DELETE FROM records WHERE id = 't2-b'")  # invisible, so kept
            assert gone.rowcount == 0
    assert store.get_record("t2", "t2-b") is not None


def test_the_app_role_is_not_a_superuser(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert row.fetchone() == (False,)


def test_claims_from_two_connections_skip_each_others_jobs(store: PostgresStore, dsn: str) -> None:
    store.add_events([ev(i) for i in range(6)], ["offline"])
    with psycopg.connect(dsn) as held:
        with held.transaction():  # a worker that has claimed two jobs and not yet committed
            held.execute(q.SET_ALL_TENANTS)
            mine = {r[0] for r in held.execute(q.CLAIM_JOBS, (NOW, NOW, NOW, 2))}
            # the other claimer neither waits for the held rows nor takes them
            theirs = {j.id for j in store.claim_jobs(NOW, 10, 60)}
        assert len(mine) == 2 and len(theirs) == 4 and not mine & theirs


def test_concurrent_claimers_take_every_job_exactly_once(store: PostgresStore, dsn: str) -> None:
    store.add_events([ev(i) for i in range(120)], ["a", "b"])
    claimed: list[list[int]] = []
    stores = [PostgresStore(dsn, max_size=2) for _ in range(3)]

    def work(s: PostgresStore) -> None:
        got: list[int] = []
        while batch := s.claim_jobs(NOW, 7, 600):
            got.extend(j.id for j in batch)
        claimed.append(got)

    threads = [threading.Thread(target=work, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for s in stores:
        s.close()
    every = [i for got in claimed for i in got]
    assert len(every) == 240 and len(set(every)) == 240


def test_migrations_build_an_empty_database_and_run_once(pg_admin_dsn: str) -> None:
    with pg_helpers.fresh_database(pg_admin_dsn, empty=True) as empty:
        first = PostgresStore(empty, max_size=1)
        assert first.schema_version() == SCHEMA_VERSION
        again = PostgresStore(empty, max_size=1)  # a second process opening the same database
        assert again.schema_version() == SCHEMA_VERSION
        with psycopg.connect(empty) as conn:
            assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)
        again.close()
        first.close()


def test_a_newer_database_is_refused(store: PostgresStore, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(q.SET_VERSION, (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNew, match="upgrade remem"):
        PostgresStore(dsn)


def test_an_unreachable_server_is_a_store_error(dsn: str) -> None:
    from psycopg.conninfo import make_conninfo

    with pytest.raises(StoreError, match="cannot use the PostgreSQL database"):
        PostgresStore(make_conninfo(dsn, dbname="remem_no_such_database"))


def test_event_vectors_and_neighbours(store: PostgresStore) -> None:
    events = [ev(i) for i in range(4)]
    store.add_events(events, [])
    store.add_event_vectors("t1", [(e, vec(i)) for i, e in enumerate(events)], "test-8")
    alice = Scope("t1", "alice")
    hits = store.vector_search_events(alice, "test-8", vec(2), 2, NOW)
    assert hits[0][0] == "e2" and abs(hits[0][1] - 1) < 1e-4
    # only events that happened by `at`: at T, just e0
    assert [h[0] for h in store.vector_search_events(alice, "test-8", vec(2), 10, T)] == ["e0"]
    assert store.vector_search_events(Scope("t1", "bob"), "test-8", vec(2), 10, NOW) == []
    assert [e.id for e in store.adjacent_events(events[2])] == ["e1", "e3"]
    assert [e.id for e in store.adjacent_events(events[0])] == ["e1"]
    report = store.forget_actor("t1", "alice", datetime.now(UTC))
    assert report.verified and report.deleted["event_vectors"] == 4
