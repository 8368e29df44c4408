"""Thread state on the PostgreSQL store: checkpoints and the tool-call ledger.

Runs on an open `PostgresStore` (its pool, tenant-bound transactions and
migrations; the tables come from `postgres_migrations/0005_thread.sql`, the
SQL from `remem.thread.postgres_sql`, the flows from `remem.thread.base`).
There is no database-wide write lock and many writers, at PostgreSQL's
default READ COMMITTED: a second writer of one checkpoint version waits for
the first to commit, finds the version moved and matches nothing; of any
number of concurrent begins one inserts, and the others wait for it to commit
and then lock its row (`FOR UPDATE`).

Every transaction is bound to its tenant (`PostgresStore._tx`), so row-level
security confines it to that tenant's rows even if a statement forgot its
`WHERE tenant = %s`; retention for every tenant is bound to `ALL_TENANTS`.
Driver errors become remem's there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

from remem.thread import postgres_sql
from remem.thread.base import ThreadSQL, ThreadStore

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import DictRow

    from remem.store.postgres import PostgresStore

    Cursor = psycopg.Cursor[DictRow]


class PostgresThreadStore(ThreadStore):
    """Checkpoints and tool calls in the database of one `PostgresStore`.

    Shares the store's connection pool, so it is as thread-safe as the store;
    any number of processes may use the same database.
    """

    sql: ClassVar[ThreadSQL] = postgres_sql

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def _tx(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        return self._store._tx(tenant)  # None is the store's ALL_TENANTS

    def _rows(self, tenant: str, sql: str, params: Sequence[Any]) -> list[DictRow]:
        return self._store._rows(tenant, sql, params)


def erase_actor_rows(cur: Cursor, tenant: str, actor: str) -> dict[str, int]:
    """Delete one actor's thread state inside `PostgresStore.forget_actor`'s transaction."""
    return PostgresThreadStore.erase_actor_rows(cur, tenant, actor)


def count_actor_rows(store: PostgresStore, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    return PostgresThreadStore(store).count_actor_rows(tenant, actor)
