"""The conformance suite: every test here runs on every store backend.

PostgreSQL runs on a real server (see `tests.pg_helpers`): one per session,
a fresh database per test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.store.base import Store
from remem.store.sqlite import SQLiteStore
from tests import pg_helpers

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SQLiteStore(tmp_path / "conformance.db")
        yield s
        s.close()
    elif request.param == "postgres":
        from remem.store.postgres import PostgresStore

        admin = request.getfixturevalue("pg_admin_dsn")
        with pg_helpers.fresh_database(admin) as dsn:
            pg = PostgresStore(dsn, max_size=4)
            yield pg
            pg.close()
    else:  # pragma: no cover - a backend listed without a fixture
        raise AssertionError(request.param)
