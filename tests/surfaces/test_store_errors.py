"""Driver errors in conditions one backend has: a locked SQLite file, a cut PostgreSQL
connection; and what the faces make of them (the library, HTTP).

The conditions are real: another connection holding SQLite's write lock, the
server terminating remem's sessions with `pg_terminate_backend`, a file that cannot
be written. Each error is remem's (`StoreUnavailable` for what a retry cures), says
what was wrong and what to do, and shows no path or connection string.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from remem.errors import StoreError, StoreUnavailable
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.sqlite.store import SQLiteStore
from tests.support import pg
from tests.support.store import answering, ev, immutable


def test_a_sqlite_file_another_connection_is_writing_is_unavailable_for_a_moment(
    tmp_path: Path,
) -> None:
    path = tmp_path / "private-folder" / "busy.db"
    path.parent.mkdir()
    store = SQLiteStore(path, busy_timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's long write transaction
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            store.events.add_events([ev(1)], ["offline"])
        assert time.monotonic() - started < 10  # it waited its busy timeout, not 30 s
        message = str(info.value)
        assert "locked" in message and "retry" in message and "nothing was stored" in message
        assert "private-folder" not in message and "busy.db" not in message
        assert info.value.code == "store_unavailable"
        other.execute("ROLLBACK")
        assert store.events.add_events([ev(1)], ["offline"]) == [True]  # the retry stores it once
        assert [e.id for e in store.events.list_events("t1", "alice")] == ["e1"]
        assert store.jobs.pending_jobs("t1") == 1
    finally:
        other.close()
        store.close()


def test_a_postgres_connection_the_server_cut_is_unavailable_then_replaced(
    pg_admin_dsn: str,
) -> None:
    from remem.store.postgres.store import PostgresStore

    with pg.fresh_database(pg_admin_dsn) as dsn:
        store = PostgresStore(dsn, max_size=1)
        try:
            store.events.add_events([ev(1)], ["offline"])
            admin = pg.admin_dsn_for(pg_admin_dsn, dsn)
            with psycopg.connect(admin, autocommit=True) as conn:
                cut = conn.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
            assert cut is not None and cut[0] >= 1
            with pytest.raises(StoreUnavailable) as info:
                store.events.list_events("t1", "alice")
            message = str(info.value)
            assert "connection was lost" in message and "retry" in message
            parts = psycopg.conninfo.conninfo_to_dict(dsn)
            for key in ("dbname", "user", "password", "host", "port"):
                if key in parts:
                    assert str(parts[key]) not in message
            answering(store)  # the pool replaced the connection
            assert [e.id for e in store.events.list_events("t1", "alice")] == ["e1"]
        finally:
            store.close()


def _read_only_file(tmp_path: Path) -> tuple[Path, str]:
    """A remem database with an admin key, then made unwritable; its path and the key."""
    path = tmp_path / "hidden-folder" / "ro.db"
    path.parent.mkdir()
    store = open_store(path)
    _, secret = keyring.create_key(store.keys, tenant="acme", role="admin")
    store.close()
    return path, secret


def test_memory_on_a_read_only_file_says_so(tmp_path: Path) -> None:
    path, _ = _read_only_file(tmp_path)
    undo = immutable(path)
    try:
        with Memory.open(path) as mem:
            with pytest.raises(StoreError, match="read-only") as info:
                mem.remember(actor="alice", text="I prefer aisle seats")
            assert "hidden-folder" not in str(info.value)
            assert mem.recall(actor="alice", query="aisle seats").records == ()
    finally:
        undo()


def test_http_on_a_read_only_file_is_a_503_saying_what_to_do(tmp_path: Path) -> None:
    path, secret = _read_only_file(tmp_path)
    undo = immutable(path)
    try:
        app = create_app(str(path), worker=False)
        with TestClient(app) as client:
            r = client.post(
                "/v1/events",
                headers={"Authorization": f"Bearer {secret}"},
                json={"actor_id": "alice", "session_id": "s1", "role": "user",
                      "text": "I prefer aisle seats"},
            )  # fmt: skip
    finally:
        undo()
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "store_error"
    assert "read-only" in error["message"] and "writable" in error["message"]
    assert "hidden-folder" not in error["message"]
