"""The server backend: PostgreSQL with pgvector, full-text search and a pool.

Any number of stateless API servers and workers share one database: jobs are
taken with `FOR UPDATE SKIP LOCKED`, migrations are serialised by an advisory
lock, and every transaction names its tenant (`remem.tenant`, set with
`set_config(..., true)`) so row-level security confines it to that tenant's
rows even if a query forgot its `WHERE tenant = ...`. The few operations that
span tenants by design (claiming, extending and failing jobs, for workers that
serve every tenant; counting for `stats`; finding an API key by its hash, which is
how a request's tenant is found) say so with `remem.all_tenants`.

Vectors live in an untyped `vector` column (any dimension). A scope with few
vectors of a model is searched exactly with cosine distance `<=>`; a larger one
through an HNSW index that the store makes for each model and dimension the
first time it writes (pgvector 0.8's iterative scan walks on until enough rows
pass the scope filter), falling back to the exact scan when that finds too few.
Words live in a generated `tsvector` column and, because row-level security
keeps the planner off a GIN index, as (tenant, actor, term) rows under a btree;
`ts_rank` ranks only the newest matches. Named queries are in
`remem.store.postgres_sql`, row conversions in `remem.store.postgres_rows`, the
API keys of the HTTP service in `remem.store.postgres_keys`.
psycopg is imported only by these modules, so remem's core never needs it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql
from psycopg.rows import DictRow, dict_row
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from remem.errors import ConflictError, RememError, SchemaTooNew, StoreError
from remem.model import Event, HistoryEntry, Job, JobInfo, LLMCall, Record, Status
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store import postgres_sql as q
from remem.store.backend import ListBinder, Tx, postgres_lists
from remem.store.base import (
    Clock,
    ForgetReport,
    Hit,
    Near,
    RequestEntry,
    Scope,
    ThreadHost,
    Write,
    refuse_foreign_records,
)
from remem.store.erasure import ErasureSQL, Found, RecordErasure
from remem.store.errors import NOT_UNICODE, from_postgres
from remem.store.postgres_keys import PostgresKeys
from remem.store.postgres_rows import (
    event_from_row,
    event_params,
    history_from_row,
    history_params,
    iso,
    job_info_from_row,
    json_value,
    llm_call_params,
    parse_vector,
    record_from_row,
    record_params,
    value,
    vector_dumper,
)
from remem.store.rows import near_from
from remem.timeutil import utcnow

SCHEMA_VERSION = 7  # the newest migration this code knows; checked by a test
ALL_TENANTS = None  # `_tx(ALL_TENANTS)`: a transaction that spans tenants by design
# How a scope's vectors of a model are searched: exactly, which costs about the
# scope's size, or through the model's HNSW index filtered to the scope, which costs
# about ef_search times (index size / scope size). They break even near a scope of
# sqrt(HNSW_BREAK_EVEN * index size) vectors (measured on this machine: 5,000 of
# 48,000); a scope of at most EXACT_SCAN_MIN vectors is always scanned exactly.
EXACT_SCAN_MIN = 2000
HNSW_BREAK_EVEN = 500
HNSW_EF_SEARCH = 100  # candidates an HNSW search keeps (pgvector's default is 40)
HNSW_MAX_DIMS = 4000  # pgvector cannot index a wider `halfvec` with HNSW
INDEX_RECHECK_S = 30.0  # how long "this model has no index yet" is believed
INDEX_RETRY_S = 600.0  # how long after a failed build it is tried again
# maintenance_work_mem for an index built at the end of a bulk load: pgvector builds
# the graph in memory while it fits (a million 384-d vectors take about 1 GB), and
# far more slowly on disk once it does not. Set for that one transaction only.
BULK_INDEX_MEMORY = "2GB"
SCOPE_SIZE_TTL_S = 60.0  # how long a scope's size (small or large, for the above) is believed

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger(__name__)


class PostgresStore(RecordErasure, PostgresKeys):
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
    erasure_sql: ClassVar[ErasureSQL] = q

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
        params: Sequence[Any] = (),
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

    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        lease_seconds: float,
        strategies: Sequence[str] | None = None,
    ) -> list[Job]:
        """Lease up to `limit` ready jobs of any tenant (see `Store.claim_jobs`); concurrent
        claimers never wait for each other nor take the same job."""
        lease = now + timedelta(seconds=lease_seconds)
        wanted = None if strategies is None else list(strategies)
        rows = self._rows(ALL_TENANTS, q.CLAIM_JOBS, (lease, now, now, now, wanted, wanted, limit))
        keys = ("id", "tenant", "event_id", "strategy", "attempts")
        return sorted((Job(*(r[k] for k in keys)) for r in rows), key=lambda j: j.id)

    def heartbeat(self, job_ids: Sequence[int], now: datetime, lease_seconds: float) -> int:
        """Extend the lease of running jobs (of any tenant); return how many were running."""
        if not job_ids:
            return 0
        lease = now + timedelta(seconds=lease_seconds)
        with self._tx(ALL_TENANTS) as cur:
            return int(cur.execute(q.HEARTBEAT, (lease, now, list(job_ids))).rowcount)

    def fail_job(
        self,
        job_id: int,
        error: str,
        now: datetime,
        retry_at: datetime | None = None,
        max_attempts: int = 3,
    ) -> str:
        """Record a failed attempt of a running job; see `Store.fail_job`."""
        params = (max_attempts, retry_at, error[:2000], now, job_id)
        rows = self._rows(ALL_TENANTS, q.FAIL_JOB, params)
        return str(rows[0]["status"]) if rows else "gone"

    def pending_jobs(self, tenant: str | None = None) -> int:
        """How many jobs wait (pending or running), of one tenant or of all."""
        if tenant is None:
            return int(value(self._rows(ALL_TENANTS, q.COUNT_PENDING)))
        return int(value(self._rows(tenant, q.COUNT_PENDING_TENANT, (tenant,))))

    def list_jobs(
        self, tenant: str, status: str | None = None, limit: int = 100, actor: str | None = None
    ) -> list[JobInfo]:
        """A tenant's (or one actor's) extraction jobs, newest first, optionally of one status."""
        if actor is not None:
            params = (tenant, actor, status, status, limit)
            rows = self._rows(tenant, q.LIST_JOBS_ACTOR, params)
        elif status is None:
            rows = self._rows(tenant, q.LIST_JOBS, (tenant, limit))
        else:
            rows = self._rows(tenant, q.LIST_JOBS_STATUS, (tenant, status, limit))
        return [job_info_from_row(r) for r in rows]

    def job_counts(self, tenant: str, actor: str | None = None) -> dict[str, int]:
        """A tenant's (or one actor's) extraction jobs by status: pending, running, done,
        failed."""
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        if actor is None:
            rows = self._rows(tenant, q.JOB_COUNTS, (tenant,))
        else:
            rows = self._rows(tenant, q.JOB_COUNTS_ACTOR, (tenant, actor))
        for r in rows:
            counts[str(r["status"])] = int(r["n"])
        return counts

    def retry_jobs(self, tenant: str, statuses: Sequence[str] = ("failed",)) -> int:
        """Put a tenant's jobs of these statuses back to pending; return how many."""
        if not statuses:
            return 0
        with self._tx(tenant) as cur:
            return int(cur.execute(q.RETRY_JOBS, (self._clock(), tenant, list(statuses))).rowcount)

    def requeue_job(self, tenant: str, event_id: str, strategy: str) -> bool:
        """Run one (event, strategy) job again; see `Store.requeue_job`."""
        with self._tx(tenant) as cur:
            params = (self._clock(), tenant, event_id, strategy)
            return int(cur.execute(q.REQUEUE_JOB, params).rowcount) > 0

    def claim_request(
        self,
        tenant: str,
        actor: str,
        request_id: str,
        operation: str,
        target: str | None,
        token: str,
        lease_seconds: float,
    ) -> RequestEntry:
        """Claim a request id for `token`; see `Store.claim_request`. A second INSERT of
        the same key waits for the first's transaction, then finds its row."""
        now = self._clock()
        until = now + timedelta(seconds=lease_seconds)
        key = (tenant, actor, request_id)
        with self._tx(tenant) as cur:
            row = cur.execute(
                q.CLAIM_REQUEST, (*key, operation, target, token, until, now)
            ).fetchone()
            if row is None:
                row = cur.execute(
                    q.RETAKE_REQUEST, (operation, target, token, until, *key, now)
                ).fetchone()
            if row is None:
                row = cur.execute(q.GET_REQUEST, key).fetchone()
        assert row is not None  # inserted, retaken or found under one transaction
        return _request(row)

    def finish_request(
        self, tenant: str, actor: str, request_id: str, token: str, outcome: dict[str, Any]
    ) -> bool:
        """Record the outcome of a claim `token` holds; see `Store.finish_request`."""
        with self._tx(tenant) as cur:
            params = (Jsonb(outcome), tenant, actor, request_id, token)
            return int(cur.execute(q.FINISH_REQUEST, params).rowcount) > 0

    def release_request(self, tenant: str, actor: str, request_id: str, token: str) -> None:
        """Drop a claim `token` holds without an outcome; see `Store.release_request`."""
        with self._tx(tenant) as cur:
            cur.execute(q.RELEASE_REQUEST, (tenant, actor, request_id, token))

    def request_for_target(self, tenant: str, request_id: str, target: str) -> RequestEntry | None:
        """The final entry of a request id that named `target`; see the Store protocol."""
        rows = self._rows(tenant, q.REQUEST_FOR_TARGET, (tenant, target, request_id))
        return _request(rows[0]) if rows else None

    def record_llm_calls(self, tenant: str, calls: Sequence[LLMCall]) -> None:
        """Log language-model calls (never a prompt, an answer or a key)."""
        if not calls:
            return
        now = self._clock()
        with self._tx(tenant) as cur:
            cur.executemany(q.INSERT_LLM_CALL, [llm_call_params(tenant, c, now) for c in calls])

    def llm_usage(self, tenant: str) -> dict[str, float]:
        """Totals of a tenant's logged model calls: calls, errors, tokens, seconds."""
        (r,) = self._rows(tenant, q.LLM_USAGE, (tenant,))
        return {k: float(v) if k == "seconds" else int(v) for k, v in r.items()}

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
            if write.history:
                rows = [history_params(write.tenant, h) for h in write.history]
                cur.executemany(q.INSERT_HISTORY, rows)
            if write.done_jobs:
                cur.execute(q.DONE_JOBS, (now, write.tenant, list(write.done_jobs)))

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

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        if not vectors:
            return
        for dims in {len(v) for _, v in vectors}:
            self._ensure_index(q.VectorIndex("event_vectors", model, dims))
        with self._tx(tenant) as cur:
            cur.executemany(
                q.INSERT_EVENT_VECTOR,
                [(model, np.asarray(v), tenant, e.id) for e, v in vectors],
            )

    def vector_search_events(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the scope's events (embedded by `model`) nearest to `query`."""
        if limit <= 0:
            return []
        vec = np.asarray(query)  # sent as a vector (see `_configure`)
        ix = self._index_for("event_vectors", model, len(query), scope)
        if ix is not None:
            approx = (vec, scope.tenant, scope.actor, at, vec, limit)
            hits = self._nearest(scope.tenant, q.event_vector_search_hnsw(ix), approx)
            if len(hits) == limit:
                return hits
        params = (vec, scope.tenant, scope.actor, model, len(query), at, vec, limit)
        return [
            (r["id"], float(r["cosine"]))
            for r in self._rows(scope.tenant, q.EVENT_VECTOR_SEARCH, params)
        ]

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        if not events or reach <= 0:
            return {}
        tenant = events[0].tenant
        params = (reach, reach, tenant, [e.id for e in events])
        return near_from(self._rows(tenant, q.EVENTS_NEAR, params), event_from_row)

    def search_records(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """ts_rank over one scope's active and invalid records; the caller masks status."""
        built = q.search_records(scope, query, limit)
        if built is None:
            return []
        return [Hit(r["id"], float(r["score"])) for r in self._rows(scope.tenant, *built)]

    def search_events(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """ts_rank over one actor's raw events (short-term memory)."""
        built = q.search_events(scope, query, limit)
        if built is None:
            return []
        return [Hit(r["id"], float(r["score"])) for r in self._rows(scope.tenant, *built)]

    def vector_search(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[tuple[str, float]]:
        """Nearest records of one scope by cosine; see `Store.vector_search`."""
        if limit <= 0:
            return []
        vec = np.asarray(query)  # sent as a vector (see `_configure`)
        ix = self._index_for("record_vectors", model, len(query), scope)
        if ix is not None:
            approx, params = q.vector_search_hnsw(ix, scope, include_invalid)
            hits = self._nearest(scope.tenant, approx, (vec, *params, at, at, vec, limit))
            if len(hits) == limit:
                return hits
            # too few: the scope is a sliver of the index or mostly closed; scan it all
        sql, params = q.vector_search(scope, include_invalid)
        params = [vec, *params, model, len(query), at, at, vec, limit]
        rows = self._rows(scope.tenant, sql, params)
        return [(r["id"], float(r["cosine"])) for r in rows]

    # -- nearest-vector indexes ------------------------------------------------------

    def _index_for(self, table: str, model: str, dims: int, scope: Scope) -> q.VectorIndex | None:
        """The HNSW index to search `scope`'s vectors of `model` with, or None to scan
        them exactly: the model has no index, or the scope is small enough."""
        ix = q.VectorIndex(table, model, dims)
        if not self._index_exists(ix):
            return None
        key = (table, scope.tenant, scope.actor, model)
        large, when = self._large.get(key, (False, -SCOPE_SIZE_TTL_S))
        if time.monotonic() - when >= SCOPE_SIZE_TTL_S:
            # a stale answer costs only speed: exact is exact, and HNSW falls back to it
            bound = self._exact_bound(ix)
            sql = q.SCOPE_VECTORS.format(table=table)
            found = value(self._rows(scope.tenant, sql, (*key[1:], bound + 1)))
            large = int(found) > bound
            if len(self._large) >= 10_000:
                self._large.clear()
            self._large[key] = (large, time.monotonic())
        return ix if large else None

    def _exact_bound(self, ix: q.VectorIndex) -> int:
        """The most vectors a scope may hold to be scanned exactly (see EXACT_SCAN_MIN)."""
        if self._exact_scan_max is not None:
            return self._exact_scan_max
        # the planner's estimate of the index's size (kept by autovacuum): enough here
        size = max(0.0, float(value(self._rows(ALL_TENANTS, q.INDEX_SIZE, (ix.name,)))))
        return max(EXACT_SCAN_MIN, round(math.sqrt(HNSW_BREAK_EVEN * size)))

    def _index_exists(self, ix: q.VectorIndex) -> bool:
        if ix.dims > HNSW_MAX_DIMS:
            return False
        if ix in self._indexes:
            looked = self._indexes[ix]
            if looked is None or time.monotonic() - looked < INDEX_RECHECK_S:
                return looked is None
        # another process may have made it since (see `_ensure_index`)
        exists = bool(self._rows(ALL_TENANTS, q.VECTOR_INDEX_EXISTS, (ix.name,)))
        self._indexes[ix] = None if exists else time.monotonic()
        return exists

    def _ensure_index(self, ix: q.VectorIndex) -> None:
        """Make `ix` if it is missing: the first time a model writes vectors of one
        dimension to a table. Writers wait while it is built, which is at once for
        a new model; a database upgraded with many vectors of a model builds it on
        the first write after the upgrade. Without it, search stays exact. Inside
        `bulk_load` it is only noted, and built when the load ends."""
        if ix.dims > HNSW_MAX_DIMS or self._index_exists(ix):
            return
        if self._deferred is not None:
            self._deferred.add(ix)
            return
        if time.monotonic() - self._build_failed.get(ix, -INDEX_RETRY_S) < INDEX_RETRY_S:
            return
        self._build_index(ix)

    def _build_index(self, ix: q.VectorIndex, memory: str | None = None) -> None:
        """CREATE INDEX for `ix`, with `memory` as its maintenance_work_mem if given."""
        try:
            with self._tx(ALL_TENANTS) as cur:
                cur.execute(q.VECTOR_INDEX_LOCK, (ix.name,))
                if memory is not None:
                    cur.execute(q.SET_INDEX_MEMORY, (memory,))
                cur.execute(q.create_vector_index(ix))
        except StoreError as exc:  # e.g. a role that does not own the table
            log.warning(
                "no HNSW index for %s in %s, search stays exact: %s", ix.model, ix.table, exc
            )
            self._build_failed[ix] = time.monotonic()
            return
        self._indexes[ix] = None

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many vectors, then build the HNSW indexes their first write would have
        made, once each (with `BULK_INDEX_MEMORY`): row-by-row inserts into a growing
        graph are what make a large first load slow. Search is exact meanwhile. The
        record tables are analysed at the end."""
        if self._deferred is not None:  # nested: the outer block builds
            yield
            return
        self._deferred = set()
        try:
            yield
        finally:
            pending, self._deferred = self._deferred, None
            for ix in sorted(pending, key=lambda i: i.name):
                if not self._index_exists(ix):
                    self._build_index(ix, BULK_INDEX_MEMORY)
            # fresh statistics, so the planner does not take the new rows for none
            with self._tx(ALL_TENANTS) as cur:
                cur.execute(q.ANALYZE_RECORDS)

    def _nearest(self, tenant: str, sql: Query, params: Sequence[Any]) -> list[tuple[str, float]]:
        """Rows of an HNSW search, nearest first (an iterative scan returns them nearly so)."""
        settings: list[tuple[str, Sequence[Any]]] = [(q.HNSW_SETTINGS, (str(HNSW_EF_SEARCH),))]
        if self._iterative:
            settings.append((q.HNSW_ITERATIVE, ()))
        rows = self._rows(tenant, sql, params, settings)
        rows.sort(key=lambda r: (-r["cosine"], r["tie"]))
        return [(r["id"], float(r["cosine"])) for r in rows]

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        rows = self._rows(tenant, q.VECTORS_FOR, (tenant, model, list(ids)))
        return {r["record_id"]: parse_vector(r["vec"]) for r in rows}

    # -- deletion ------------------------------------------------------------------

    # `forget_record` and `record_deletion` are `RecordErasure`'s; these are its PostgreSQL
    # parts (the row-level-security wall binds each transaction to the tenant)

    def _erasure_tx(self, tenant: str) -> AbstractContextManager[Cursor]:
        return self._tx(tenant)

    def _at(self, t: datetime) -> object:
        return t

    def _json_param(self, value: dict[str, Any]) -> object:
        return Jsonb(value)

    def _erase_records(self, db: Tx, tenant: str, found: Sequence[Found]) -> dict[str, int]:
        return _delete_records(db, tenant, [f.key for f in found])

    def _erase_event_texts(self, db: Tx, tenant: str, event_ids: Sequence[str]) -> None:
        # the event's tsvector is generated from its text, so it empties with it
        for sql in (q.ERASE_EVENT_TEXT, q.DELETE_EVENT_TERMS, q.DELETE_EVENT_VECTORS):
            db.execute(sql, (tenant, list(event_ids)))

    def _verify_record(
        self, tenant: str, record_id: str, found: Found, sources: Sequence[str]
    ) -> dict[str, int]:
        return self._record_left(tenant, record_id, list(sources))

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job and index entry of one actor; verify."""
        with self._tx(tenant) as cur:
            # jobs first, as `apply` locks them first: a running job's write either
            # committed before (and its records are read below) or finds its jobs gone
            cur.execute(q.DELETE_JOBS_OF_ACTOR, (tenant, actor))
            ids = [r["id"] for r in cur.execute(q.ACTOR_RECORD_IDS, (tenant, actor))]
            for sql in q.DELETE_ACTOR_TERMS:  # at once, rather than cascading row by row
                cur.execute(sql, (tenant, actor))
            counts = _delete_records(cur, tenant, ids)
            cur.execute(q.ERASE_HISTORY_TEXT, (tenant, ids))
            cur.execute(q.DELETE_RECORD_EVENTS, (tenant, ids))
            counts["event_vectors"] = cur.execute(
                q.DELETE_ACTOR_EVENT_VECTORS, (tenant, actor)
            ).rowcount
            # the actor's tombstone covers every event it had (see `is_tombstoned`), so an
            # id reused after a fresh start is not blocked by a record-level tombstone
            cur.execute(q.DELETE_EVENT_TOMBSTONES_OF, (tenant, actor))
            deleted = cur.execute(q.DELETE_ACTOR_EVENTS, (tenant, actor)).fetchall()
            counts["events"] = len(deleted)
            counts["fulltext"] += sum(1 for r in deleted if r["indexed"])
            counts["requests"] = cur.execute(q.DELETE_ACTOR_REQUESTS, (tenant, actor)).rowcount
            counts["checkpoints"] = cur.execute(q.FORGET_CHECKPOINTS, (tenant, actor)).rowcount
            counts["tool_calls"] = cur.execute(q.FORGET_TOOL_CALLS, (tenant, actor)).rowcount
            cur.execute(q.ACTOR_TOMBSTONE, (tenant, actor, now))
        remaining = self._verify_actor(tenant, actor)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """With `vacuum`, VACUUM the tables an erasure touches; see `Store.scrub_files`.

        A deleted row stays in its table's and indexes' files as a dead tuple
        until VACUUM marks its space free for reuse (it does not overwrite the
        bytes at once; new rows do, over time), and in the WAL until the server
        recycles its segments; backups and replicas keep their copies. VACUUM
        reads each whole table, so it is off unless asked for.
        """
        if not vacuum:
            return {}
        try:
            with self._pool.connection() as conn:  # autocommit: VACUUM runs outside a block
                for table in q.ERASED_TABLES:
                    conn.execute(pg_sql.SQL("VACUUM {}").format(pg_sql.Identifier(table)))
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        return {}

    def deletions(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first."""
        rows = self._rows(tenant, q.LIST_DELETIONS, (tenant, limit))
        return [{**r, "created_at": iso(r["created_at"])} for r in rows]

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether work from these events would recreate what was erased; see `Store`."""
        args = q.tombstoned_params(tenant, actor, list(event_ids))
        return bool(self._rows(tenant, q.IS_TOMBSTONED, args))

    def erased_at(self, tenant: str, actor: str) -> datetime | None:
        """When the actor was last erased, or None."""
        rows = self._rows(tenant, q.ACTOR_ERASED_AT, (tenant, actor))
        return rows[0]["created_at"] if rows else None

    def _record_left(self, tenant: str, record_id: str, sources: list[str]) -> dict[str, int]:
        with self._tx(tenant) as cur:

            def count(sql: str, params: Sequence[Any]) -> int:
                return int(value(cur.execute(sql, params).fetchall()))

            records = count(q.COUNT_RECORD, (tenant, record_id))
            terms = count(q.COUNT_RECORD_TERMS, (tenant, record_id))
            return {
                "event_texts": count(q.EVENTS_WITH_TEXT, (tenant, sources)),
                "event_vectors": count(q.COUNT_EVENT_VECTORS, (tenant, sources)),
                "records": records,
                "vectors": count(q.COUNT_RECORD_VECTORS, (tenant, record_id)),
                # the tsvector is a column of the record's row; its words are rows too
                "fulltext": records + terms + count(q.COUNT_EVENT_TERMS, (tenant, sources)),
                "history_text": count(q.HISTORY_WITH_TEXT, (tenant, record_id)),
            }

    def _verify_actor(self, tenant: str, actor: str) -> dict[str, int]:
        with self._tx(tenant) as cur:

            def count(sql: str) -> int:
                return int(value(cur.execute(sql, (tenant, actor)).fetchall()))

            records = count(q.COUNT_ACTOR_RECORDS)
            events = count(q.COUNT_ACTOR_EVENTS)
            return {
                "records": records,
                "vectors": count(q.COUNT_ACTOR_VECTORS),
                "event_vectors": count(q.COUNT_ACTOR_EVENT_VECTORS),
                "events": events,
                # tsvectors are columns of those rows; their words are rows too
                "fulltext": records + events + sum(count(c) for c in q.COUNT_ACTOR_TERMS),
                "requests": count(q.COUNT_ACTOR_REQUESTS),
                "checkpoints": count(q.COUNT_ACTOR_CHECKPOINTS),
                "tool_calls": count(q.COUNT_ACTOR_TOOL_CALLS),
            }

    def stats(self) -> dict[str, int]:
        """Row counts over every tenant, for `remem bench` and diagnostics."""
        with self._tx(ALL_TENANTS) as cur:
            return {name: int(value(cur.execute(sql).fetchall())) for name, sql in q.STATS.items()}

    def database_size(self) -> int:
        """The bytes the database takes on the server (tables, indexes, TOAST), for bench."""
        return int(value(self._rows(ALL_TENANTS, q.DATABASE_SIZE)))


# -- helpers ----------------------------------------------------------------------


def _delete_records(cur: Tx, tenant: str, ids: list[str]) -> dict[str, int]:
    vectors = cur.execute(q.DELETE_VECTORS, (tenant, ids)).rowcount
    deleted = cur.execute(q.DELETE_RECORDS, (tenant, ids)).fetchall()
    return {
        "records": len(deleted),
        "vectors": vectors,
        "fulltext": sum(1 for r in deleted if r["indexed"]),
    }


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


def _request(r: DictRow) -> RequestEntry:
    outcome = None if r["outcome"] is None else json_value(r["outcome"])
    return RequestEntry(
        str(r["actor"]), str(r["request_id"]), str(r["operation"]), r["target"], outcome, r["token"]
    )
