"""The small protocol a SQL backend offers the flows written once above it.

A flow (`remem.store.flows.erasure`, `remem.store.flows.events`, `remem.store.flows.writes`,
`remem.store.flows.jobs`, `remem.store.flows.thread`) runs named statements in a
transaction and reads rows by column name; it never sees a driver. A backend
supplies the transaction (a `sqlite3.Connection` under its write lock, a psycopg
cursor bound to a tenant), its dialect's SQL under the names the flow uses, and
a `ListBinder` for statements over a list of keys: SQLite splices `?` marks
into `IN ({marks})` in chunks of at most `CHUNK` (its bound-parameter limit),
PostgreSQL passes the whole list once as an array (`= ANY(%(keys)s)`), so a flow
calls one statement per list and never learns which. `Backend` is what every
flow of a store asks of its database: transactions, single statements in their
own, statements run once per row of parameters, and how values travel; each role
object (`remem.store.roles`) is built over one.
Parameters are named everywhere (`:name` on SQLite, `%(name)s` on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from remem.store.values import Clock

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

    def executemany(self, sql: Any, params: Any, /) -> object: ...


class ListBinder(Protocol):
    """Binds a statement over a list of keys (`keys` in its SQL) for one backend."""

    def __call__(
        self, sql: str, params: Mapping[str, Any], keys: Sequence[Any]
    ) -> Iterator[tuple[str, Mapping[str, Any]]]: ...


def sqlite_lists(
    sql: str, params: Mapping[str, Any], keys: Sequence[Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """SQLite: `{keys}` in `sql` becomes named marks `:k0, :k1, ...`, in chunks."""
    items = list(keys)
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        marks = ", ".join(f":k{i}" for i in range(len(chunk)))
        yield sql.format(keys=marks), {**params, **{f"k{i}": v for i, v in enumerate(chunk)}}


def postgres_lists(
    sql: str, params: Mapping[str, Any], keys: Sequence[Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """PostgreSQL: the whole list as one array parameter `keys`, in one statement; none
    for no keys, as on SQLite (a round trip that could find nothing)."""
    if keys:
        yield sql, {**params, "keys": list(keys)}


class Backend(Protocol):
    """What every flow of a store asks of its database (`remem.store.sqlite.backend`,
    `remem.store.postgres.backend`): transactions, single statements in their own,
    statements run once per row of parameters, and how values travel.

    `tenant` None is a transaction that spans tenants by design (a worker claiming
    jobs of every tenant); PostgreSQL's row-level security binds every other
    transaction to its tenant, SQLite's file is one trust domain.
    """

    @property
    def clock(self) -> Clock:
        """What stamps the rows the flows write (UTC now unless a test sets a clock)."""
        ...

    @property
    def lists(self) -> ListBinder:
        """How a statement over a list of keys is bound (`sqlite_lists`, `postgres_lists`)."""
        ...

    @property
    def vector_fit_sql(self) -> tuple[str, ...]:
        """The statements a write of vectors runs first (`remem.store.flows.vector_fit`)."""
        ...

    def transaction(self, tenant: str | None) -> AbstractContextManager[Tx]:
        """One write transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL: bound to `tenant`)."""
        ...

    def bind(self, db: Tx, tenant: str) -> None:
        """Bind an open transaction to another tenant from here on (PostgreSQL's wall;
        nothing on SQLite), so one transaction can write several tenants' rows."""
        ...

    def reading(self, tenant: str | None) -> AbstractContextManager[Tx]:
        """Reads that see one another (SQLite: the connection under its lock; PostgreSQL:
        a transaction bound to `tenant`)."""
        ...

    def read(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> Sequence[Row]:
        """The rows of one reading statement, in its own transaction."""
        ...

    def read_many(
        self, tenant: str | None, statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> Sequence[Sequence[Row]]:
        """The rows of each of several reading statements, in one transaction that sees
        them all (on PostgreSQL sent in one round trip), in order."""
        ...

    def write(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> Sequence[Row]:
        """The rows (RETURNING) of one writing statement, in its own write transaction."""
        ...

    def ahead(self, tenant: str, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Begin some reads a caller will make soon: PostgreSQL sends them with this
        thread's next round trip in a span of `tenant` and answers the same reads from
        them (`remem.store.postgres.span`); SQLite does nothing."""
        ...

    def each(self, db: Tx, sql: str, rows: Sequence[Mapping[str, Any]]) -> list[Row | None]:
        """Run `sql` once per row of parameters; the first row each returned, or None."""
        ...

    def at(self, t: datetime | None) -> Any:
        """A time as the driver takes it (None stays None)."""
        ...

    def time(self, value: Any) -> datetime:
        """A stored time as an aware UTC datetime."""
        ...

    def json_param(self, value: Any) -> object:
        """A JSON value as the driver takes it."""
        ...

    def json_value(self, value: Any) -> Any:
        """A stored JSON value, decoded."""
        ...

    def list_param(self, items: Sequence[str]) -> object:
        """A list column's value (SQLite: JSON text; PostgreSQL: an array)."""
        ...

    def list_value(self, value: Any) -> list[str]:
        """A stored list column's items."""
        ...
