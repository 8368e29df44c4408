"""A span's reads sent through libpq's pipeline directly (`remem.store.postgres.wire`).

They must read exactly what psycopg's cursors read (every type a store statement takes
or returns), prepare a statement once per connection, find their statements again after
psycopg deallocated them (it does after every ROLLBACK it runs), and fail as psycopg
fails, leaving the span usable."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
import pytest

from remem.errors import RememError
from remem.store.postgres import wire
from remem.store.postgres.store import PostgresStore
from tests.support import pg
from tests.support.store import put, rec

TYPES = """
SELECT %(text)s::text AS text, %(small)s AS small, %(big)s::bigint AS big,
       %(real)s::float8 AS real, %(yes)s::boolean AS yes, %(at)s::timestamptz AS at,
       %(names)s::text[] AS names, %(none)s::text AS none, %(text)s || '!' AS again,
       '{"a": [1, 2.5, null]}'::jsonb AS doc, '\\x00ff'::bytea AS raw,
       (%(vec)s::vector <=> %(vec)s::vector) AS distance, 100 %% 7 AS percent
"""
VALUES: dict[str, Any] = {
    "text": "Zoë's café ☕ \"quoted\" 'single' \\ back",
    "small": 7,
    "big": 2**40,
    "real": 0.1,
    "yes": True,
    "at": datetime(1999, 12, 31, 23, 59, 58, 123456, tzinfo=UTC),
    "names": ["a", "b c", "", 'd"e'],
    "none": None,
    "vec": np.asarray([0.6, 0.8, 0.0], dtype=np.float32),
}


@pytest.fixture
def store(pg_admin_dsn: str) -> Iterator[PostgresStore]:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        s = PostgresStore(dsn, min_size=1, max_size=1)  # one connection: the tests reach it
        put(s, rec("r1", "Alice plays the oboe", tenant="t1"))
        yield s
        s.close()


def read(store: PostgresStore, direct: bool, sql: str, params: Any) -> list[dict[str, Any]]:
    store.backend.spans.direct = direct
    with store.search.reading("t1"):
        return [dict(r) for r in store.backend.rows("t1", sql, params)]


def test_direct_reads_load_every_type_as_psycopg_does(store: PostgresStore) -> None:
    direct = read(store, True, TYPES, VALUES)
    assert direct == read(store, False, TYPES, VALUES)
    (row,) = direct
    assert row["text"] == VALUES["text"] and row["again"] == VALUES["text"] + "!"
    assert row["at"] == VALUES["at"] and row["names"] == VALUES["names"]
    assert row["none"] is None and row["big"] == 2**40 and row["percent"] == 2
    assert row["doc"] == {"a": [1, 2.5, None]} and row["raw"] == b"\x00\xff"


def test_a_statement_is_prepared_once_per_connection(store: PostgresStore) -> None:
    for small in (1, 2, 3):  # the same types each time: one prepared statement
        assert read(store, True, "SELECT %(small)s + 1 AS n", {"small": small}) == [
            {"n": small + 1}
        ]
    with store.backend.pool.connection() as conn:
        prepared = conn.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1 + 1 AS n'"
        ).fetchone()
    assert prepared == (1,)


def test_reads_prepare_again_after_psycopg_deallocates(store: PostgresStore) -> None:
    assert read(store, True, "SELECT %(small)s AS n", {"small": 1}) == [{"n": 1}]
    with store.backend.pool.connection() as conn:  # the only connection: the span's
        conn.execute("DEALLOCATE ALL")
    assert read(store, True, "SELECT %(small)s AS n", {"small": 2}) == [{"n": 2}]
    with store.search.reading("t1"):  # and in a span's transaction already begun
        assert [r["id"] for r in store.backend.rows("t1", "SELECT id FROM records")] == ["r1"]
        span = store.backend.spans.current()
        assert span is not None and span.conn is not None
        span.conn.execute("DEALLOCATE ALL")
        assert store.backend.rows("t1", "SELECT %(small)s AS n", {"small": 3}) == [{"n": 3}]


def test_a_failed_direct_read_raises_and_the_span_goes_on(store: PostgresStore) -> None:
    with store.search.reading("t1"):
        with pytest.raises(RememError):
            store.backend.rows("t1", "SELECT 1 / %(zero)s AS n", {"zero": 0})
        with pytest.raises(RememError):  # a value that cannot be sent: nothing is
            store.backend.rows("t1", "SELECT %(text)s AS t", {"text": "lone \ud800"})
        assert [r["id"] for r in store.backend.rows("t1", "SELECT id FROM records")] == ["r1"]
    with store.backend.pool.connection() as conn:
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF


def test_positional_statements_go_through_psycopg(store: PostgresStore) -> None:
    assert read(store, True, "SELECT %s::int + 1 AS n", [41]) == [{"n": 42}]
    assert wire.convert("SELECT %s") is None


def test_statement_texts_are_converted_once_with_names_numbered() -> None:
    converted = wire.convert("SELECT %(a)s, %(b)s, %(a)s, 5 %% 2, '%%(c)s'")
    assert converted is not None
    assert converted.text == b"SELECT $1, $2, $1, 5 % 2, '%(c)s'"
    assert converted.names == ("a", "b")
    assert wire.convert("SELECT %(a)b") is None
