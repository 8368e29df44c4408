"""Which thread state a store's database has: chosen by the role the store declares.

A store says what it offers (`Store.thread`, a `ThreadHost` naming its SQL
dialect, or None); nothing here tests what class a store is.
"""

from __future__ import annotations

from collections.abc import Callable

from remem.store.flows.thread import ThreadStore
from remem.store.roles import ThreadState


def _sqlite(store: ThreadState) -> ThreadStore:
    from remem.store.sqlite.thread import SQLiteThreadStore

    return SQLiteThreadStore(store)


def _postgres(store: ThreadState) -> ThreadStore:
    # imported here: psycopg costs about 0.1 s, which an embedded CLI call must not pay
    from remem.store.postgres.thread import PostgresThreadStore

    return PostgresThreadStore(store)


KINDS: dict[str, Callable[[ThreadState], ThreadStore]] = {"sqlite": _sqlite, "postgres": _postgres}


def thread_state(store: ThreadState) -> ThreadStore | None:
    """The thread state (checkpoints, tool calls) of `store`'s database, or None when its
    backend keeps none."""
    host = store.thread
    kind = None if host is None else KINDS.get(host.dialect)
    return None if kind is None else kind(store)
