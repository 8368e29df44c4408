"""Thread state on SQLite: checkpoints and the tool-call ledger.

Runs on the role a `SQLiteStore` offers (`store.thread`: its connection, write
lock and migrations; the tables come from `sqlite/migrations/0002_thread.sql`),
with the SQL of `remem.store.sqlite.thread_sql` and the flows of `remem.store.flows.thread`.
Every write is one `BEGIN IMMEDIATE` transaction, so a check and the write that
depends on it happen under the database's write lock, whichever process writes.
"""

from __future__ import annotations

from typing import ClassVar

from remem.store.flows.thread import ThreadSQL, ThreadStore, host_of
from remem.store.roles import ThreadState
from remem.store.sqlite import thread_sql as sqlite_sql


class SQLiteThreadStore(ThreadStore):
    """Checkpoints and tool calls in the database of one `SQLiteStore`.

    Shares the store's connection and lock, so it is as thread-safe as the
    store; any number of processes may use the same file.
    """

    sql: ClassVar[ThreadSQL] = sqlite_sql

    def __init__(self, store: ThreadState) -> None:
        super().__init__(host_of(store, "sqlite"))


def count_actor_rows(store: ThreadState, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    return SQLiteThreadStore(store).count_actor_rows(tenant, actor)
