"""The SQLite store's extraction jobs, request ledger and model-call log.

A mixin of `SQLiteStore` (kept apart so each module reads in one sitting):
jobs are leased, kept alive by heartbeats, wait out a backoff after a failure
and can be listed and retried; request ids keep their first outcome; model
calls are logged without their content.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from remem.model import Job, JobInfo, LLMCall
from remem.store import sqlite_sql as q
from remem.store.base import Clock, RequestEntry
from remem.timeutil import parse_time, to_db


class SQLiteJobs:
    """Job, ledger and model-call methods; `SQLiteStore` supplies the connection."""

    _clock: Clock

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        lease_seconds: float,
        strategies: Sequence[str] | None = None,
    ) -> list[Job]:
        """Lease up to `limit` ready jobs; see `Store.claim_jobs`."""
        lease = to_db(now + timedelta(seconds=lease_seconds))
        with self._tx() as db:
            if strategies is None:
                rows = db.execute(q.READY_JOBS, (to_db(now), to_db(now), limit)).fetchall()
            else:
                marks = ",".join("?" * len(strategies))
                rows = db.execute(
                    q.READY_JOBS_OF.format(marks=marks),
                    (to_db(now), to_db(now), *strategies, limit),
                ).fetchall()
            jobs = []
            for job_id, tenant, event_id, strategy, attempts in rows:
                db.execute(q.LEASE_JOB, (lease, to_db(now), job_id))
                jobs.append(Job(job_id, tenant, event_id, strategy, attempts + 1))
        return jobs

    def heartbeat(self, job_ids: Sequence[int], now: datetime, lease_seconds: float) -> int:
        """Extend the lease of running jobs; return how many were still running."""
        if not job_ids:
            return 0
        lease = to_db(now + timedelta(seconds=lease_seconds))
        with self._tx() as db:
            marks = ",".join("?" * len(job_ids))
            cur = db.execute(q.HEARTBEAT.format(marks=marks), (lease, to_db(now), *job_ids))
            return int(cur.rowcount)

    def fail_job(
        self,
        job_id: int,
        error: str,
        now: datetime,
        retry_at: datetime | None = None,
        max_attempts: int = 3,
    ) -> str:
        """Record a failed attempt; see `Store.fail_job`."""
        after = to_db(retry_at) if retry_at is not None else None
        with self._tx() as db:
            row = db.execute(
                q.FAIL_JOB, (max_attempts, after, error[:2000], to_db(now), job_id)
            ).fetchone()
        return str(row[0]) if row else "gone"

    def pending_jobs(self, tenant: str | None = None) -> int:
        """How many jobs wait (pending or running)."""
        if tenant is None:
            return int(self._rows(q.COUNT_PENDING)[0][0])
        return int(self._rows(q.COUNT_PENDING_TENANT, (tenant,))[0][0])

    def list_jobs(
        self, tenant: str, status: str | None = None, limit: int = 100, actor: str | None = None
    ) -> list[JobInfo]:
        """A tenant's (or one actor's) extraction jobs, newest first, optionally of one status."""
        if actor is not None:
            rows = self._rows(q.LIST_JOBS_ACTOR, (tenant, actor, status, status, limit))
        elif status is None:
            rows = self._rows(q.LIST_JOBS, (tenant, limit))
        else:
            rows = self._rows(q.LIST_JOBS_STATUS, (tenant, status, limit))
        return [
            JobInfo(
                id=r[0],
                event_id=r[1],
                strategy=r[2],
                status=r[3],
                attempts=r[4],
                last_error=r[5],
                run_after=parse_time(r[6]) if r[6] else None,
                updated_at=parse_time(r[7]),
            )
            for r in rows
        ]

    def job_counts(self, tenant: str, actor: str | None = None) -> dict[str, int]:
        """A tenant's (or one actor's) extraction jobs by status: pending, running, done,
        failed."""
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        if actor is None:
            rows = self._rows(q.JOB_COUNTS, (tenant,))
        else:
            rows = self._rows(q.JOB_COUNTS_ACTOR, (tenant, actor))
        for status, n in rows:
            counts[str(status)] = int(n)
        return counts

    def retry_jobs(self, tenant: str, statuses: Sequence[str] = ("failed",)) -> int:
        """Put a tenant's jobs of these statuses back to pending; return how many."""
        if not statuses:
            return 0
        marks = ",".join("?" * len(statuses))
        with self._tx() as db:
            cur = db.execute(
                q.RETRY_JOBS.format(marks=marks), (to_db(self._clock()), tenant, *statuses)
            )
            return int(cur.rowcount)

    def requeue_job(self, tenant: str, event_id: str, strategy: str) -> bool:
        """Run one (event, strategy) job again; see `Store.requeue_job`."""
        with self._tx() as db:
            cur = db.execute(q.REQUEUE_JOB, (to_db(self._clock()), tenant, event_id, strategy))
            return cur.rowcount > 0

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
        """Claim a request id for `token`; see `Store.claim_request`."""
        now = self._clock()
        until = to_db(now + timedelta(seconds=lease_seconds))
        key = (tenant, actor, request_id)
        with self._tx() as db:  # BEGIN IMMEDIATE: one claimant at a time, across processes
            cur = db.execute(q.CLAIM_REQUEST, (*key, operation, target, token, until, to_db(now)))
            if cur.rowcount == 0:
                db.execute(q.RETAKE_REQUEST, (operation, target, token, until, *key, to_db(now)))
            row = db.execute(q.GET_REQUEST, key).fetchone()
        return _request(row)

    def finish_request(
        self, tenant: str, actor: str, request_id: str, token: str, outcome: dict[str, Any]
    ) -> bool:
        """Record the outcome of a claim `token` holds; see `Store.finish_request`."""
        with self._tx() as db:
            params = (json.dumps(outcome), tenant, actor, request_id, token)
            return int(db.execute(q.FINISH_REQUEST, params).rowcount) > 0

    def release_request(self, tenant: str, actor: str, request_id: str, token: str) -> None:
        """Drop a claim `token` holds without an outcome; see `Store.release_request`."""
        with self._tx() as db:
            db.execute(q.RELEASE_REQUEST, (tenant, actor, request_id, token))

    def request_for_target(self, tenant: str, request_id: str, target: str) -> RequestEntry | None:
        """The final entry of a request id that named `target`; see the Store protocol."""
        rows = self._rows(q.REQUEST_FOR_TARGET, (tenant, target, request_id))
        return _request(rows[0]) if rows else None

    def record_llm_calls(self, tenant: str, calls: Sequence[LLMCall]) -> None:
        """Log language-model calls (never a prompt, an answer or a key)."""
        if not calls:
            return
        now = to_db(self._clock())
        with self._tx() as db:
            db.executemany(
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
                        int(c.ok),
                        c.error[:500] or None,
                        now,
                    )
                    for c in calls
                ],
            )

    def llm_usage(self, tenant: str) -> dict[str, float]:
        """Totals of a tenant's logged model calls."""
        calls, errors, prompt, completion, seconds, dropped = self._rows(q.LLM_USAGE, (tenant,))[0]
        return {
            "calls": int(calls),
            "errors": int(errors),
            "prompt_tokens": int(prompt),
            "completion_tokens": int(completion),
            "seconds": float(seconds),
            "calls_with_dropped_items": int(dropped),
        }


def _request(row: Any) -> RequestEntry:
    outcome = None if row[4] is None else json.loads(row[4])
    return RequestEntry(str(row[0]), str(row[1]), str(row[2]), row[3], outcome, row[5])
