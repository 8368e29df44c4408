"""A scope's own HNSW index is loaded into PostgreSQL's buffers by remem itself when
pg_prewarm is installed (on a process's first search of the scope, on a background
thread), on a real server; without the extension nothing changes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from psycopg import sql as pg_sql

from remem.store.postgres import sql as q
from remem.store.postgres.store import PostgresStore
from remem.store.roles import Scope
from tests.support import pg
from tests.support.store import NOW
from tests.support.vectors import DIM, MODEL, index_defs, load, unit


@pytest.fixture(scope="module")
def loaded(pg_admin_dsn: str) -> Iterator[tuple[str, str]]:
    """A database whose scope `alice` has an index of its own; its app and admin DSNs."""
    with pg.fresh_database(pg_admin_dsn) as dsn:
        rng = np.random.default_rng(21)
        store = PostgresStore(dsn, max_size=1, exact_scan_max=0, scope_index_min=200)
        try:
            with store.bulk_load():
                load(store, "bob", unit(rng.standard_normal((4000, DIM))))
                load(store, "alice", unit(rng.standard_normal((2000, DIM))))
        finally:
            store.close()
        admin = pg.admin_dsn_for(pg_admin_dsn, dsn)
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute("CREATE EXTENSION pg_buffercache")  # to see what the buffers hold
            # count calls of C functions too (pg_prewarm's), for this database's sessions
            c.execute(
                pg_sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(
                    pg_sql.Identifier(str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]))
                )
            )
        yield dsn, admin


def prewarms(admin: str, least: int = 0) -> int:
    """How many times pg_prewarm has run in the database (`track_functions`), waited for
    until that reaches `least` (a backend reports within a second) or five seconds pass."""
    deadline = time.monotonic() + 5
    with psycopg.connect(admin, autocommit=True) as c:
        while True:
            row = c.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions "
                "WHERE funcname = 'pg_prewarm'"
            ).fetchone()
            found = int(row[0]) if row else 0
            if found >= least or time.monotonic() > deadline:
                return found
            time.sleep(0.1)
            c.execute("SELECT pg_stat_clear_snapshot()")


def in_buffers(admin: str, name: str, least: int = 0) -> tuple[int, int]:
    """How many blocks of an index are in PostgreSQL's buffers, waited for until that
    reaches `least` or five seconds pass; and how many blocks it has."""
    deadline = time.monotonic() + 5
    with psycopg.connect(admin, autocommit=True) as c:
        while True:
            row = c.execute(
                "SELECT count(*), pg_relation_size(%s::regclass) / 8192 FROM pg_buffercache "
                "WHERE relfilenode = pg_relation_filenode(%s::regclass) AND reldatabase = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())",
                (name, name),
            ).fetchone()
            assert row is not None
            if int(row[0]) >= least or time.monotonic() > deadline:
                return int(row[0]), int(row[1])
            time.sleep(0.05)


def evict(admin: str, name: str) -> None:
    """Empty PostgreSQL's buffers of one relation, as a server restart would."""
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute("SELECT pg_buffercache_evict_relation(%s::regclass)", (name,))


def test_the_first_search_of_a_scope_prewarms_its_index_when_pg_prewarm_is_installed(
    loaded: tuple[str, str],
) -> None:
    dsn, admin = loaded
    own = q.ScopeIndex("t1", "alice", MODEL, DIM).name
    alice = Scope("t1", "alice")
    query = unit(np.random.default_rng(22).standard_normal(DIM))
    plain = PostgresStore(dsn, max_size=2, exact_scan_max=0)  # no pg_prewarm yet
    try:
        unwarmed = plain.search.vector_search(alice, MODEL, query, 10, NOW)
    finally:
        plain.close()
    assert prewarms(admin) == 0
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute("CREATE EXTENSION pg_prewarm")  # as a DBA would, once
    try:
        warm = PostgresStore(dsn, max_size=2, exact_scan_max=0)
        try:
            evict(admin, own)
            warmed = warm.search.vector_search(alice, MODEL, query, 10, NOW)
            # in the background, every block of the scope's index comes into the buffers
            pages = in_buffers(admin, own)[1]
            assert in_buffers(admin, own, pages)[0] == pages > 0
            again = warm.search.vector_search(alice, MODEL, query, 10, NOW)
            assert warmed == unwarmed == again  # the same results, prewarmed or not
            # an erasure still drops the index it warmed (its definition names the actor)
            assert warm.erasure.forget_actor("t1", "alice", datetime.now(UTC)).verified
        finally:
            warm.close()  # its backends report their function calls as they exit
        assert prewarms(admin, 1) == 1  # once per process and scope
        defs = index_defs(dsn)
        assert own not in defs and not any("alice" in d for d in defs.values())
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute("DROP EXTENSION pg_prewarm")
