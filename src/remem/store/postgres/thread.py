"""Thread state on PostgreSQL: checkpoints and the tool-call ledger.

Runs on the role a `PostgresStore` offers (`store.thread`: its pool,
tenant-bound transactions and migrations; the tables come from
`postgres/migrations/0005_thread.sql`), with the SQL of
`remem.store.postgres.thread_sql` and the flows of `remem.store.flows.thread`. There is no
database-wide write lock and many writers, at PostgreSQL's default READ
COMMITTED: a second writer of one checkpoint version waits for the first to
commit, finds the version moved and matches nothing; of any number of
concurrent begins one inserts, and the others wait for it to commit and then
lock its row (`FOR UPDATE`).

Every transaction is bound to its tenant (`PostgresStore._tx`), so row-level
security confines it to that tenant's rows even if a statement forgot its
`WHERE tenant = %s`; retention for every tenant is bound to `ALL_TENANTS`.
Driver errors become remem's there too. Nothing here imports psycopg.
"""

from __future__ import annotations

from typing import ClassVar

from remem.store.flows.thread import ThreadSQL, ThreadStore, host_of
from remem.store.postgres import thread_sql as postgres_sql
from remem.store.roles import ThreadState


class PostgresThreadStore(ThreadStore):
    """Checkpoints and tool calls in the database of one `PostgresStore`.

    Shares the store's connection pool, so it is as thread-safe as the store;
    any number of processes may use the same database.
    """

    sql: ClassVar[ThreadSQL] = postgres_sql

    def __init__(self, store: ThreadState) -> None:
        super().__init__(host_of(store, "postgres"))


def count_actor_rows(store: ThreadState, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    return PostgresThreadStore(store).count_actor_rows(tenant, actor)
