"""The server backend: PostgreSQL with pgvector, full-text search and a pool.

Any number of stateless API servers and workers share one database: jobs are
taken with `FOR UPDATE SKIP LOCKED`, migrations are serialised by an advisory
lock, and every transaction names its tenant (`remem.tenant`, set with
`set_config(..., true)`) so row-level security confines it to that tenant's
rows even if a query forgot its `WHERE tenant = ...`. The few operations that
span tenants by design (claiming, extending and failing jobs, for workers that
serve every tenant; counting for `stats`) say so with `remem.all_tenants`.

Vectors live in an untyped `vector` column (any dimension) and are searched
exactly inside one (tenant, actor) scope with cosine distance `<=>`; words
live in a generated `tsvector` column with a GIN index, ranked by `ts_rank`.
Named queries are in `remem.store.postgres_sql`. psycopg is imported only
here, so remem's core never needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from remem.errors import ConflictError, SchemaTooNew, StoreError
from remem.model import (
    Authority,
    Event,
    HistoryEntry,
    Job,
    JobInfo,
    Kind,
    LLMCall,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)
from remem.store import postgres_sql as q
from remem.store.base import ForgetReport, Hit, Scope, Write

SCHEMA_VERSION = 3  # the newest migration this code knows; checked by a test
ALL_TENANTS = None  # `_tx(ALL_TENANTS)`: a transaction that spans tenants by design

Cursor = psycopg.Cursor[DictRow]


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("remem.store") / "postgres_migrations"
    found = []
    for item in folder.iterdir():
        if item.name.endswith(".sql"):
            found.append((int(item.name.split("_", 1)[0]), item.read_text()))
    return sorted(found)


class PostgresStore:
    """`Store` on a PostgreSQL database (with pgvector). Safe to share between threads."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.dsn = dsn
        self._where = _redact(dsn)
        self._migrate()
        self._pool = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
            name="remem",
        )
        try:
            self._pool.open(wait=True, timeout=30.0)
        except psycopg.Error as exc:
            self._pool.close()
            raise self._translate(exc) from exc

    # -- plumbing -----------------------------------------------------------

    def _connect(self) -> psycopg.Connection[DictRow]:
        try:
            return psycopg.connect(
                self.dsn, autocommit=True, row_factory=dict_row, connect_timeout=10
            )
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

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
                    for number, sql in _migrations():
                        if number > version:
                            for statement in _split_sql(sql):
                                conn.execute(statement)
                            conn.execute(q.SET_VERSION, (number,))
            except psycopg.Error as exc:
                raise self._translate(exc) from exc

    def schema_version(self) -> int:
        """The newest migration applied to this database."""
        with self._tx(ALL_TENANTS) as cur:
            return int(_value(cur.execute(q.SCHEMA_VERSION)))

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

    def _rows(self, tenant: str | None, sql: str, params: Sequence[Any] = ()) -> list[DictRow]:
        with self._tx(tenant) as cur:
            return cur.execute(sql, params).fetchall()

    def _translate(self, exc: psycopg.Error) -> StoreError | ConflictError:
        """A driver error as one of remem's, saying what to do."""
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
        now = _utcnow()
        by_tenant: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_tenant.setdefault(e.tenant, []).append(i)
        result: dict[int, bool] = {}
        # one transaction per tenant: row-level security binds a transaction to one tenant
        for tenant, indexes in by_tenant.items():
            with self._tx(tenant) as cur:
                cur.executemany(
                    q.INSERT_EVENT,
                    [
                        (
                            e.tenant,
                            e.id,
                            e.actor,
                            e.session,
                            e.role.value,
                            e.text,
                            e.time,
                            Jsonb(e.metadata),
                            now,
                        )
                        for e in (events[i] for i in indexes)
                    ],
                    returning=True,
                )
                new: list[int] = []
                for i in indexes:
                    result[i] = cur.fetchone() is not None
                    if result[i]:
                        new.append(i)
                    cur.nextset()
                jobs = [
                    (tenant, events[i].id, strategy, now, now)
                    for i in new
                    for strategy in strategies
                ]
                if jobs:
                    cur.executemany(q.INSERT_JOB, jobs)
        return [result[i] for i in range(len(events))]

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]:
        """Events of one actor (optionally one session), oldest first by their own time."""
        if session is None:
            rows = self._rows(tenant, q.LIST_EVENTS_ACTOR, (tenant, actor, limit))
        else:
            rows = self._rows(tenant, q.LIST_EVENTS_SESSION, (tenant, actor, session, limit))
        return [_event(r) for r in rows]

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]:
        """The events with these client ids, in arrival order."""
        return [_event(r) for r in self._rows(tenant, q.GET_EVENTS, (tenant, list(event_ids)))]

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of `event`'s session before it, oldest first."""
        rows = self._rows(
            event.tenant,
            q.SESSION_CONTEXT,
            (event.tenant, event.actor, event.session, event.time, limit),
        )
        return [_event(r) for r in reversed(rows)]

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
        jobs = [
            Job(r["id"], r["tenant"], r["event_id"], r["strategy"], r["attempts"]) for r in rows
        ]
        return sorted(jobs, key=lambda j: j.id)

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
        with self._tx(ALL_TENANTS) as cur:
            row = cur.execute(
                q.FAIL_JOB, (max_attempts, retry_at, error[:2000], now, job_id)
            ).fetchone()
        return str(row["status"]) if row else "gone"

    def pending_jobs(self, tenant: str | None = None) -> int:
        """How many jobs wait (pending or running), of one tenant or of all."""
        if tenant is None:
            return int(_value(self._rows(ALL_TENANTS, q.COUNT_PENDING)))
        return int(_value(self._rows(tenant, q.COUNT_PENDING_TENANT, (tenant,))))

    def list_jobs(self, tenant: str, status: str | None = None, limit: int = 100) -> list[JobInfo]:
        """A tenant's extraction jobs, newest first, optionally of one status."""
        if status is None:
            rows = self._rows(tenant, q.LIST_JOBS, (tenant, limit))
        else:
            rows = self._rows(tenant, q.LIST_JOBS_STATUS, (tenant, status, limit))
        return [
            JobInfo(
                id=r["id"],
                event_id=r["event_id"],
                strategy=r["strategy"],
                status=r["status"],
                attempts=r["attempts"],
                last_error=r["last_error"],
                run_after=_utc(r["run_after"]) if r["run_after"] else None,
                updated_at=_utc(r["updated_at"]),
            )
            for r in rows
        ]

    def job_counts(self, tenant: str) -> dict[str, int]:
        """A tenant's extraction jobs by status: pending, running, done, failed."""
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        for r in self._rows(tenant, q.JOB_COUNTS, (tenant,)):
            counts[str(r["status"])] = int(r["n"])
        return counts

    def retry_jobs(self, tenant: str, statuses: Sequence[str] = ("failed",)) -> int:
        """Put a tenant's jobs of these statuses back to pending; return how many."""
        if not statuses:
            return 0
        with self._tx(tenant) as cur:
            return int(cur.execute(q.RETRY_JOBS, (_utcnow(), tenant, list(statuses))).rowcount)

    def request_outcome(
        self, tenant: str, request_id: str
    ) -> tuple[str, str, dict[str, Any]] | None:
        """The (operation, actor, outcome) first recorded for a request id, or None."""
        rows = self._rows(tenant, q.REQUEST_OUTCOME, (tenant, request_id))
        if not rows:
            return None
        r = rows[0]
        outcome = r["outcome"] if isinstance(r["outcome"], dict) else json.loads(r["outcome"])
        return str(r["operation"]), str(r["actor"]), outcome

    def save_request(
        self, tenant: str, request_id: str, operation: str, actor: str, outcome: dict[str, Any]
    ) -> None:
        """Record a request id's outcome; a request id already recorded keeps its first."""
        with self._tx(tenant) as cur:
            cur.execute(
                q.SAVE_REQUEST,
                (tenant, request_id, operation, actor, Jsonb(outcome), _utcnow()),
            )

    def record_llm_calls(self, tenant: str, calls: Sequence[LLMCall]) -> None:
        """Log language-model calls (never a prompt, an answer or a key)."""
        if not calls:
            return
        now = _utcnow()
        with self._tx(tenant) as cur:
            cur.executemany(
                q.INSERT_LLM_CALL,
                [
                    (
                        tenant,
                        c.job_id,
                        c.strategy,
                        c.model,
                        c.prompt_version,
                        c.prompt_tokens,
                        c.completion_tokens,
                        c.seconds,
                        c.ok,
                        c.error[:500] or None,
                        now,
                    )
                    for c in calls
                ],
            )

    def llm_usage(self, tenant: str) -> dict[str, float]:
        """Totals of a tenant's logged model calls: calls, errors, tokens, seconds."""
        (r,) = self._rows(tenant, q.LLM_USAGE, (tenant,))
        return {
            "calls": int(r["calls"]),
            "errors": int(r["errors"]),
            "prompt_tokens": int(r["prompt_tokens"]),
            "completion_tokens": int(r["completion_tokens"]),
            "seconds": float(r["seconds"]),
        }

    # -- records --------------------------------------------------------------

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically; see `Write`."""
        now = _utcnow()
        for rec in write.inserts:
            if rec.tenant != write.tenant:
                raise StoreError(
                    f"record {rec.id} belongs to tenant {rec.tenant!r}, not to the write's "
                    f"tenant {write.tenant!r}; one write is one tenant's"
                )
        with self._tx(write.tenant) as cur:
            if write.inserts:
                cur.executemany(q.INSERT_RECORD, [_record_params(r) for r in write.inserts])
                links = [
                    (rec.tenant, event_id, rec.id)
                    for rec in write.inserts
                    for event_id in rec.source.event_ids
                ]
                if links:
                    cur.executemany(q.INSERT_RECORD_EVENT, links)
                vectors = [
                    (rec.tenant, rec.id, rec.actor, write.vector_model, _vector_text(v))
                    for rec, v in zip(write.inserts, write.vectors, strict=False)
                    if v is not None
                ]
                if vectors:
                    cur.executemany(q.INSERT_VECTOR, vectors)
            for ch in write.changes:
                cur.execute(
                    q.CLOSE_RECORD,
                    (
                        ch.status.value,
                        ch.valid_until,
                        ch.superseded_by,
                        now,
                        write.tenant,
                        ch.record_id,
                    ),
                )
                if cur.rowcount == 0:
                    raise StoreError(f"record {ch.record_id} vanished during consolidation")
            if write.history:
                cur.executemany(
                    q.INSERT_HISTORY,
                    [
                        (
                            write.tenant,
                            h.record_id,
                            h.action,
                            h.at,
                            h.text,
                            h.status.value,
                            h.related_id,
                            h.reason,
                            h.by,
                        )
                        for h in write.history
                    ],
                )
            if write.done_jobs:
                cur.execute(q.DONE_JOBS, (now, write.tenant, list(write.done_jobs)))

    def get_record(self, tenant: str, record_id: str) -> Record | None:
        """One record of this tenant, or None."""
        rows = self._rows(tenant, q.GET_RECORD, (tenant, record_id))
        return _record(rows[0]) if rows else None

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out)."""
        return [_record(r) for r in self._rows(tenant, q.GET_RECORDS, (tenant, list(ids)))]

    def list_records(
        self, scope: Scope, statuses: Iterable[Status] | None = None, limit: int = 10_000
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only."""
        wanted = [s.value for s in (statuses or [Status.ACTIVE, Status.INVALID, Status.PROPOSED])]
        sql, params = q.list_records(scope)
        return [_record(r) for r in self._rows(scope.tenant, sql, (*params, wanted, limit))]

    def records_by_field(self, scope: Scope, field: str) -> list[Record]:
        """Active and invalid records of one scope about `field`, newest first."""
        rows = self._rows(scope.tenant, q.BY_FIELD, (scope.tenant, scope.actor, field))
        return [_record(r) for r in rows]

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]:
        """The append-only history of one record, oldest first."""
        return [
            HistoryEntry(
                record_id=r["record_id"],
                action=r["action"],
                at=_utc(r["at"]),
                text=r["text"],
                status=Status(r["status"]),
                related_id=r["related_id"],
                reason=r["reason"],
                by=r["by_whom"],
            )
            for r in self._rows(tenant, q.HISTORY, (tenant, record_id))
        ]

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, set[str]]:
        """For those of these events some record came from: the statuses of those records."""
        found: dict[str, set[str]] = {}
        for r in self._rows(tenant, q.RECORD_STATUS_BY_EVENT, (tenant, list(event_ids))):
            found.setdefault(r["event_id"], set()).add(r["status"])
        return found

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        if not vectors:
            return
        with self._tx(tenant) as cur:
            cur.executemany(
                q.INSERT_EVENT_VECTOR,
                [(model, _vector_text(v), tenant, e.id) for e, v in vectors],
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
        text = _vector_text(query)
        params = (text, scope.tenant, scope.actor, model, at, text, limit)
        return [
            (r["id"], float(r["cosine"]))
            for r in self._rows(scope.tenant, q.EVENT_VECTOR_SEARCH, params)
        ]

    def adjacent_events(self, event: Event) -> list[Event]:
        """The events just before and just after `event` in its session."""
        with self._tx(event.tenant) as cur:
            found = cur.execute(q.EVENT_SEQ, (event.tenant, event.id)).fetchone()
            if found is None:
                return []
            params = {
                "tenant": event.tenant,
                "actor": event.actor,
                "session": event.session,
                "time": found["time"],
                "seq": found["seq"],
            }
            return [_event(r) for r in cur.execute(q.ADJACENT_EVENTS, params).fetchall()]

    # -- search ------------------------------------------------------------------

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
        text = _vector_text(query)
        sql, params = q.vector_search(scope, include_invalid)
        rows = self._rows(scope.tenant, sql, (text, *params, model, at, at, text, limit))
        return [(r["id"], float(r["cosine"])) for r in rows]

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        rows = self._rows(tenant, q.VECTORS_FOR, (tenant, model, list(ids)))
        return {r["record_id"]: _parse_vector(r["vec"]) for r in rows}

    # -- deletion ------------------------------------------------------------------

    def forget_record(self, tenant: str, record_id: str, now: datetime) -> ForgetReport:
        """Erase one record from every surface, leave tombstones, verify by reading."""
        with self._tx(tenant) as cur:
            if not cur.execute(q.RECORD_ACTOR, (tenant, record_id)).fetchall():
                return ForgetReport(deleted={}, verified=False)
            counts = _erase_records(cur, tenant, [record_id])
            cur.execute(q.TOMBSTONE, (tenant, "record", record_id, now))
            sources = [r["event_id"] for r in cur.execute(q.RECORD_EVENT_IDS, (tenant, record_id))]
            for event_id in sources:
                # the source event's text goes too, or recall would hand it back raw
                cur.execute(q.TOMBSTONE, (tenant, "event", event_id, now))
            # the event's tsvector is generated from its text, so it empties with it
            cur.execute(q.ERASE_EVENT_TEXT, (tenant, sources))
            cur.execute(q.DELETE_EVENT_VECTORS, (tenant, sources))
            counts["event_texts"] = len(sources)
            cur.execute(q.DELETE_RECORD_EVENTS, (tenant, [record_id]))
            cur.execute(q.ERASE_HISTORY_TEXT, (tenant, [record_id]))
            cur.execute(
                q.INSERT_HISTORY,
                (tenant, record_id, "DELETE", now, None, "deleted", None, "forget", ""),
            )
        remaining = self._verify_record(tenant, record_id, sources)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job and index entry of one actor; verify."""
        with self._tx(tenant) as cur:
            ids = [r["id"] for r in cur.execute(q.ACTOR_RECORD_IDS, (tenant, actor))]
            counts = _erase_records(cur, tenant, ids)
            cur.execute(q.ERASE_HISTORY_TEXT, (tenant, ids))
            cur.execute(q.DELETE_RECORD_EVENTS, (tenant, ids))
            cur.execute(q.DELETE_JOBS_OF_ACTOR, (tenant, actor))
            counts["event_vectors"] = cur.execute(
                q.DELETE_ACTOR_EVENT_VECTORS, (tenant, actor)
            ).rowcount
            deleted = cur.execute(q.DELETE_ACTOR_EVENTS, (tenant, actor)).fetchall()
            counts["events"] = len(deleted)
            counts["fulltext"] += sum(1 for r in deleted if r["indexed"])
            counts["requests"] = cur.execute(q.DELETE_ACTOR_REQUESTS, (tenant, actor)).rowcount
            cur.execute(q.TOMBSTONE, (tenant, "actor", actor, now))
        remaining = self._verify_actor(tenant, actor)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def record_deletion(
        self,
        tenant: str,
        target: str,
        key: str,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int = 1,
    ) -> int:
        """Log a deletion job with its outcome; return its id."""
        status = "done" if report is not None and report.verified else "failed"
        result = {} if report is None else report.outcome()
        with self._tx(tenant) as cur:
            row = cur.execute(
                q.INSERT_DELETION,
                (tenant, target, key, status, attempts, Jsonb(result), error, now, now),
            ).fetchone()
        assert row is not None  # INSERT ... RETURNING always returns its row
        return int(row["id"])

    def deletions(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first."""
        return [
            {
                "id": r["id"],
                "target": r["target"],
                "key": r["key"],
                "status": r["status"],
                "attempts": r["attempts"],
                "result": r["result"],
                "last_error": r["last_error"],
                "created_at": _iso(r["created_at"]),
            }
            for r in self._rows(tenant, q.LIST_DELETIONS, (tenant, limit))
        ]

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether the actor, or any of these source events, was erased."""
        return bool(self._rows(tenant, q.IS_TOMBSTONED, (tenant, actor, list(event_ids))))

    def _verify_record(self, tenant: str, record_id: str, sources: list[str]) -> dict[str, int]:
        with self._tx(tenant) as cur:

            def count(sql: str, params: Sequence[Any]) -> int:
                return int(_value(cur.execute(sql, params).fetchall()))

            records = count(q.COUNT_RECORD, (tenant, record_id))
            return {
                "event_texts": count(q.EVENTS_WITH_TEXT, (tenant, sources)),
                "event_vectors": count(q.COUNT_EVENT_VECTORS, (tenant, sources)),
                "records": records,
                "vectors": count(q.COUNT_RECORD_VECTORS, (tenant, record_id)),
                "fulltext": records,  # the tsvector is a column of the record's row
                "history_text": count(q.HISTORY_WITH_TEXT, (tenant, record_id)),
            }

    def _verify_actor(self, tenant: str, actor: str) -> dict[str, int]:
        with self._tx(tenant) as cur:

            def count(sql: str) -> int:
                return int(_value(cur.execute(sql, (tenant, actor)).fetchall()))

            records = count(q.COUNT_ACTOR_RECORDS)
            events = count(q.COUNT_ACTOR_EVENTS)
            return {
                "records": records,
                "vectors": count(q.COUNT_ACTOR_VECTORS),
                "event_vectors": count(q.COUNT_ACTOR_EVENT_VECTORS),
                "events": events,
                "fulltext": records + events,  # tsvectors are columns of those rows
                "requests": count(q.COUNT_ACTOR_REQUESTS),
            }

    def stats(self) -> dict[str, int]:
        """Row counts over every tenant, for `remem bench` and diagnostics."""
        with self._tx(ALL_TENANTS) as cur:
            return {name: int(_value(cur.execute(sql).fetchall())) for name, sql in q.STATS.items()}


# -- helpers ----------------------------------------------------------------------


def _erase_records(cur: Cursor, tenant: str, ids: list[str]) -> dict[str, int]:
    vectors = cur.execute(q.DELETE_VECTORS, (tenant, ids)).rowcount
    deleted = cur.execute(q.DELETE_RECORDS, (tenant, ids)).fetchall()
    return {
        "records": len(deleted),
        "vectors": vectors,
        "fulltext": sum(1 for r in deleted if r["indexed"]),
    }


def _value(rows: Sequence[DictRow] | Cursor) -> Any:
    """The single value of a one-row, one-column result."""
    if isinstance(rows, psycopg.Cursor):
        rows = rows.fetchall()
    return next(iter(rows[0].values()))


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (our SQL has no `--` or `;` in literals)."""
    lines = [ln.split("--", 1)[0] for ln in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the given URL"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def _vector_text(v: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(v, np.float32)) + "]"


def _parse_vector(text: str) -> npt.NDArray[np.float32]:
    return np.array(text.strip("[]").split(","), dtype=np.float32)


def _utc(t: datetime) -> datetime:
    return t.astimezone(UTC)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _utcnow() -> datetime:
    from remem.timeutil import utcnow

    return utcnow()


def _event(r: DictRow) -> Event:
    return Event(
        id=r["id"],
        tenant=r["tenant"],
        actor=r["actor"],
        session=r["session"],
        role=Role(r["role"]),
        text=r["text"],
        time=_utc(r["time"]),
        metadata=r["metadata"] if isinstance(r["metadata"], dict) else json.loads(r["metadata"]),
    )


def _record(r: DictRow) -> Record:
    return Record(
        id=r["id"],
        tenant=r["tenant"],
        actor=r["actor"],
        namespace=r["namespace"],
        kind=Kind(r["kind"]),
        text=r["text"],
        field=r["field"],
        value=r["value"],
        source=Source(
            type=r["source_type"],
            event_ids=tuple(r["source_event_ids"]),
            strategy=r["strategy"],
            extractor=r["extractor"],
        ),
        authority=Authority(r["authority"]),
        sensitivity=Sensitivity(r["sensitivity"]),
        valid_from=_utc(r["valid_from"]),
        valid_until=_utc(r["valid_until"]) if r["valid_until"] else None,
        created_at=_utc(r["created_at"]),
        updated_at=_utc(r["updated_at"]),
        status=Status(r["status"]),
        supersedes=r["supersedes"],
        superseded_by=r["superseded_by"],
        flags=tuple(r["flags"]),
    )


def _record_params(rec: Record) -> tuple[Any, ...]:
    return (
        rec.id,
        rec.tenant,
        rec.actor,
        rec.namespace,
        rec.kind.value,
        rec.text,
        rec.field,
        rec.value,
        rec.source.type,
        list(rec.source.event_ids),
        rec.source.strategy,
        rec.source.extractor,
        rec.authority.value,
        rec.sensitivity.value,
        rec.valid_from,
        rec.valid_until,
        rec.created_at,
        rec.updated_at,
        rec.status.value,
        rec.supersedes,
        rec.superseded_by,
        list(rec.flags),
    )
