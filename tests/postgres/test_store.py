"""What only the PostgreSQL backend promises: row-level security, SKIP LOCKED, migrations.

The store contract itself is proved by `tests/conformance` on both backends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest

from remem.errors import SchemaTooNew, StoreError
from remem.memory.memory import Memory
from remem.model import Event, LLMCall, Role
from remem.service import keys as keyring
from remem.store.postgres import sql as q
from remem.store.postgres.store import SCHEMA_VERSION, PostgresStore
from remem.store.postgres.thread import PostgresThreadStore
from remem.store.roles import AuditEntry, Scope
from remem.thread.checkpoints import CheckpointState
from tests.support import pg
from tests.support.store import NOW, T, put, rec, vec

TENANT_TABLES = [
    "events", "jobs", "records", "record_events", "history", "record_vectors",
    "event_vectors", "tombstones", "deletions", "llm_calls", "api_requests", "record_terms",
    "event_terms", "checkpoints", "tool_calls", "api_keys", "documents", "document_chunks",
    "document_chunk_terms", "scope_versions", "vector_models", "reindexes",
    "reindex_record_vectors", "reindex_event_vectors", "reindex_chunk_vectors", "audit_log",
]  # fmt: skip
# api_keys is no exception: the lookup by hash, which runs before a request's tenant is
# known, spans tenants by saying so (remem.all_tenants), as claiming jobs does; see
# `postgres/migrations/0006_keys.sql`


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
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
        store.events.add_events([ev(1, tenant), ev(2, tenant)], ["offline"])
        put(store, rec(f"{tenant}-a", "Loves green tea", tenant=tenant))
        store.search.add_event_vectors(tenant, [(ev(1, tenant), vec(3))], "test-8")
        store.erasure.forget_record(tenant, f"{tenant}-a", NOW)  # tombstones, history
        put(store, rec(f"{tenant}-b", "Hates coffee", tenant=tenant))
        store.erasure.record_deletion(tenant, "record", f"{tenant}-a", None, "x", NOW)
        store.model_calls.record_llm_calls(
            tenant, [LLMCall("semantic", "m", "v1", 10, 5, 0.1, True)]
        )
        store.ledger.claim_request(tenant, "alice", "req-1", "create", None, None, "tok", 60)
        store.ledger.finish_request(tenant, "alice", "req-1", "tok", {"record_id": f"{tenant}-b"})
        threads = PostgresThreadStore(store)
        threads.checkpoint_save(tenant, "alice", "wf", CheckpointState(step="pay"), None)
        threads.begin_tool_call(tenant, "alice", "wf", "k1", "call-1", {"amount": 30})
        keyring.create_key(store.keys, tenant=tenant, actor="alice")
        Memory(store, tenant=tenant, embedder=Test8()).add_document(text="Green tea.", title="d")
        # a reindex under way: a new vector of each kind (`remem.store.flows.reindex`)
        store.reindexing.begin(tenant, "other-8", 8, None, NOW)
        for kind in ("records", "events", "chunks"):
            ((key, _),) = store.reindexing.todo(tenant, "other-8", kind, None, 1)
            store.reindexing.add(tenant, "other-8", kind, [(key, vec(4))], NOW)
        store.audit.append(tenant, AuditEntry("key_1", "read", "alice", None, {"records": 1}), NOW)


class Test8:
    """The vectors `put` stores, for a document's chunks (model "test-8")."""

    name, dim = "test-8", 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([vec(5 + i) for i in range(len(texts))])


def test_unscoped_query_under_one_tenant_sees_nothing_of_another(
    store: PostgresStore, dsn: str
) -> None:
    fill_two_tenants(store)
    with psycopg.connect(dsn) as conn:
        for table in TENANT_TABLES:
            with conn.transaction():
                conn.execute(q.SET_TENANT, {"tenant": "t1"})
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
            conn.execute(q.SET_TENANT, {"tenant": "t1"})
            conn.execute(
                "INSERT INTO tombstones (tenant, kind, key, created_at) "
                "VALUES ('t2', 'actor', 'x', now())"
            )
        with conn.transaction():
            conn.execute(q.SET_TENANT, {"tenant": "t1"})
            gone = conn.execute("DELETE FROM records WHERE id = 't2-b'")  # invisible, so kept
            assert gone.rowcount == 0
    assert store.records.get_record("t2", "t2-b") is not None


