"""The server backend: PostgreSQL with pgvector, full-text search and a pool.

Any number of stateless API servers and workers share one database: jobs are
taken with `FOR UPDATE SKIP LOCKED`, migrations are serialised by an advisory
lock, and every transaction names its tenant (`remem.tenant`, set with
`set_config(..., true)`) so row-level security confines it to that tenant's
rows even if a query forgot its `WHERE tenant = ...`. The few operations that
span tenants by design (claiming, extending and failing jobs, for workers that
serve every tenant; counting for `stats`; finding an API key by its hash, which is
how a request's tenant is found) say so with `remem.all_tenants`.

This module holds the pool, migrations, events and records; the rest of
`Store` comes from mixins, each in one sitting: search, vectors and their HNSW
indexes (`remem.store.postgres_search`), erasure (`remem.store.postgres_erasure`,
on the flows of `remem.store.erasure`), jobs, the request ledger and model calls
(`remem.store.postgres_jobs`) and API keys (`remem.store.postgres_keys`). Named
queries are in `remem.store.postgres_sql` (the vector ones in
`remem.store.postgres_vector_sql`), row conversions in `remem.store.postgres_rows`.
psycopg is imported only by these modules, so remem's core never needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql
from psycopg.rows import DictRow, dict_row
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool

from remem.errors import ConflictError, RememError, SchemaTooNew, StoreError
from remem.model import Event, HistoryEntry, Record, Status
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store import postgres_sql as q
from remem.store.backend import ListBinder, postgres_lists
from remem.store.base import (
    Clock,
    Near,
    Scope,
    SourceGrowth,
    ThreadHost,
    Write,
    new_sources,
    refuse_foreign_records,
)
from remem.store.errors import NOT_UNICODE, from_postgres
from remem.store.postgres_erasure import PostgresErasure
from remem.store.postgres_jobs import PostgresJobs
from remem.store.postgres_keys import PostgresKeys
from remem.store.postgres_rows import (
    ALL_TENANTS,
    event_from_row,
    event_params,
    history_from_row,
    history_params,
    record_from_row,
    record_params,
    value,
    vector_dumper,
)
from remem.store.postgres_search import PostgresSearch
from remem.store.rows import near_from
from remem.timeutil import utcnow

SCHEMA_VERSION = 7  # the newest migration this code knows; checked by a test

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger(__name__)


class PostgresStore(PostgresErasure, PostgresSearch, PostgresJobs, PostgresKeys):
    """`Store` on a PostgreSQL database (with pgvector). Safe to share between threads."""

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        exact_scan_max: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        """Connect to (and migrate) the database at `dsn` through a pool of `min_size` to
        `max_size` connections; `clock` stamps what the store writes (default: UTC now)."""
        self.dsn = dsn
        self._clock: Clock = clock or utcnow
        self._lists: ListBinder = postgres_lists
        self._where = redact_dsn(dsn)
        self._exact_scan_max = exact_scan_max  # a fixed bound instead (0: HNSW always)
        # an index known to exist maps to None; one found missing, to when it was looked for
        self._indexes: dict[q.VectorIndex, float | None] = {}
        self._build_failed: dict[q.VectorIndex, float] = {}  # when building one last failed
        self._deferred: set[q.VectorIndex] | None = None  # inside `bulk_load`: built at its end
        self._large: dict[tuple[str, str, str, str], tuple[bool, float]] = {}
        self._iterative = False  # pgvector 0.8's iterative index scans; set by _migrate
        self._migrate()
        self._pool = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
            name="remem",
            configure=_configure,
        )
        try:
            self._pool.open(wait=True, timeout=30.0)
        except psycopg.Error as exc:
            self._pool.close()
            raise self._translate(exc, opening=True) from exc
        try:
            self._rls_bypass = self._row_security_bypass()
        except BaseException:
            self._pool.close()
            raise

    # -- the second tenant wall ---------------------------------------------

    row_security = True

    @property
    def rls_bypassed(self) -> bool:
        """Whether row-level security does not bind the role remem connected as."""
        return bool(self._rls_bypass)

    def warnings(self) -> list[str]:
        """One line when row-level security does not bind this role (why, and what to do)."""
        if not self._rls_bypass:
            return []
        return [
            f"the PostgreSQL role {self._rls_bypass}, so row-level security does not bind "
            "it and the database's tenant wall is off (remem's own tenant filters still "
            "apply); connect as an ordinary role that owns the tables (README: PostgreSQL)"
        ]

    @property
    def thread(self) -> ThreadHost:
        """Thread state in this database (`Store.thread`), in transactions bound to a tenant
        (None: `ALL_TENANTS`, for retention) like every other."""
        return ThreadHost(
            dialect="postgres", tx=self._tx, rows=self._rows, at=_same_time, clock=self._clock
        )

    def _row_security_bypass(self) -> str:
        """Why row-level security does not bind the connected role, or '' when it does."""
        row = self._rows(ALL_TENANTS, q.ROW_SECURITY)[0]
        if row["rolsuper"]:
            return "is a superuser"
        if row["rolbypassrls"]:
            return "has BYPASSRLS"
        if row["open_tables"]:
            tables = ", ".join(row["open_tables"])
            return f"owns tables without FORCE ROW LEVEL SECURITY ({tables})"
        return ""

    # -- plumbing -----------------------------------------------------------

    def _connect(self) -> psycopg.Connection[DictRow]:
        try:
            return psycopg.connect(
                self.dsn, autocommit=True, row_factory=dict_row, connect_timeout=10
            )
        except psycopg.Error as exc:
            raise self._translate(exc, opening=True) from exc

    def _migrate(self) -> None:
        """Apply the migrations this database lacks, in order; refuse a newer database."""
        with self._connect() as conn:
            try:
                with conn.transaction():
                    conn.execute(q.MIGRATION_LOCK)
                    conn.execute(q.SCHEMA_TABLE)
                    row = conn.execute(q.SCHEMA_VERSION).fetchone()
                    version = int(row["coalesce"]) if row else 0
                    if version > SCHEMA_VERSION:
                        raise SchemaTooNew(
                            f"the database at {self._where} was written by a newer remem "
                            f"(schema {version}, this remem knows up to {SCHEMA_VERSION}); "
                            "upgrade remem to open it"
                        )
                    for number, sql in q.migrations():
                        if number > version:
                            for statement in q.split_sql(sql):
                                conn.execute(statement)
                            conn.execute(q.SET_VERSION, (number,))
                    row = conn.execute(q.PGVECTOR_VERSION).fetchone()
                    found = str(row["extversion"]) if row else "0"
                    self._iterative = tuple(int(p) for p in found.split(".")[:2]) >= (0, 8)
            except psycopg.Error as exc:
                raise self._translate(exc, opening=True) from exc

    def schema_version(self) -> int:
        """The newest migration applied to this database."""
        return int(value(self._rows(ALL_TENANTS, q.SCHEMA_VERSION)))

    @contextmanager
    def _tx(self, tenant: str | None) -> Iterator[Cursor]:
        """One transaction bound to `tenant` (or, with `ALL_TENANTS`, to every tenant)."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                cur = conn.cursor(row_factory=dict_row)
                if tenant is None:
                    cur.execute(q.SET_ALL_TENANTS)
                else:
                    cur.execute(q.SET_TENANT, (tenant,))
                yield cur
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        except UnicodeEncodeError:
            raise NOT_UNICODE.raise_as() from None

    def _rows(
        self,
        tenant: str | None,
        sql: Query,
        params: Sequence[Any] | Mapping[str, Any] = (),
        settings: Sequence[tuple[str, Sequence[Any]]] = (),
    ) -> list[DictRow]:
        """The rows of one statement in its own transaction bound to `tenant` (after some
        `set_config` statements), sent in one pipeline: one round trip, not four."""
        bind = (q.SET_ALL_TENANTS, ()) if tenant is None else (q.SET_TENANT, (tenant,))
        try:
            with self._pool.connection() as conn:
                try:
                    with conn.pipeline():
                        conn.execute("BEGIN")
                        for statement, values in (bind, *settings):
                            conn.execute(statement, values)
                        cur = conn.cursor(row_factory=dict_row)
                        cur.execute(sql, params)
                        conn.execute("COMMIT")
                    return cur.fetchall()
                except (psycopg.Error, UnicodeEncodeError):
                    conn.rollback()  # the failed transaction, before the pool takes it back
                    raise
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        except UnicodeEncodeError:
            raise NOT_UNICODE.raise_as() from None

    def _translate(self, exc: psycopg.Error, *, opening: bool = False) -> RememError:
        """A driver error as one of remem's, saying what to do.

        Only opening the store (the operator's `remem` command or the service's
        start) names the database, without its password, and quotes the driver.
        An error of an operation may reach an HTTP or MCP client, so it says what
        happened and nothing else: no connection string, host, user or driver
        text (which can quote the request's values); the log has the details. Its
        meaning comes from the table in `remem.store.errors`.
        """
        if not opening:
            log.warning("PostgreSQL at %s: %s: %s", self._where, type(exc).__name__, exc)
            return from_postgres(exc)
        if isinstance(exc, pg_errors.InsufficientPrivilege) and "vector" in str(exc):
            return StoreError(
                f"the database at {self._where} lacks the pgvector extension and this role "
                "may not create it; run `CREATE EXTENSION vector` there as a superuser"
            )
        if isinstance(exc, pg_errors.UndefinedFile | pg_errors.FeatureNotSupported):
            return StoreError(
                f"the PostgreSQL server at {self._where} cannot load pgvector ({exc}); "
                "install pgvector 0.5 or newer on the server"
            )
        if isinstance(exc, pg_errors.SerializationFailure | pg_errors.UniqueViolation):
            return ConflictError(f"a concurrent writer got there first ({exc}); retry")
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(
                f"cannot use the PostgreSQL database at {self._where} ({exc}); "
                "check the URL, that the server is running, and the credentials"
            )
        return StoreError(f"PostgreSQL at {self._where} refused an operation: {exc}")

    def close(self) -> None:
        """Close every pooled connection; the store cannot be used afterwards."""
        self._pool.close()

    # -- events and the outbox ------------------------------------------------

    def add_events(self, events: Sequence[Event], strategies: Sequence[str]) -> list[bool]:
        """Append events with their jobs in one transaction; see `Store.add_events`."""
        now = self._clock()
        by_tenant: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_tenant.setdefault(e.tenant, []).append(i)
        result: dict[int, bool] = {}
        # one transaction per tenant: row-level security binds a transaction to one tenant
        for tenant, indexes in by_tenant.items():
            batch = [events[i] for i in indexes]
            try:
                with self._tx(tenant) as cur:
                    fresh = self._classify(cur, tenant, batch)
                    new = [i for i, is_new in zip(indexes, fresh, strict=True) if is_new]
                    result.update(zip(indexes, fresh, strict=True))
                    if new:
                        rows = [event_params(events[i], now) for i in new]
                        cur.executemany(q.INSERT_EVENT, rows, returning=True)
                        raced = []
                        for i in new:
                            if cur.fetchone() is None:  # a concurrent writer stored this id
                                raced.append(i)
                            cur.nextset()
                        if raced:  # the stored one decides: a repeat, or a conflict
                            self._classify(cur, tenant, [events[i] for i in raced])
                            new = [i for i in new if i not in raced]
                            result.update(dict.fromkeys(raced, False))
                    if new:  # the words of the new events, for `search_events`
                        cur.execute(q.INSERT_EVENT_TERMS, (tenant, [events[i].id for i in new]))
                    jobs = [
                        (tenant, events[i].id, strategy, now, now)
                        for i in new
                        for strategy in strategies
                    ]
                    if jobs:
                        cur.executemany(q.INSERT_JOB, jobs)
            except EventIdTaken as exc:
                raise EventIdTaken(exc.event_id, indexes[exc.index]) from None
        return [result[i] for i in range(len(events))]

    @staticmethod
    def _classify(cur: Cursor, tenant: str, batch: Sequence[Event]) -> list[bool]:
        """Per event, whether it is new; raises `EventIdTaken` (see `remem.policy.events`)."""
        ids = list(dict.fromkeys(e.id for e in batch))
        cur.execute(q.EVENT_IDENTITIES, (tenant, ids))
        stored = {
            r["id"]: Identity(r["actor"], r["session"], r["role"], r["text"])
            for r in cur.fetchall()
        }
        return classify(batch, stored)

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]:
        """Events of one actor (optionally one session), oldest first by their own time."""
        if session is None:
            rows = self._rows(tenant, q.LIST_EVENTS_ACTOR, (tenant, actor, limit))
        else:
            rows = self._rows(tenant, q.LIST_EVENTS_SESSION, (tenant, actor, session, limit))
        return [event_from_row(r) for r in rows]

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]:
        """The events with these client ids, in arrival order."""
        rows = self._rows(tenant, q.GET_EVENTS, (tenant, list(event_ids)))
        return [event_from_row(r) for r in rows]

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of `event`'s session before it, oldest first."""
        key = (event.tenant, event.actor, event.session, event.time, limit)
        rows = self._rows(event.tenant, q.SESSION_CONTEXT, key)
        return [event_from_row(r) for r in reversed(rows)]

    # -- records --------------------------------------------------------------

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically; see `Write`."""
        now = self._clock()
        refuse_foreign_records(write)
        for dims in {len(v) for v in write.vectors if v is not None}:
            self._ensure_index(q.VectorIndex("record_vectors", write.vector_model, dims))
        with self._tx(write.tenant) as cur:
            if self._from_erased_work(cur, write):
                log.info("a write from work on erased events was dropped")
                return
            if write.inserts:
                cur.executemany(q.INSERT_RECORD, [record_params(r) for r in write.inserts])
                ids = [r.id for r in write.inserts]
                cur.execute(q.INSERT_RECORD_TERMS, (write.tenant, ids))
                links = [(r.tenant, e, r.id) for r in write.inserts for e in r.source.event_ids]
                if links:
                    cur.executemany(q.INSERT_RECORD_EVENT, links)
                vectors = [
                    (rec.tenant, rec.id, rec.actor, write.vector_model, np.asarray(v))
                    for rec, v in zip(write.inserts, write.vectors, strict=False)
                    if v is not None
                ]
                if vectors:
                    cur.executemany(q.INSERT_VECTOR, vectors)
            for ch in write.changes:
                closing = (ch.status.value, ch.valid_until, ch.superseded_by, now, write.tenant)
                if cur.execute(q.CLOSE_RECORD, (*closing, ch.record_id)).rowcount == 0:
                    raise StoreError(f"record {ch.record_id} vanished during consolidation")
            for g in write.sources:
                self._grow_sources(cur, write.tenant, g, now)
            if write.history:
                rows = [history_params(write.tenant, h) for h in write.history]
                cur.executemany(q.INSERT_HISTORY, rows)
            if write.done_jobs:
                cur.execute(q.DONE_JOBS, (now, write.tenant, list(write.done_jobs)))

    @staticmethod
    def _grow_sources(cur: Cursor, tenant: str, g: SourceGrowth, now: datetime) -> None:
        """Join a restating statement's events to a stored record's source (row locked)."""
        row = cur.execute(q.RECORD_SOURCES, (tenant, g.record_id)).fetchone()
        if row is None:
            raise StoreError(f"record {g.record_id} vanished during consolidation")
        stored = list(row["source_event_ids"])
        added = new_sources(stored, g.event_ids)
        if added:
            cur.execute(q.GROW_SOURCES, ([*stored, *added], now, tenant, g.record_id))
            cur.executemany(q.INSERT_RECORD_EVENT, [(tenant, e, g.record_id) for e in added])

    @staticmethod
    def _from_erased_work(cur: Cursor, write: Write) -> bool:
        """Whether a consolidation step comes from work an erasure overtook: its jobs were
        deleted with their events, or a record it adds came from covered events."""
        jobs = sorted(set(write.done_jobs))
        if jobs and len(cur.execute(q.LOCK_JOBS, (write.tenant, jobs)).fetchall()) < len(jobs):
            return True
        for rec in write.inserts:
            if rec.source.event_ids:
                args = q.tombstoned_params(rec.tenant, rec.actor, list(rec.source.event_ids))
                if cur.execute(q.IS_TOMBSTONED, args).fetchall():
                    return True
        for g in write.sources:
            args = q.tombstoned_params(write.tenant, g.actor, list(g.event_ids))
            if cur.execute(q.IS_TOMBSTONED, args).fetchall():
                return True
        return False

    def get_record(self, tenant: str, record_id: str) -> Record | None:
        """One record of this tenant, or None."""
        rows = self._rows(tenant, q.GET_RECORD, (tenant, record_id))
        return record_from_row(rows[0]) if rows else None

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out)."""
        return [record_from_row(r) for r in self._rows(tenant, q.GET_RECORDS, (tenant, list(ids)))]

    def list_records(
        self, scope: Scope, statuses: Iterable[Status] | None = None, limit: int = 10_000
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only."""
        wanted = [s.value for s in (statuses or [Status.ACTIVE, Status.INVALID, Status.PROPOSED])]
        sql, params = q.list_records(scope)
        return [record_from_row(r) for r in self._rows(scope.tenant, sql, (*params, wanted, limit))]

    def records_by_field(self, scope: Scope, field: str) -> list[Record]:
        """Active and invalid records of one scope about `field`, newest first."""
        rows = self._rows(scope.tenant, q.BY_FIELD, (scope.tenant, scope.actor, field))
        return [record_from_row(r) for r in rows]

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]:
        """The append-only history of one record, oldest first."""
        return [history_from_row(r) for r in self._rows(tenant, q.HISTORY, (tenant, record_id))]

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the status of each such record.

        Summaries are left out: a summary is an index over its events, not made
        from one of them, and its older versions must not mark the events old.
        """
        found: dict[str, list[str]] = {}
        for r in self._rows(tenant, q.RECORD_STATUS_BY_EVENT, (tenant, list(event_ids))):
            found.setdefault(r["event_id"], []).append(r["status"])
        return found

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        if not events or reach <= 0:
            return {}
        tenant = events[0].tenant
        params = (reach, reach, tenant, [e.id for e in events])
        return near_from(self._rows(tenant, q.EVENTS_NEAR, params), event_from_row)

    def stats(self) -> dict[str, int]:
        """Row counts over every tenant, for `remem bench` and diagnostics."""
        with self._tx(ALL_TENANTS) as cur:
            return {name: int(value(cur.execute(sql).fetchall())) for name, sql in q.STATS.items()}

    def database_size(self) -> int:
        """The bytes the database takes on the server (tables, indexes, TOAST), for bench."""
        return int(value(self._rows(ALL_TENANTS, q.DATABASE_SIZE)))


# -- helpers ----------------------------------------------------------------------


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Send numpy vectors to this database in pgvector's binary form; read times in UTC.

    (A session zone west of UTC would turn a time early in year 1 into year 0,
    which Python cannot represent.)"""
    conn.execute("SET TIME ZONE 'UTC'")
    info = TypeInfo.fetch(conn, "vector")
    if info is not None:  # the migrations create the extension; without it, vectors fail
        conn.adapters.register_dumper(np.ndarray, vector_dumper(info.oid))


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the given URL"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def _same_time(t: datetime | None) -> datetime | None:
    """A time as psycopg takes it: as it is."""
    return t
