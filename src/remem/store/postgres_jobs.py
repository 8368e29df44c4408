"""Jobs, the request ledger and the model-call log on the PostgreSQL store.

A mixin of `PostgresStore` (as `remem.store.postgres_keys` is). Jobs are taken
with `FOR UPDATE SKIP LOCKED`, so concurrent claimers never wait for each other
nor take the same job; claiming, extending and failing jobs span tenants by
design (`ALL_TENANTS`: workers serve them all), everything else is bound to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from remem.model import Job, JobInfo, LLMCall
from remem.store import postgres_sql as q
from remem.store.base import Clock, RequestEntry
from remem.store.postgres_rows import (
    ALL_TENANTS,
    job_info_from_row,
    json_value,
    llm_call_params,
    value,
)

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed


class PostgresJobs:
    """Job, ledger and model-call methods; `PostgresStore` supplies the pool."""

    _clock: Clock

    if TYPE_CHECKING:

        def _tx(self, tenant: str | None) -> AbstractContextManager[Cursor]: ...

        def _rows(
            self,
            tenant: str | None,
            sql: Query,
            params: Sequence[Any] = (),
            settings: Sequence[tuple[str, Sequence[Any]]] = (),
        ) -> list[DictRow]: ...

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


def _request(r: DictRow) -> RequestEntry:
    outcome = None if r["outcome"] is None else json_value(r["outcome"])
    return RequestEntry(
        str(r["actor"]), str(r["request_id"]), str(r["operation"]), r["target"], outcome, r["token"]
    )
