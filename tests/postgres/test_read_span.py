"""A span of reads (`store.search.reading`): one transaction, still bound to its tenant.

A recall's reads share one transaction on one connection (`remem.store.postgres.span`).
Row-level security must bind every statement in it exactly as before: a statement
without any tenant filter of its own sees only the span's tenant's rows; a read of
another tenant or of every tenant inside the span is bound to that, not to the span's;
settings of one read end with it; an error leaves the span usable; a write inside it
neither rides in the read transaction nor waits for a second pooled connection."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.pq import Trace

from remem.errors import RememError
from remem.store.postgres.rows import ALL_TENANTS
from remem.store.postgres.store import PostgresStore
from tests.support import pg
from tests.support.store import put, rec

UNFILTERED = "SELECT DISTINCT tenant FROM records ORDER BY tenant"  # RLS is the only filter


@pytest.fixture
def store(pg_admin_dsn: str) -> Iterator[PostgresStore]:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        s = PostgresStore(dsn, min_size=1, max_size=1)  # one connection: a second would hang
        put(s, rec("r1", "Alice plays the oboe", tenant="t1"))
        put(s, rec("r2", "Bob plays the viola", tenant="t2", actor="bob"))
        yield s
        s.close()


def tenants(store: PostgresStore, tenant: str | None) -> list[str]:
    return [r["tenant"] for r in store.backend.rows(tenant, UNFILTERED)]


def test_row_level_security_binds_every_read_of_a_span(store: PostgresStore) -> None:
    with store.search.reading("t1"):
        assert tenants(store, "t1") == ["t1"]
        assert tenants(store, "t2") == ["t2"]  # bound to its own tenant, not the span's
        assert tenants(store, "t1") == ["t1"]  # and the span's binding is back
        assert tenants(store, ALL_TENANTS) == ["t1", "t2"]
        assert tenants(store, "t1") == ["t1"]
        assert [r.id for r in store.records.get_records("t1", ["r1", "r2"])] == ["r1"]
    assert tenants(store, "t2") == ["t2"]


def test_no_read_after_a_span_runs_under_its_binding(store: PostgresStore) -> None:
    with store.search.reading("t1"):
        assert tenants(store, "t1") == ["t1"]
    with store.backend.pool.connection() as conn:  # the span's connection, back in the pool
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (0,)


def test_a_reads_settings_end_with_it(store: PostgresStore) -> None:
    sort = "SELECT current_setting('enable_sort') AS v"
    off = [("SELECT set_config('enable_sort', 'off', true)", {})]
    with store.search.reading("t1"):
        assert store.backend.rows("t1", sort, settings=off)[0]["v"] == "off"
        assert store.backend.rows("t1", sort)[0]["v"] == "on"
        assert tenants(store, "t1") == ["t1"]


def test_a_failed_read_leaves_the_span_usable_and_bound(store: PostgresStore) -> None:
    with store.search.reading("t1"):
        assert tenants(store, "t1") == ["t1"]
        with pytest.raises(RememError):
            store.backend.rows("t1", "SELECT 1 / 0")
        assert tenants(store, "t1") == ["t1"]


def test_a_write_inside_a_span_commits_on_its_own_without_a_second_connection(
    store: PostgresStore,
) -> None:
    with store.search.reading("t1"):
        assert [r.id for r in store.records.get_records("t1", ["r1", "r3"])] == ["r1"]
        put(store, rec("r3", "Alice moved to Lyon", tenant="t1"))  # max_size=1: no deadlock
        assert [r.id for r in store.records.get_records("t1", ["r1", "r3"])] == ["r1", "r3"]
        with pytest.raises(RememError):
            with store.backend.tx("t1") as cur:  # a write that fails rolls back alone
                cur.execute("SELECT 1 / 0")
        assert tenants(store, "t1") == ["t1"]
    assert [r.id for r in store.records.get_records("t1", ["r3"])] == ["r3"]


def test_threads_in_spans_of_two_tenants_see_their_own(pg_admin_dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        s = PostgresStore(dsn, min_size=2, max_size=2)
        try:
            put(s, rec("r1", "Alice plays the oboe", tenant="t1"))
            put(s, rec("r2", "Bob plays the viola", tenant="t2", actor="bob"))
            seen: dict[str, set[str]] = {"t1": set(), "t2": set()}
            start = threading.Barrier(2)

            def reads(tenant: str) -> None:
                start.wait()
                for _ in range(50):
                    with s.search.reading(tenant):
                        for _ in range(3):
                            seen[tenant].update(tenants(s, tenant))

            threads = [threading.Thread(target=reads, args=(t,)) for t in ("t1", "t2")]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert seen == {"t1": {"t1"}, "t2": {"t2"}}
        finally:
            s.close()


def test_a_spans_reads_send_one_begin_binding_and_commit(
    store: PostgresStore, tmp_path: Path
) -> None:
    trace = tmp_path / "trace"
    with trace.open("w") as out:
        with store.backend.pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
        try:
            with store.search.reading("t1"):
                for _ in range(4):
                    assert [r.id for r in store.records.get_records("t1", ["r1"])] == ["r1"]
        finally:
            with store.backend.pool.connection() as conn:
                conn.pgconn.untrace()
    sent = [line.split() for line in trace.read_text().splitlines()]
    messages = [f[2] for f in sent if len(f) > 2 and f[0] == "F"]
    # four reads: BEGIN, set_config and the first read in one round trip, then one each,
    # then COMMIT; each read in a transaction of its own sent 4 statements (16 in all)
    assert messages.count("Execute") + messages.count("Query") == 4 + 3  # statements
    assert messages.count("Sync") + messages.count("Query") == 5


def test_a_one_statement_write_inside_a_span_is_committed_at_once(
    store: PostgresStore, pg_admin_dsn: str
) -> None:
    fingerprints = "SELECT model, fingerprint FROM vector_models ORDER BY model"
    with store.search.reading("t1"):
        assert tenants(store, "t1") == ["t1"]
        store.records.note_fingerprint(
            "t1", "test-8", "abc"
        )  # one statement (`PostgresBackend.write`)
        with psycopg.connect(store.dsn, autocommit=True) as other:  # seen from outside now
            other.execute("SELECT set_config('remem.tenant', 't1', false)")
            assert other.execute(fingerprints).fetchall() == [("test-8", "abc")]
        with pytest.raises(RememError):
            store.backend.rows("t1", "SELECT 1 / 0")  # the span's transaction rolls back ...
    rows = store.backend.rows("t1", fingerprints)  # ... and the write is not lost with it
    assert [(r["model"], r["fingerprint"]) for r in rows] == [("test-8", "abc")]


def test_a_span_opened_inside_another_tenants_span_is_bound_to_its_own(
    store: PostgresStore,
) -> None:
    with store.search.reading("t1"):
        assert tenants(store, "t1") == ["t1"]
        with store.search.reading("t2"):  # no second span: its reads are bound to t2
            assert tenants(store, "t2") == ["t2"]
            assert [r.id for r in store.records.get_records("t2", ["r1", "r2"])] == ["r2"]
            with store.backend.reading("t2") as db:  # several statements, bound to t2
                assert [r["tenant"] for r in db.execute(UNFILTERED).fetchall()] == ["t2"]
        assert tenants(store, "t1") == ["t1"]
    with store.backend.pool.connection() as conn:
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_an_error_in_a_spans_statements_rolls_back_and_returns_its_connection(
    store: PostgresStore,
) -> None:
    with pytest.raises(RuntimeError):
        with store.search.reading("t1"):
            with pytest.raises(RememError):
                with store.backend.reading("t1") as db:  # the cursor of the span
                    db.execute("SELECT 1 / 0")
            assert tenants(store, "t1") == ["t1"]  # a new transaction, bound again
            raise RuntimeError("the recall failed")
    with store.backend.pool.connection() as conn:  # back in the pool, idle and unbound
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (0,)
    assert tenants(store, "t2") == ["t2"]
