"""The server backend: PostgreSQL with pgvector, full-text search and a pool.

Any number of stateless API servers and workers share one database: jobs are
taken with `FOR UPDATE SKIP LOCKED`, migrations are serialised by an advisory
lock, and every transaction names its tenant (`remem.tenant`, set with
`set_config(..., true)`) so row-level security confines it to that tenant's
rows even if a query forgot its `WHERE tenant = ...`. The few operations that
span tenants by design (claiming, extending and failing jobs, for workers that
serve every tenant; counting for `stats`; finding an API key by its hash, which is
how a request's tenant is found) say so with `remem.all_tenants`.

This module holds the pool, migrations, and what the flows written once ask of
PostgreSQL (`remem.store.flows.backend.SQLFlows`: its transactions bound to a tenant,
how values travel, term rows and vector rows). The flows come from mixins:
reads by key or scope (`remem.store.flows.lookups`), adding events
(`remem.store.flows.events`), writing a batch (`remem.store.flows.writes`), the
job queue, request ledger and model calls (`remem.store.flows.jobs`), API keys
(`remem.store.flows.keys`) and erasure (`remem.store.flows.erasure`, with
PostgreSQL's parts in `remem.store.postgres.erasure`); search, vectors and
their HNSW indexes are PostgreSQL's own (`remem.store.postgres.search`), as is
`events_near`. Named queries are in `remem.store.postgres.sql` (the vector ones
in `remem.store.postgres.vectors.sql`), PostgreSQL's own value conversions in
`remem.store.postgres.rows`.
psycopg is imported only by these modules, so remem's core never needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, ClassVar

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql
from psycopg.rows import DictRow, dict_row
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from remem.errors import ConflictError, RememError, SchemaTooNew, StoreError
from remem.model import Event, Record
from remem.store.errors import NOT_UNICODE, from_postgres
from remem.store.flows.actors import ActorIndex, ActorSQL, PostgresActorSQL
from remem.store.flows.audit import AuditSQL, AuditTrail
from remem.store.flows.backend import ListBinder, Row, Tx, postgres_lists
from remem.store.flows.backfill import BackfillSQL, VectorBackfill
from remem.store.flows.events import EventLog, EventSQL
from remem.store.flows.jobs import JobQueue, JobSQL
from remem.store.flows.keys import ApiKeys, KeySQL
from remem.store.flows.lookups import Lookups, LookupSQL
from remem.store.flows.writes import Vector, WriteSQL
from remem.store.postgres import audit_sql
from remem.store.postgres import backfill_sql as backfill_q
from remem.store.postgres import sql as q
from remem.store.postgres.documents import PostgresDocuments
from remem.store.postgres.erasure import PostgresErasure
from remem.store.postgres.reindex import PostgresReindex
from remem.store.postgres.rows import ALL_TENANTS, json_value, utc, value, vector_dumper
from remem.store.postgres.search import SCOPE_DDL_WAIT_S, SCOPE_INDEX_MIN, PostgresSearch
from remem.store.postgres.span import Span, Spans
from remem.store.roles import Clock, ForgetReport, Near, ThreadHost, Write
from remem.store.rows import near_from
from remem.timeutil import utcnow

SCHEMA_VERSION = 16  # the newest migration this code knows; checked by a test

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger(__name__)


class PostgresStore(
    PostgresErasure,
    PostgresSearch,
    Lookups,
    EventLog,
    VectorBackfill,
    JobQueue,
    ApiKeys,
    ActorIndex,
    AuditTrail,
):
    """`Store` on a PostgreSQL database (with pgvector). Safe to share between threads."""

    # the named statements of the flows written once (`remem.store.flows.backend`)
    events_sql: ClassVar[EventSQL] = q
    write_sql: ClassVar[WriteSQL] = q
    backfill_sql: ClassVar[BackfillSQL] = backfill_q
    jobs_sql: ClassVar[JobSQL] = q
    lookup_sql: ClassVar[LookupSQL] = q
    keys_sql: ClassVar[KeySQL] = q
    audit_sql: ClassVar[AuditSQL] = audit_sql
    vector_fit_sql: ClassVar[tuple[str, ...]] = (
        q.VECTOR_FIT_LOCK, q.VECTOR_FIRST_LOCK, q.VECTOR_FIT
    )  # fmt: skip
    actor_sql: ClassVar[type[ActorSQL]] = PostgresActorSQL

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        exact_scan_max: int | None = None,
        scope_index_min: int = SCOPE_INDEX_MIN,
        clock: Clock | None = None,
        migrate: bool = True,
    ) -> None:
        """Connect to (and migrate) the database at `dsn` through a pool of `min_size` to
        `max_size` connections; `clock` stamps what the store writes (default: UTC now);
        a scope of `scope_index_min` vectors of a model gets an HNSW index of its own.
        `migrate=False` applies nothing (a newer database is still refused): `remem
        migrate --plan` reads what is pending."""
        self.dsn = dsn
        self._clock: Clock = clock or utcnow
        self._lists: ListBinder = postgres_lists
        self._where = redact_dsn(dsn)
        self._exact_scan_max = exact_scan_max  # a fixed bound instead (0: HNSW always)
        # an index known to exist maps to None; one found missing, to when it was looked for
        self._indexes: dict[q.VectorIndex | q.ScopeIndex, float | None] = {}
        self._build_failed: dict[q.VectorIndex | q.ScopeIndex, float] = {}  # last failed build
        self._scope_index_min = scope_index_min
        self._scope_checked: dict[q.ScopeIndex, float] = {}  # when a scope was last counted
        self._deferred: set[q.VectorIndex] | None = None  # inside `bulk_load`: built at its end
        self._large: dict[tuple[str, str, str, str], tuple[bool, float]] = {}
        self._iterative = False  # pgvector 0.8's iterative index scans; set by _migrate
        self._prewarm = False  # whether pg_prewarm is installed; set by _migrate
        self._warmed: set[q.ScopeIndex] = set()  # scope indexes this process has prewarmed
        self._migrate(apply=migrate)
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
        self._spans = Spans(self._pool)  # each thread's span of reads (`reading`)
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
            "apply); connect as an ordinary role that owns the tables (docs/postgresql.md)"
        ]

    @property
    def documents(self) -> PostgresDocuments:
        """Documents in this database (`Store.documents`, `remem.store.postgres.documents`)."""
        return PostgresDocuments(self)

    @property
    def reindexing(self) -> PostgresReindex:
        """Re-embedding with another embedder (`Store.reindexing`,
        `remem.store.postgres.reindex`)."""
        return PostgresReindex(self)

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

    def _migrate(self, *, apply: bool = True) -> None:
        """Apply the migrations this database lacks, in order (none: `apply=False`);
        refuse a newer database."""
        with self._connect() as conn:
            try:
                with conn.transaction():
                    conn.execute(q.MIGRATION_LOCK)
                    if apply:
                        conn.execute(q.SCHEMA_TABLE)
                    version = _version(conn)
                    if version > SCHEMA_VERSION:
                        raise SchemaTooNew(
                            f"the database at {self._where} was written by a newer remem "
                            f"(schema {version}, this remem knows up to {SCHEMA_VERSION}); "
                            "upgrade remem to open it"
                        )
                    for number, sql in q.migrations():
                        if apply and number > version:
                            for statement in q.split_sql(sql):
                                conn.execute(statement)
                            conn.execute(q.SET_VERSION, {"version": number})
                    row = conn.execute(q.PGVECTOR_VERSION).fetchone()
                    found = str(row["extversion"]) if row else "0"
                    self._iterative = tuple(int(p) for p in found.split(".")[:2]) >= (0, 8)
                    self._prewarm = conn.execute(q.PREWARM_INSTALLED).fetchone() is not None
            except psycopg.Error as exc:
                raise self._translate(exc, opening=True) from exc

    @property
    def schema_known(self) -> int:
        """The newest migration this code knows."""
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        """The newest migration applied to this database (0: none, not even the table)."""
        if not value(self._rows(ALL_TENANTS, q.SCHEMA_EXISTS)):
            return 0
        return int(value(self._rows(ALL_TENANTS, q.SCHEMA_VERSION)))

    @contextmanager
    def reading(self, tenant: str) -> Iterator[None]:
        """The reads of `tenant` this thread makes inside, in one transaction bound to it
        (`Store.reading`; `remem.store.postgres.span`): a recall's dozen reads send one
        BEGIN, one `set_config` and one COMMIT instead of one each."""
        try:
            with self._spans.open(tenant):
                yield
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    @contextmanager
    def _tx(self, tenant: str | None) -> Iterator[Cursor]:
        """One transaction bound to `tenant` (or, with `ALL_TENANTS`, to every tenant)."""
        try:
            self._spans.pause()  # a thread holds one pooled connection at a time
            with self._pool.connection() as conn, conn.transaction():
                cur = conn.cursor(row_factory=dict_row)
                if tenant is None:
                    cur.execute(q.SET_ALL_TENANTS)
                else:
                    cur.execute(q.SET_TENANT, {"tenant": tenant})
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
        settings: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> list[DictRow]:
        """The rows of one statement in its own transaction bound to `tenant` (after some
        `set_config` statements), sent in one pipeline: one round trip, not four; inside
        a span of reads of `tenant` (`reading`), in the span's transaction."""
        bind: tuple[str, Mapping[str, Any]] = (
            (q.SET_ALL_TENANTS, {}) if tenant is None else (q.SET_TENANT, {"tenant": tenant})
        )
        try:
            span = self._spans.current()
            if span is not None and span.tenant == tenant:
                return self._spans.rows(span, sql, params, settings)
            self._spans.pause()  # another binding: not in the span's transaction
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

    # -- what the flows written once ask of PostgreSQL (`remem.store.flows.backend.SQLFlows`) -----
    # Every transaction is bound to its tenant (None: to every tenant, by design); psycopg
    # takes datetimes, arrays and Jsonb as they are.

    def _flow_tx(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        return self._tx(tenant)

    def _bind(self, db: Tx, tenant: str) -> None:
        db.execute(q.SET_TENANT, {"tenant": tenant})

    def _read_tx(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        span = self._spans.current()
        if span is not None and span.tenant == tenant:
            return self._span_cursor(span)
        return self._tx(tenant)

    @contextmanager
    def _span_cursor(self, span: Span) -> Iterator[Cursor]:
        try:
            with self._spans.cursor(span) as cur:
                yield cur
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _read(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[DictRow]:
        return self._rows(tenant, sql, params)

    def _write(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[DictRow]:
        try:
            with self._spans.aside():  # committed now, never in a span's read transaction
                return self._rows(tenant, sql, params)  # one pipelined transaction
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _each(self, db: Tx, sql: str, rows: Sequence[Mapping[str, Any]]) -> list[Row | None]:
        assert isinstance(db, psycopg.Cursor)
        if not rows:
            return []
        db.executemany(sql, rows, returning=True)  # pipelined: one round trip
        out: list[Row | None] = []
        for _ in rows:
            out.append(db.fetchone())
            db.nextset()
        return out

    def _at(self, t: datetime | None) -> datetime | None:
        return t

    def _time(self, value: Any) -> datetime:
        return utc(value)

    def _json_param(self, value: Any) -> Jsonb:
        return Jsonb(value)

    def _json_value(self, value: Any) -> Any:
        return json_value(value)

    def _list_param(self, items: Sequence[str]) -> list[str]:
        return list(items)

    def _list_value(self, value: Any) -> list[str]:
        return list(value)

    def _index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        for sql, params in self._lists(q.INSERT_EVENT_TERMS, {"tenant": tenant},
                                       [e.id for _, e in added]):  # fmt: skip
            db.execute(sql, params)

    def _index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        for sql, params in self._lists(q.INSERT_RECORD_TERMS, {"tenant": tenant},
                                       [r.id for _, r in added]):  # fmt: skip
            db.execute(sql, params)

    def _store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        db.executemany(q.INSERT_VECTOR, [
            {"tenant": rec.tenant, "id": rec.id, "actor": rec.actor, "model": model,
             "vec": np.asarray(vec)}
            for _, rec, vec in vectors
        ])  # fmt: skip

    def _scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        db.execute(q.BUMP_SCOPE, {"tenant": tenant, "actor": actor})

    def _before_write(self, write: Write) -> None:
        for dims in {len(v) for v in write.vectors if v is not None}:
            self._ensure_index(q.VectorIndex("record_vectors", write.vector_model, dims))

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically (`Store.apply`); then give a scope the
        write made large an HNSW index of its own (`PostgresSearch._index_large_scopes`)."""
        super().apply(write)
        actors = {r.actor for r in write.inserts}
        for dims in {len(v) for v in write.vectors if v is not None}:
            ix = q.VectorIndex("record_vectors", write.vector_model, dims)
            try:
                self._index_large_scopes(ix, write.tenant, actors)
            except StoreError as exc:  # the write is committed: only speed is at stake
                log.warning("could not size scopes for their own HNSW index: %s", exc)

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """`Store.forget_actor`, holding the lock on scope indexes
        (`PostgresSearch._scope_ddl`): a scope index being built concurrently, which may
        be the actor's, is finished first, so the erasure's transaction drops every index
        that names the actor, and a build after it finds the actor's vectors gone."""
        with self._scope_ddl(SCOPE_DDL_WAIT_S) as held:
            if held is None:
                raise StoreError(
                    "a scope's vector index is still being built after "
                    f"{SCOPE_DDL_WAIT_S:.0f} s; nothing was erased, retry"
                )
            return super().forget_actor(tenant, actor, now)

    # -- what is PostgreSQL's own ---------------------------------------------

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        if not events or reach <= 0:
            return {}
        tenant = events[0].tenant
        params = {"tenant": tenant, "reach": reach, "keys": [e.id for e in events]}
        return near_from(self._rows(tenant, q.EVENTS_NEAR, params), self._event)

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


def _version(conn: psycopg.Connection[DictRow]) -> int:
    """The newest migration applied (0: none, not even the table)."""
    row = conn.execute(q.SCHEMA_EXISTS).fetchone()
    if row is None or not row["found"]:
        return 0
    row = conn.execute(q.SCHEMA_VERSION).fetchone()
    return int(row["coalesce"]) if row else 0
