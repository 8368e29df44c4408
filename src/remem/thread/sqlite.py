"""Thread state on the SQLite store: checkpoints and the tool-call ledger.

Runs on an open `SQLiteStore` (its connection, write lock and migrations;
the tables come from `sqlite_migrations/0002_thread.sql`, the SQL from
`remem.thread.sqlite_sql`, the flows from `remem.thread.base`). Every write is
one `BEGIN IMMEDIATE` transaction, so a check and the write that depends on it
happen under the database's write lock, whichever process writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from remem.store.sqlite import SQLiteStore
from remem.thread import sqlite_sql
from remem.thread.base import ThreadSQL, ThreadStore
from remem.timeutil import to_db


class SQLiteThreadStore(ThreadStore):
    """Checkpoints and tool calls in the database of one `SQLiteStore`.

    Shares the store's connection and lock, so it is as thread-safe as the
    store; any number of processes may use the same file.
    """

    sql: ClassVar[ThreadSQL] = sqlite_sql
    _at = staticmethod(to_db)  # times are kept as sortable UTC text

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self.path = store.path

    def _tx(self, tenant: str | None) -> AbstractContextManager[sqlite3.Connection]:
        return self._store._tx()  # one file is one trust domain: the SQL names the tenant

    def _rows(self, tenant: str, sql: str, params: Sequence[Any]) -> list[sqlite3.Row]:
        return self._store._rows(sql, params)


def erase_actor_rows(db: sqlite3.Connection, tenant: str, actor: str) -> dict[str, int]:
    """Delete one actor's thread state inside `SQLiteStore.forget_actor`'s transaction."""
    return SQLiteThreadStore.erase_actor_rows(db, tenant, actor)


def count_actor_rows(store: SQLiteStore, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    return SQLiteThreadStore(store).count_actor_rows(tenant, actor)