def test_the_app_role_is_not_a_superuser(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert row.fetchone() == (False,)


def test_claims_from_two_connections_skip_each_others_jobs(store: PostgresStore, dsn: str) -> None:
    store.events.add_events([ev(i) for i in range(6)], ["offline"])
    with psycopg.connect(dsn) as held:
        with held.transaction():  # a worker that has claimed two jobs and not yet committed
            held.execute(q.SET_ALL_TENANTS)
            claim = {"lease": NOW, "now": NOW, "limit": 2}
            mine = {r[0] for r in held.execute(q.CLAIM_JOBS, claim)}
            # the other claimer neither waits for the held rows nor takes them
            theirs = {j.id for j in store.jobs.claim_jobs(NOW, 10, 60)}
        assert len(mine) == 2 and len(theirs) == 4 and not mine & theirs


def test_concurrent_claimers_take_every_job_exactly_once(store: PostgresStore, dsn: str) -> None:
    store.events.add_events([ev(i) for i in range(120)], ["a", "b"])
    claimed: list[list[int]] = []
    stores = [PostgresStore(dsn, max_size=2) for _ in range(3)]

    def work(s: PostgresStore) -> None:
        got: list[int] = []
        while batch := s.jobs.claim_jobs(NOW, 7, 600):
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
    with pg.fresh_database(pg_admin_dsn, empty=True) as empty:
        first = PostgresStore(empty, max_size=1)
        assert first.schema_version() == SCHEMA_VERSION
        again = PostgresStore(empty, max_size=1)  # a second process opening the same database
        assert again.schema_version() == SCHEMA_VERSION
        with psycopg.connect(empty) as conn:
            versions = [r[0] for r in conn.execute("SELECT version FROM schema_version")]
            assert sorted(versions) == list(range(1, SCHEMA_VERSION + 1))
        again.close()
        first.close()


def test_a_newer_database_is_refused(store: PostgresStore, dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(q.SET_VERSION, {"version": SCHEMA_VERSION + 1})
    with pytest.raises(SchemaTooNew, match="upgrade remem"):
        PostgresStore(dsn)


def test_an_unreachable_server_is_a_store_error(dsn: str) -> None:
    from psycopg.conninfo import make_conninfo

    with pytest.raises(StoreError, match="cannot use the PostgreSQL database"):
        PostgresStore(make_conninfo(dsn, dbname="remem_no_such_database"))


def test_event_vectors_and_neighbours(store: PostgresStore) -> None:
    events = [ev(i) for i in range(4)]
    store.events.add_events(events, [])
    store.search.add_event_vectors("t1", [(e, vec(i)) for i, e in enumerate(events)], "test-8")
    alice = Scope("t1", "alice")
    hits = store.search.vector_search_events(alice, "test-8", vec(2), 2, NOW)
    assert hits[0][0] == "e2" and abs(hits[0][1] - 1) < 1e-4
    # only events that happened by `at`: at T, just e0
    assert [h[0] for h in store.search.vector_search_events(alice, "test-8", vec(2), 10, T)] == [
        "e0"
    ]
    assert store.search.vector_search_events(Scope("t1", "bob"), "test-8", vec(2), 10, NOW) == []
    assert sorted(e.id for _, e in store.events.events_near([events[2]], 1)["e2"]) == ["e1", "e3"]
    assert [e.id for _, e in store.events.events_near([events[0]], 1)["e0"]] == ["e1"]
    report = store.erasure.forget_actor("t1", "alice", datetime.now(UTC))
    assert report.verified and report.deleted["event_vectors"] == 4


def test_every_tenant_table_has_forced_row_level_security(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "  (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid "
            "   AND p.polname = 'tenant_rows') "
            "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
            "WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace "
            "AND a.attname = 'tenant'"
        ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(TENANT_TABLES)
    assert all(r[1:] == (True, True, 1) for r in rows), rows


SCHEMA_QUERIES = [
    "SELECT table_name, column_name, data_type, is_nullable, column_default "
    "FROM information_schema.columns WHERE table_schema = 'public'",
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "SELECT tablename, policyname, qual FROM pg_policies WHERE schemaname = 'public'",
    "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
    "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'",
]


def schema_of(dsn: str) -> list[set[tuple[object, ...]]]:
    with psycopg.connect(dsn) as conn:
        return [set(conn.execute(sql).fetchall()) for sql in SCHEMA_QUERIES]


def test_a_schema_1_database_is_upgraded_with_its_jobs(pg_admin_dsn: str, dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn, empty=True) as empty:
        with psycopg.connect(empty) as conn:  # what remem 0.1 made: schema 1 only
            number, sql = q.migrations()[0]
            assert number == 1
            for statement in q.split_sql(sql):
                conn.execute(statement)
            conn.execute(q.SCHEMA_TABLE)
            conn.execute(q.SET_VERSION, {"version": 1})
            conn.execute(q.SET_TENANT, {"tenant": "t1"})
            conn.execute(
                "INSERT INTO jobs (tenant, event_id, strategy, status, attempts, created_at, "
                "updated_at) VALUES ('t1', 'e1', 'offline', 'pending', 1, now(), now())"
            )
        store = PostgresStore(empty, max_size=1)
        try:
            assert store.schema_version() == SCHEMA_VERSION
            # migrating step by step builds what a fresh database gets
            assert schema_of(empty) == schema_of(dsn)
            (job,) = store.jobs.claim_jobs(NOW, 10, 60)
            assert (job.event_id, job.attempts) == ("e1", 2)
            assert (
                store.jobs.fail_job(job.id, "x", NOW, retry_at=NOW + timedelta(hours=1))
                == "pending"
            )
            assert store.jobs.list_jobs("t1")[0].run_after == NOW + timedelta(hours=1)
            store.model_calls.record_llm_calls(
                "t1", [LLMCall("offline", "m", "v1", 1, 1, 0.1, True)]
            )
            assert store.model_calls.llm_usage("t1")["calls"] == 1
        finally:
            store.close()
