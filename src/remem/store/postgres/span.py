"""A recall's reads in one transaction bound to its tenant (`PostgresBackend.span`).

Every statement of the PostgreSQL store runs in a transaction that names its tenant
(`set_config('remem.tenant', ..., true)`), which row-level security reads. A recall
makes about a dozen reads; each was a transaction of its own, four statements in one
round trip (BEGIN, `set_config`, the read, COMMIT). Inside `span(tenant)` the reads
of that tenant made by the thread that entered it share one transaction on one pooled
connection: the first sends BEGIN, `set_config` and itself in one round trip, each
later one only itself, and the span ends with COMMIT. Each statement is still bound to
the tenant, by the same `set_config`, and at READ COMMITTED it sees what was committed
before it began, as it did in a transaction of its own.

- A read with settings of its own (`SET LOCAL`-like `set_config(..., true)`: the HNSW
  searches) runs between SAVEPOINT and ROLLBACK TO SAVEPOINT, so its settings end with
  it and never reach the span's later reads.
- A read bound to another tenant or to every tenant, any write (`PostgresBackend.write`,
  one statement) and any other transaction (`PostgresBackend.tx`) first ends the span's
  transaction (COMMIT, connection
  back to the pool): a thread never holds two pooled connections (so spans cannot
  exhaust the pool waiting for a second one), nothing written rides in the read
  transaction, and no statement runs under another binding. The span's next read
  begins a new transaction.
- A failed statement rolls the span's transaction back and returns its connection; the
  span's next read begins a new one.
- A round trip goes through libpq's pipeline directly (`remem.store.postgres.wire`),
  for a fraction of psycopg's CPU, when its statements fit it (`Spans.direct`);
  otherwise through psycopg's cursors, in the same round trip.

Reads sent ahead (`Spans.ahead`). A recall knows some of its reads before it needs
them: the versions of the scopes it reads, its word searches. Each round trip costs
a wake-up of two processes, about 0.2-1 ms on a 2-core VM where the statements
themselves take 0.05-0.5 ms (docs/decisions/service-speed.md), so the reads known early
are queued in the span and sent in its next round trip, whatever that carries; their
rows are kept, and a later read of the same statement with the same parameters in the
span takes them instead of a round trip of its own (once: a second such read goes to
the database). At READ COMMITTED each statement reads what was committed before it
began, so a read answered early is the read made a moment before: as if the recall had
made it first. The span's end drops what was queued and kept (at most `AHEAD_MAX`
statements), so nothing crosses a write of this thread or another span. A queued
statement that fails fails the round trip it rode in, as it would have failed the
transaction later.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from remem.store.postgres import sql as q
from remem.store.postgres import wire

Query = str | pg_sql.Composed
Settings = Sequence[tuple[str, Mapping[str, Any]]]
Command = tuple[str, Mapping[str, Any] | None]  # a statement sent around a span's reads

SAVEPOINT = "SAVEPOINT remem_read"
UNDO_SETTINGS = "ROLLBACK TO SAVEPOINT remem_read"
RELEASE = "RELEASE SAVEPOINT remem_read"
AHEAD_MAX = 16  # statements queued or kept ahead in one span, at most

# a statement and its parameters, as a read sent ahead is matched by a later one
Key = tuple[str, Any]


@dataclass
class Span:
    """One thread's span of reads of `tenant`; `conn` holds its open transaction,
    `queued` the reads to send ahead with its next round trip, `answers` the rows of
    those sent, until a read takes them."""

    tenant: str
    conn: psycopg.Connection[Any] | None = None
    queued: dict[Key, tuple[Query, Any]] = field(default_factory=dict)
    answers: dict[Key, list[DictRow]] = field(default_factory=dict)
    closing: bool = False  # the next round trip ends the transaction (`Spans.last`)


def statement_key(sql: Query, params: Any) -> Key | None:
    """What a read sent ahead is matched on: its text and its parameters, or None for
    parameters that cannot be compared (a vector)."""
    try:
        return (sql if isinstance(sql, str) else repr(sql), _frozen(params))
    except TypeError:
        return None


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if value is None or isinstance(value, str | int | float | datetime):
        return value
    raise TypeError(f"not compared: {type(value).__name__}")


class Spans:
    """The open span of each thread, over one pool. `direct`: reads go through libpq's
    pipeline directly where they can (`remem.store.postgres.wire`)."""

    direct = True

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._local = threading.local()

    def current(self) -> Span | None:
        """This thread's span, if it is inside one."""
        span: Span | None = getattr(self._local, "span", None)
        return span

    def of(self, tenant: str | None) -> Span | None:
        """This thread's span, if it is inside one of `tenant`'s."""
        span = self.current()
        return span if span is not None and span.tenant == tenant else None

    @contextmanager
    def open(self, tenant: str) -> Iterator[None]:
        """A span of reads of `tenant` on this thread (nested: the outer one goes on)."""
        if self.current() is not None:
            yield
            return
        span = Span(tenant)
        self._local.span = span
        try:
            yield
        finally:
            self._local.span = None
            self.end(span)

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Statements run inside as if this thread were in no span (its transaction ended
        first): a write is committed at once, never held in the read transaction."""
        span = self.current()
        if span is None:
            yield
            return
        self.end(span)
        self._local.span = None
        try:
            yield
        finally:
            self._local.span = span

    def pause(self) -> None:
        """End this thread's span's transaction, if one is open (see the module)."""
        span = self.current()
        if span is not None:
            self.end(span)

    def end(self, span: Span, *, failed: bool = False) -> None:
        """COMMIT (or, after a failure, roll back) the span's transaction and return its
        connection to the pool."""
        conn, span.conn = span.conn, None
        span.queued.clear()
        span.answers.clear()
        span.closing = False
        if conn is None:
            return
        try:
            if failed:
                conn.rollback()
            else:
                conn.execute("COMMIT")
        except psycopg.Error:
            conn.close()  # the pool discards a closed connection
            if not failed:
                raise
        finally:
            self._pool.putconn(conn)

    def ahead(self, span: Span, statements: Sequence[tuple[Query, Any]]) -> None:
        """Queue reads to send with the span's next round trip (see the module); those
        already queued or kept, those whose parameters cannot be matched and those past
        `AHEAD_MAX` are left out."""
        for sql, params in statements:
            key = statement_key(sql, params)
            if key is None or key in span.queued or key in span.answers:
                continue
            if len(span.queued) + len(span.answers) >= AHEAD_MAX:
                return
            span.queued[key] = (sql, params)

    def last(self, span: Span) -> None:
        """The span's next read is its last: COMMIT rides in its round trip, and the
        connection goes back to the pool then (a read after it begins a new transaction)."""
        span.closing = span.conn is not None

    def rows(self, span: Span, sql: Query, params: Any, settings: Settings) -> list[DictRow]:
        """One read in the span's transaction (begun with it if none is open)."""
        return self.rows_many(span, [(sql, params)], settings)[0]

    def rows_many(
        self, span: Span, statements: Sequence[tuple[Query, Any]], settings: Settings = ()
    ) -> list[list[DictRow]]:
        """Several reads in the span's transaction, sent in one round trip (with BEGIN
        and the tenant's binding when the transaction is new); reads sent ahead answer
        from what they got."""
        if span.answers and not settings:
            keys = [statement_key(sql, params) for sql, params in statements]
            if len(set(keys)) == len(keys) and all(k in span.answers for k in keys):
                return [span.answers.pop(k) for k in keys if k is not None]
        if self.direct and (got := self._direct(span, statements, settings)) is not None:
            return got
        with self._statement(span, settings, len(statements)) as curs:
            for cur, (sql, params) in zip(curs, statements, strict=True):
                cur.execute(sql, params)
        return [cur.fetchall() for cur in curs]

    def _direct(
        self, span: Span, statements: Sequence[tuple[Query, Any]], settings: Settings
    ) -> list[list[DictRow]] | None:
        """`rows_many` through libpq's pipeline directly (`remem.store.postgres.wire`):
        the same round trip for a fraction of psycopg's CPU; None (nothing sent) when a
        statement does not fit it.

        psycopg deallocates every prepared statement of a connection after a ROLLBACK
        it ran there (a failed write's, the pool's), the pipeline's too; a round trip
        that finds one of them gone forgets them all and runs once more, in a new
        transaction (at READ COMMITTED each statement reads what was committed before it
        began, in the span's transaction or another)."""
        for attempt in range(2):
            fresh = span.conn is None
            conn = span.conn or self._pool.getconn()
            closing = span.closing
            queued = {} if closing else span.queued
            try:
                pipe = self._pipeline(conn, span.tenant, fresh, statements, settings)
                for sql, params in queued.values():
                    pipe.add(sql, params)
                if closing:
                    pipe.add("COMMIT", rows=False)
            except wire.Unfit:
                if fresh:
                    self._pool.putconn(conn)
                return None
            except BaseException:  # a value that cannot be sent: nothing was
                span.conn = conn
                self.end(span, failed=True)
                raise
            span.conn, span.queued = conn, {}
            try:
                got = pipe.run()
            except psycopg.errors.InvalidSqlStatementName:
                wire.forget_prepared(conn)
                self.end(span, failed=True)
                span.queued, span.closing = queued, closing
                if attempt:
                    raise
                continue
            except BaseException:
                self.end(span, failed=True)
                raise
            span.answers.update(zip(queued, got[len(statements) :], strict=True))
            if closing:
                span.conn, span.closing = None, False
                span.answers.clear()
                self._pool.putconn(conn)
            return got[: len(statements)]
        raise AssertionError("unreachable")

    @staticmethod
    def _pipeline(
        conn: psycopg.Connection[Any],
        tenant: str,
        fresh: bool,
        statements: Sequence[tuple[Query, Any]],
        settings: Settings,
    ) -> wire.Pipeline:
        """A round trip of `statements` on `conn` with what `_around` sends around them;
        raises `wire.Unfit` if one does not fit."""
        pipe = wire.Pipeline(conn)
        before, after = _around(tenant, fresh, settings)
        for statement, values in before:
            pipe.add(statement, values, rows=False)
        for sql, params in statements:
            pipe.add(sql, params)
        for statement, values in after:
            pipe.add(statement, values, rows=False)
        return pipe

    @contextmanager
    def cursor(self, span: Span) -> Iterator[psycopg.Cursor[DictRow]]:
        """A cursor in the span's transaction, for several statements in a row."""
        with self._statement(span, (), 0, closes=False):
            pass
        assert span.conn is not None
        try:
            yield span.conn.cursor(row_factory=dict_row)
        except psycopg.Error:
            self.end(span, failed=True)
            raise

    @contextmanager
    def _statement(
        self, span: Span, settings: Settings, n: int = 1, *, closes: bool = True
    ) -> Iterator[list[psycopg.Cursor[DictRow]]]:
        """Yield `n` cursors whose statements run in the span's transaction, sent in one
        round trip with BEGIN and the tenant's binding when the transaction is new, and
        between SAVEPOINT and ROLLBACK TO SAVEPOINT when it has settings; then the reads
        queued ahead, whose rows are kept, and COMMIT when the span is closing and
        `closes` (the connection then goes back to the pool; the rows are the cursors')."""
        fresh = span.conn is None
        conn = span.conn = span.conn or self._pool.getconn()
        try:
            curs = [conn.cursor(row_factory=dict_row) for _ in range(n)]
            closing = span.closing and closes
            if not fresh and not settings and n <= 1 and not span.queued and not closing:
                yield curs  # a read alone (or none: `cursor`): nothing else sent
                return
            queued, span.queued = ({} if closing else span.queued), {}
            sent: list[tuple[Key, psycopg.Cursor[DictRow]]] = []
            before, after = _around(span.tenant, fresh, settings)
            with conn.pipeline():
                for statement, values in before:
                    conn.execute(statement, values)
                yield curs
                for statement, values in after:
                    conn.execute(statement, values)
                for key, (sql, params) in queued.items():
                    cur = conn.cursor(row_factory=dict_row)
                    cur.execute(sql, params)
                    sent.append((key, cur))
                if closing:
                    conn.execute("COMMIT")
            span.answers.update((key, cur.fetchall()) for key, cur in sent)
            if closing:  # nothing was queued or sent ahead in this round trip
                span.conn, span.closing = None, False
                span.answers.clear()
                self._pool.putconn(conn)
        except BaseException:
            self.end(span, failed=True)
            raise


def _around(tenant: str, fresh: bool, settings: Settings) -> tuple[list[Command], list[Command]]:
    """What a span's round trip sends before and after its reads: BEGIN and the tenant's
    binding when its transaction is new, and its settings between SAVEPOINT and ROLLBACK
    TO SAVEPOINT (then RELEASE), so they end with the reads."""
    before: list[Command] = []
    after: list[Command] = []
    if fresh:
        before += [("BEGIN", None), (q.SET_TENANT, {"tenant": tenant})]
    if settings:
        before += [(SAVEPOINT, None), *settings]
        after += [(UNDO_SETTINGS, None), (RELEASE, None)]
    return before, after
