"""The PostgreSQL backend: a pool of connections, transactions bound to a tenant, and how
values travel.

`PostgresBackend` is what the flows written once (`remem.store.flows`) ask of PostgreSQL
(`remem.store.flows.backend.Backend`): every transaction names its tenant
(`remem.tenant`, set with `set_config(..., true)`) so row-level security confines it
to that tenant's rows even if a query forgot its `WHERE tenant = ...`; None is a
transaction that spans tenants by design (`remem.all_tenants`). A single statement
runs in its own transaction sent in one pipeline (one round trip). psycopg takes
datetimes, arrays and Jsonb as they are. Driver errors become remem's here
(`translate`). The store (`remem.store.postgres.store`) migrates the database and
composes its roles over this object.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql
from psycopg.rows import DictRow, dict_row
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from remem.errors import ConflictError, RememError, StoreError
from remem.store.errors import NOT_UNICODE, from_postgres
from remem.store.flows.backend import ListBinder, Row, Tx, postgres_lists
from remem.store.postgres import sql as q
from remem.store.postgres.rows import json_value, utc, vector_dumper
from remem.store.postgres.span import Span, Spans
from remem.store.values import Clock

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger("remem.store.postgres.store")


class PostgresBackend:
    """A pool of `min_size` to `max_size` connections to the database at `dsn` (opened by
    `open`), shared by every role of its store. Safe to share between threads."""

    lists: ListBinder = staticmethod(postgres_lists)
    # the statements a write of vectors runs first (`remem.store.flows.vector_fit`)
    vector_fit_sql: tuple[str, ...] = (q.VECTOR_FIT_LOCK, q.VECTOR_FIRST_LOCK, q.VECTOR_FIT)

    def __init__(self, dsn: str, *, min_size: int, max_size: int, clock: Clock) -> None:
        """Make the pool (not yet open: the store migrates first, on a connection of its own)."""
        self.dsn = dsn
        self.clock = clock
        self.where = redact_dsn(dsn)
        self.pool = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
            name="remem",
            configure=_configure,
        )
        self.spans = Spans(self.pool)  # each thread's span of reads (`span`)

    def open(self) -> None:
        """Open the pool, waiting for its first connections; a failure says what to do."""
        try:
            self.pool.open(wait=True, timeout=30.0)
        except psycopg.Error as exc:
            self.pool.close()
            raise self.translate(exc, opening=True) from exc

    def connect(self) -> psycopg.Connection[DictRow]:
        """A connection of its own, outside the pool (autocommit)."""
        try:
            return psycopg.connect(
                self.dsn, autocommit=True, row_factory=dict_row, connect_timeout=10
            )
        except psycopg.Error as exc:
            raise self.translate(exc, opening=True) from exc

    @contextmanager
    def span(self, tenant: str) -> Iterator[None]:
        """The reads of `tenant` this thread makes inside, in one transaction bound to it
        (`remem.store.postgres.span`): a recall's dozen reads send one BEGIN, one
        `set_config` and one COMMIT instead of one each."""
        try:
            with self.spans.open(tenant):
                yield
        except psycopg.Error as exc:
            raise self.translate(exc) from exc

    def ahead(self, tenant: str, statements: Sequence[tuple[Query, Any]]) -> None:
        """Send some reads of `tenant` with this thread's next round trip, for a later
        read in its span to take (`Spans.ahead`); outside a span of `tenant`, nothing."""
        if (span := self.spans.of(tenant)) is not None:
            self.spans.ahead(span, statements)

    def last_read(self, tenant: str) -> None:
        """This thread's next read in its span of `tenant` ends the span's transaction in
        its own round trip (`Spans.last`); outside such a span, nothing."""
        if (span := self.spans.of(tenant)) is not None:
            self.spans.last(span)

    @contextmanager
    def tx(self, tenant: str | None) -> Iterator[Cursor]:
        """One transaction bound to `tenant` (or, with `ALL_TENANTS`, to every tenant)."""
        try:
            self.spans.pause()  # a thread holds one pooled connection at a time
            with self.pool.connection() as conn, conn.transaction():
                cur = conn.cursor(row_factory=dict_row)
                if tenant is None:
                    cur.execute(q.SET_ALL_TENANTS)
                else:
                    cur.execute(q.SET_TENANT, {"tenant": tenant})
                yield cur
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        except UnicodeEncodeError:
            raise NOT_UNICODE.raise_as() from None

    def rows(
        self,
        tenant: str | None,
        sql: Query,
        params: Sequence[Any] | Mapping[str, Any] = (),
        settings: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> list[DictRow]:
        """The rows of one statement in its own transaction bound to `tenant` (after some
        `set_config` statements), sent in one pipeline: one round trip, not four; inside
        a span of reads of `tenant` (`span`), in the span's transaction."""
        return self.rows_many(tenant, [(sql, params)], settings)[0]

    def rows_many(
        self,
        tenant: str | None,
        statements: Sequence[tuple[Query, Sequence[Any] | Mapping[str, Any]]],
        settings: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> list[list[DictRow]]:
        """The rows of each of several statements, as `rows` runs one: all in one
        transaction and one round trip (in the span's transaction inside a span)."""
        bind: tuple[str, Mapping[str, Any]] = (
            (q.SET_ALL_TENANTS, {}) if tenant is None else (q.SET_TENANT, {"tenant": tenant})
        )
        try:
            if (span := self.spans.of(tenant)) is not None:
                return self.spans.rows_many(span, statements, settings)
            self.spans.pause()  # another binding: not in the span's transaction
            with self.pool.connection() as conn:
                try:
                    with conn.pipeline():
                        conn.execute("BEGIN")
                        for statement, values in (bind, *settings):
                            conn.execute(statement, values)
                        curs = [conn.cursor(row_factory=dict_row) for _ in statements]
                        for cur, (sql, params) in zip(curs, statements, strict=True):
                            cur.execute(sql, params)
                        conn.execute("COMMIT")
                    return [cur.fetchall() for cur in curs]
                except (psycopg.Error, UnicodeEncodeError):
                    conn.rollback()  # the failed transaction, before the pool takes it back
                    raise
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        except UnicodeEncodeError:
            raise NOT_UNICODE.raise_as() from None

    def translate(self, exc: psycopg.Error, *, opening: bool = False) -> RememError:
        """A driver error as one of remem's, saying what to do.

        Only opening the store (the operator's `remem` command or the service's
        start) names the database, without its password, and quotes the driver.
        An error of an operation may reach an HTTP or MCP client, so it says what
        happened and nothing else: no connection string, host, user or driver
        text (which can quote the request's values); the log has the details. Its
        meaning comes from the table in `remem.store.errors`.
        """
        if not opening:
            log.warning(
                "PostgreSQL at %s: %s: %s", self.where, type(exc).__name__,
                without_passwords(str(exc)),
            )  # fmt: skip
            return from_postgres(exc)
        said = without_passwords(str(exc))  # the driver may quote a URL it could not read
        if isinstance(exc, pg_errors.InsufficientPrivilege) and "vector" in str(exc):
            return StoreError(
                f"the database at {self.where} lacks the pgvector extension and this role "
                "may not create it; run `CREATE EXTENSION vector` there as a superuser"
            )
        if isinstance(exc, pg_errors.UndefinedFile | pg_errors.FeatureNotSupported):
            return StoreError(
                f"the PostgreSQL server at {self.where} cannot load pgvector ({said}); "
                "install pgvector 0.5 or newer on the server"
            )
        if isinstance(exc, pg_errors.SerializationFailure | pg_errors.UniqueViolation):
            return ConflictError(f"a concurrent writer got there first ({said}); retry")
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(
                f"cannot use the PostgreSQL database at {self.where} ({said}); "
                "check the URL, that the server is running, and the credentials"
            )
        return StoreError(f"PostgreSQL at {self.where} refused an operation: {said}")

    def close(self) -> None:
        """Close every pooled connection."""
        self.pool.close()

    # -- `remem.store.flows.backend.Backend` -------------------------------------------------

    def transaction(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        """A transaction bound to `tenant` (`tx`)."""
        return self.tx(tenant)

    def bind(self, db: Tx, tenant: str) -> None:
        """Bind the open transaction to `tenant` from here on."""
        db.execute(q.SET_TENANT, {"tenant": tenant})

    def reading(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        """A transaction bound to `tenant`, for reads that see one another (inside a span
        of reads of `tenant`, the span's)."""
        if (span := self.spans.of(tenant)) is not None:
            return self._span_cursor(span)
        return self.tx(tenant)

    @contextmanager
    def _span_cursor(self, span: Span) -> Iterator[Cursor]:
        try:
            with self.spans.cursor(span) as cur:
                yield cur
        except psycopg.Error as exc:
            raise self.translate(exc) from exc

    def read(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[DictRow]:
        """The rows of one statement, in one pipelined transaction."""
        return self.rows(tenant, sql, params)

    def read_many(
        self, tenant: str | None, statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Sequence[DictRow]]:
        """The rows of each of several statements, in one pipelined transaction."""
        return list(self.rows_many(tenant, statements))

    def write(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[DictRow]:
        """The rows (RETURNING) of one statement, in one pipelined transaction, committed
        now: never in a span's read transaction."""
        try:
            with self.spans.aside():
                return self.rows(tenant, sql, params)
        except psycopg.Error as exc:
            raise self.translate(exc) from exc

    def each(self, db: Tx, sql: str, rows: Sequence[Mapping[str, Any]]) -> list[Row | None]:
        """Run `sql` once per row of parameters, pipelined (one round trip)."""
        assert isinstance(db, psycopg.Cursor)
        if not rows:
            return []
        db.executemany(sql, rows, returning=True)
        out: list[Row | None] = []
        for _ in rows:
            out.append(db.fetchone())
            db.nextset()
        return out

    def at(self, t: datetime | None) -> datetime | None:
        """A time as psycopg takes it: as it is."""
        return t

    def time(self, value: Any) -> datetime:
        """A stored time as an aware UTC datetime."""
        return utc(value)

    def json_param(self, value: Any) -> Jsonb:
        """A JSON value as jsonb."""
        return Jsonb(value)

    def json_value(self, value: Any) -> Any:
        """A stored JSON value, decoded."""
        return json_value(value)

    def list_param(self, items: Sequence[str]) -> list[str]:
        """A list column's value: an array."""
        return list(items)

    def list_value(self, value: Any) -> list[str]:
        """A stored array's items."""
        return list(value)


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Send numpy vectors to this database in pgvector's binary form; read times in UTC.

    (A session zone west of UTC would turn a time early in year 1 into year 0,
    which Python cannot represent.)"""
    conn.execute("SET TIME ZONE 'UTC'")
    info = TypeInfo.fetch(conn, "vector")
    if info is not None:  # the migrations create the extension; without it, vectors fail
        conn.adapters.register_dumper(np.ndarray, vector_dumper(info.oid))


_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/@:\"']*:)[^\s@\"']*@", re.IGNORECASE)
_PARAM_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def without_passwords(text: str) -> str:
    """`text` with the password of every URL (`scheme://user:PASSWORD@`) and of every
    `password=...` parameter in it replaced by `***`."""
    return _PARAM_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the given URL"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
