"""A scope's own HNSW index, made after the write that grows the scope large, is built
concurrently on a real server: other writers of record_vectors go on meanwhile, and an
erasure of the actor waits for the build and leaves no index that names the actor."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest

from remem.store.postgres import sql as q
from remem.store.postgres.store import PostgresStore
from remem.store.roles import ForgetReport
from tests.support import pg
from tests.support.vectors import DIM, MODEL, index_defs, load, unit


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


def building(dsn: str, name: str, wait_s: float = 10.0) -> bool:
    """Whether a CREATE INDEX of `name` is running (waited for up to `wait_s`)."""
    deadline = time.monotonic() + wait_s
    with psycopg.connect(dsn, autocommit=True) as c:
        while time.monotonic() < deadline:
            row = c.execute(
                "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX%%' "
                "AND query LIKE %s AND state = 'active'",
                (f"%{name}%",),
            ).fetchone()
            if row:
                return True
            time.sleep(0.05)
    return False


def test_a_scope_index_is_built_without_blocking_writers_and_an_erasure_waits_for_it(
    dsn: str,
) -> None:
    rng = np.random.default_rng(31)
    store = PostgresStore(dsn, max_size=2, scope_index_min=200)
    other = PostgresStore(dsn, max_size=2, scope_index_min=10**9)  # never builds one
    blocker = psycopg.connect(dsn)  # an open transaction that has written record_vectors
    try:
        with store.bulk_load():  # analysed at its end: the planner knows 1,000 vectors
            load(store, "bob", unit(rng.standard_normal((1000, DIM))))
        carols = q.ScopeIndex("t1", "carol", MODEL, DIM).name
        blocker.execute("LOCK TABLE record_vectors IN ROW EXCLUSIVE MODE")
        grown = threading.Thread(
            target=load, args=(store, "carol", unit(rng.standard_normal((250, DIM))))
        )
        grown.start()  # carol's write commits, then her index waits for the blocker
        assert building(dsn, carols)
        wrote = threading.Thread(
            target=load, args=(other, "dave", unit(rng.standard_normal((20, DIM))))
        )
        wrote.start()
        wrote.join(timeout=10)
        assert not wrote.is_alive()  # another writer is not held up by the build
        erased: list[ForgetReport] = []
        forget = threading.Thread(
            target=lambda: erased.append(
                other.erasure.forget_actor("t1", "carol", datetime.now(UTC))
            )
        )
        forget.start()
        time.sleep(0.5)
        assert not erased  # the erasure waits for the build of a scope index
        blocker.commit()
        grown.join(timeout=30)
        forget.join(timeout=30)
        assert not grown.is_alive() and not forget.is_alive()
        assert erased and erased[0].verified
        defs = index_defs(dsn)
        assert carols not in defs and not any("carol" in d for d in defs.values())
        # and the next write that makes a scope large builds its index again, valid
        load(store, "erin", unit(rng.standard_normal((250, DIM))))
        erins = q.ScopeIndex("t1", "erin", MODEL, DIM).name
        with psycopg.connect(dsn) as c:
            valid = c.execute(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (erins,)
            ).fetchone()
        assert valid == (True,)
    finally:
        blocker.close()
        other.close()
        store.close()
