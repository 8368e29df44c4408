"""Round trips to PostgreSQL on a recall's path, counted in libpq's own trace.

On a busy machine each round trip waits for the server's process to be scheduled
(about 0.2-0.8 ms on the 2-core bench machine at load 2-4, docs/service-speed.md):
a statement that a recall makes every time is sent in one round trip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.pq import Trace

from remem.store.postgres.store import PostgresStore
from tests.support import pg
from tests.support.store import NOW, put, rec


@pytest.fixture
def store(pg_admin_dsn: str) -> Iterator[PostgresStore]:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        s = PostgresStore(dsn, min_size=1, max_size=1)  # one connection: the one traced
        yield s
        s.close()


def round_trips(store: PostgresStore, trace: Path, call: object) -> int:
    """The messages that make the client wait for the server (Sync, simple Query) while
    `call` runs on the store's one connection."""
    assert callable(call)
    with trace.open("w") as out:
        with store.backend.pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
        try:
            call()
        finally:
            with store.backend.pool.connection() as conn:
                conn.pgconn.untrace()
    sent = [line.split() for line in trace.read_text().splitlines()]
    return sum(1 for f in sent if len(f) > 2 and f[0] == "F" and f[2] in ("Sync", "Query"))


def test_a_recall_asks_for_an_empty_backlog_in_one_round_trip(
    store: PostgresStore, tmp_path: Path
) -> None:
    found: list[tuple[int, int]] = []
    n = round_trips(
        store,
        tmp_path / "trace",
        lambda: found.append(store.jobs.actor_backlog("t1", "alice", NOW)),
    )
    assert found == [(0, 0)]
    assert n == 1


def test_the_index_check_before_a_search_is_one_round_trip(
    store: PostgresStore, tmp_path: Path
) -> None:
    found: list[object] = []
    n = round_trips(
        store, tmp_path / "trace", lambda: found.append(store.reindexing.index_state("t1"))
    )
    assert found == [(None, [])]
    assert n == 1  # the pending reindex and the models, pipelined in one transaction


def test_held_records_are_checked_and_the_rest_read_in_one_round_trip(
    store: PostgresStore, tmp_path: Path
) -> None:
    put(
        store, rec("a1", "I keep the kayak in the garage"), rec("a2", "I keep the rake in the shed")
    )
    first = store.records.get_records("t1", ["a1"])
    got: list[list[str]] = []
    n = round_trips(
        store,
        tmp_path / "trace",
        lambda: got.append([r.id for r in store.records.get_records("t1", ["a2", "a1", "no"])]),
    )
    assert got == [["a1", "a2"]]  # in the table's order, as read afresh
    assert n == 1  # a1's scope version and a2 itself, in one pipeline
    again = store.records.get_records("t1", ["a1"])
    assert again[0] is first[0]  # held: its scope has not moved on


def test_a_read_transaction_inside_an_open_span_costs_only_its_statements(
    store: PostgresStore, tmp_path: Path
) -> None:
    trace, found = tmp_path / "trace", list[object]()
    with store.backend.span("t1"):
        store.records.get_record("t1", "none")  # the span's transaction is open
        span = store.backend.spans.current()
        assert span is not None and span.conn is not None
        with trace.open("w") as out:
            span.conn.pgconn.trace(out.fileno())
            span.conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
            try:
                with store.backend.reading("t1") as db:
                    found.append(db.execute("SELECT 1 AS one").fetchall()[0]["one"])
            finally:
                span.conn.pgconn.untrace()
    sent = [line.split() for line in trace.read_text().splitlines()]
    n = sum(1 for f in sent if len(f) > 2 and f[0] == "F" and f[2] in ("Sync", "Query"))
    assert found == [1]
    assert n == 1  # the statement: nothing else is sent in an open transaction
