"""Driver errors become remem's at the store boundary, on every backend, in real conditions.

A database that can no longer be written (an immutable SQLite file, a PostgreSQL
database turned read-only) refuses a write with a `StoreError` that says so and
what to do, never a `sqlite3` or `psycopg` exception, and never the file's path or
the connection string; what it held can still be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from remem.errors import StoreError, StoreUnavailable
from remem.store.roles import Store
from remem.store.sqlite.store import SQLiteStore
from tests.support import pg
from tests.support.store import answering, ev, immutable

# a backend's store, a way to make its database refuse writes (returning the store to use
# afterwards), and what no message may show
Broken = tuple[Store, Callable[[], Store], list[str]]


@pytest.fixture(params=["sqlite", "postgres"])
def broken(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broken]:
    if request.param == "sqlite":
        path = tmp_path / "secret-folder" / "errors.db"
        path.parent.mkdir()
        opened: list[Store] = [SQLiteStore(path)]
        undo: list[Callable[[], None]] = []

        def read_only() -> Store:
            opened[0].close()
            undo.append(immutable(path))
            opened.append(SQLiteStore(path))  # it opens: reading needs no write
            return opened[-1]

        try:
            yield opened[0], read_only, [str(path), "secret-folder"]
        finally:
            for u in undo:
                u()
            opened[-1].close()
        return
    import psycopg

    admin = request.getfixturevalue("pg_admin_dsn")
    with pg.fresh_database(admin) as dsn:
        from remem.store.postgres.store import PostgresStore

        pg_store = PostgresStore(dsn, max_size=2)
        info = psycopg.conninfo.conninfo_to_dict(dsn)
        db_admin = pg.admin_dsn_for(admin, dsn)

        def read_only_db() -> Store:
            with psycopg.connect(db_admin, autocommit=True) as conn:
                name = info["dbname"]
                conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            return pg_store

        try:
            hidden = [str(info[k]) for k in ("dbname", "password", "user", "host") if k in info]
            yield pg_store, read_only_db, hidden
        finally:
            pg_store.close()


def test_a_read_only_database_refuses_a_write_saying_so(broken: Broken) -> None:
    store, read_only, secrets = broken
    store.events.add_events([ev(1)], ["offline"])
    store = read_only()
    answering(store)
    with pytest.raises(StoreError) as info:
        store.events.add_events([ev(2)], ["offline"])
    assert not isinstance(info.value, StoreUnavailable)  # retrying would not help
    message = str(info.value)
    assert "read-only" in message and "nothing was stored" in message
    for secret in secrets:
        assert secret not in message
    assert [e.id for e in store.events.list_events("t1", "alice")] == ["e1"]  # reading still works
    assert store.jobs.pending_jobs("t1") == 1
