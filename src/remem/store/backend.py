"""The small protocol a SQL backend offers the flows written once above it.

A flow (`remem.store.erasure`, `remem.thread.base`) runs named statements in a
transaction and reads rows by column name; it never sees a driver. A backend
supplies the transaction (a `sqlite3.Connection` under its write lock, a psycopg
cursor bound to a tenant), its dialect's SQL under the names the flow uses, and
a `ListBinder` for statements over a list of keys: SQLite splices `?` marks
into `IN ({marks})` in chunks of at most `CHUNK` (its bound-parameter limit),
PostgreSQL passes the whole list once as an array (`= ANY(%(keys)s)`), so a flow
calls one statement per list and never learns which.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

CHUNK = 500  # the most keys one SQLite statement binds


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    """`items` in lists of at most `size`, in order (SQLite's bound-parameter limit)."""
    listed = list(items)
    for i in range(0, len(listed), size):
        yield listed[i : i + size]


class Row(Protocol):
    """A row read by column name: a `sqlite3.Row`, a psycopg dict row."""

    def __getitem__(self, column: str, /) -> Any: ...


class Result(Protocol):
    """A cursor after one statement."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Row]: ...


class Tx(Protocol):
    """An open transaction: a `sqlite3.Connection`, a psycopg cursor."""

    def execute(self, sql: Any, params: Any = ..., /) -> Result: ...


class ListBinder(Protocol):
    """Binds a statement over a list of keys (`keys` in its SQL) for one backend."""

    def __call__(
        self, sql: str, params: Mapping[str, Any], keys: Sequence[Any]
    ) -> Iterator[tuple[str, Mapping[str, Any] | Sequence[Any]]]: ...


def sqlite_lists(
    sql: str, params: Mapping[str, Any], keys: Sequence[Any]
) -> Iterator[tuple[str, Mapping[str, Any] | Sequence[Any]]]:
    """SQLite: `{keys}` in `sql` becomes named marks `:k0, :k1, ...`, in chunks."""
    items = list(keys)
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        marks = ", ".join(f":k{i}" for i in range(len(chunk)))
        yield sql.format(keys=marks), {**params, **{f"k{i}": v for i, v in enumerate(chunk)}}


def postgres_lists(
    sql: str, params: Mapping[str, Any], keys: Sequence[Any]
) -> Iterator[tuple[str, Mapping[str, Any] | Sequence[Any]]]:
    """PostgreSQL: the whole list as one array parameter `keys`, in one statement."""
    yield sql, {**params, "keys": list(keys)}
