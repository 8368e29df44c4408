"""The job queue, the request ledger and the model-call log: written once, for every backend.

Three role objects of both stores, composed over their backend and one bundle of
statements (`JobSQL`): `Jobs` (`Store.jobs`), `Ledger` (`Store.ledger`) and
`ModelCalls` (`Store.model_calls`). A job is leased by one claimer
(`claim_jobs`), kept alive by heartbeats, waits out a backoff after a failed
attempt (`fail_job`) and fails for good after `max_attempts`; a lease that ran
out makes a running job ready again, for any claimer. A request id keeps its
first outcome (`claim_request`, `finish_request`). A backend supplies only its
dialect's named statements (`JobSQL`) and its transactions: on SQLite a claim
is one `UPDATE ... RETURNING` under the file's write lock (BEGIN IMMEDIATE),
on PostgreSQL the same statement takes its rows `FOR UPDATE SKIP LOCKED`, so
concurrent claimers never wait for each other nor take the same job. Claiming,
extending and failing jobs span tenants by design (workers serve them all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from remem.model import Job, JobInfo, LLMCall
from remem.store.flows.backend import Backend, Row
from remem.store.roles import JobGroup, RequestEntry
from remem.store.rows import job_info_from, llm_call_params

LAST_NUMBER = 2**63 - 1  # above every job's and deletion's number: the first page
ALL_TENANTS = None  # a transaction that spans tenants by design
JOB_COUNTS = ("pending", "running", "done", "failed")
BACKLOG_SCAN = 2000  # a tenant's waiting jobs read to find one actor's, at most


class JobSQL(Protocol):
    """The named statements of the job queue, the ledger and the model-call log."""

    CLAIM_JOBS: str  # lease, now, limit -> id, tenant, event_id, strategy, attempts (new)
    CLAIM_JOBS_OF: str  # the same, of the strategies {keys}
    CLAIM_ACTOR_JOBS: str  # lease, now, limit, tenant, actor: the same, of one actor's events
    TENANT_BACKLOG: str  # tenant, cap -> n: the tenant's pending and running jobs, up to cap
    ACTOR_BACKLOG: str  # tenant, actor, now -> ready, n: one actor's, from the tenant's
    ACTOR_BACKLOG_BY_EVENTS: str  # the same, from the actor's events
    HEARTBEAT: str  # lease, now, {keys}: job ids
    FAIL_JOB: str  # max_attempts, retry_at, error, now, job_id -> status
    COUNT_PENDING: str  # -> n
    COUNT_PENDING_TENANT: str  # tenant -> n
    LIST_JOBS: str  # tenant, before, limit -> the columns of `JobInfo`
    LIST_JOBS_STATUS: str  # tenant, status, before, limit
    LIST_JOBS_ACTOR: str  # tenant, actor, status (NULL: any), before, limit
    JOB_COUNTS: str  # tenant -> status, n
    JOB_COUNTS_ACTOR: str  # tenant, actor -> status, n
    JOB_GROUPS: str  # tenant -> strategy, status, n, oldest
    JOB_GROUPS_ALL: str  # -> strategy, status, n, oldest (every tenant)
    RETRY_JOBS: str  # now, tenant, {keys}: statuses
    REQUEUE_JOB: str  # now, tenant, event_id, strategy
    CLAIM_REQUEST: str  # tenant, actor, request_id, operation, target, digest, token, until, now
    RETAKE_REQUEST: str  # the same: an expired claim without an outcome is taken over
    GET_REQUEST: str  # tenant, actor, request_id
    FINISH_REQUEST: str  # outcome, tenant, actor, request_id, token
    RELEASE_REQUEST: str  # tenant, actor, request_id, token
    REQUEST_FOR_TARGET: str  # tenant, target, request_id
    INSERT_LLM_CALL: str  # the names of `remem.store.rows.llm_call_params`
    LLM_USAGE: str  # tenant -> calls, errors, prompt_tokens, completion_tokens, seconds, ...


class _Role:
    """A role over a store's `backend` and its dialect's statements `sql`."""

    def __init__(self, backend: Backend, sql: JobSQL) -> None:
        self.backend, self.sql = backend, sql


class Jobs(_Role):
    """The job queue of a store (`remem.store.roles.JobQueue`), written once."""

    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        lease_seconds: float,
        strategies: Sequence[str] | None = None,
    ) -> list[Job]:
        """Lease up to `limit` ready jobs of any tenant, oldest first; see `Store.claim_jobs`.

        Ready: pending and past its backoff, or running with its lease run out (a
        claimer that died). Each claim is one statement in its own transaction.
        """
        q = self.sql
        params = {
            "lease": self.backend.at(now + timedelta(seconds=lease_seconds)),
            "now": self.backend.at(now),
            "limit": limit,
        }
        statements: list[tuple[str, Mapping[str, Any]]] = [(q.CLAIM_JOBS, params)]
        if strategies is not None:
            # one statement on PostgreSQL; SQLite's are few (a worker's strategies)
            statements = list(self.backend.lists(q.CLAIM_JOBS_OF, params, list(strategies)))
        rows: list[Row] = []
        for sql, bound in statements:
            if len(rows) < limit:
                rows.extend(
                    self.backend.write(ALL_TENANTS, sql, {**bound, "limit": limit - len(rows)})
                )
        jobs = (
            Job(r["id"], r["tenant"], r["event_id"], r["strategy"], r["attempts"]) for r in rows
        )
        return sorted(jobs, key=lambda j: j.id)

    def actor_backlog(self, tenant: str, actor: str, now: datetime) -> tuple[int, int]:
        """(ready, waiting) jobs of one actor's events; see `Store.actor_backlog`. Read
        from the tenant's waiting jobs when fewer than `BACKLOG_SCAN` wait, else from the
        actor's events: whichever side is known to be the smaller."""
        q = self.sql
        params = {
            "tenant": tenant,
            "actor": actor,
            "now": self.backend.at(now),
            "cap": BACKLOG_SCAN,
        }
        # each read its own statement: one round trip on PostgreSQL where a transaction
        # around both cost four (every recall asks, and most find nothing waiting); the
        # first count only chooses the second's plan, so they need not see one snapshot
        waiting = int(self.backend.read(tenant, q.TENANT_BACKLOG, params)[0]["n"])
        if not waiting:
            return 0, 0
        sql = q.ACTOR_BACKLOG if waiting < BACKLOG_SCAN else q.ACTOR_BACKLOG_BY_EVENTS
        row = self.backend.read(tenant, sql, params)[0]
        return int(row["ready"] or 0), int(row["n"])

    def claim_actor_jobs(
        self, tenant: str, actor: str, now: datetime, limit: int, lease_seconds: float
    ) -> list[Job]:
        """Lease up to `limit` ready jobs of one actor's events; see `Store.claim_actor_jobs`."""
        params = {
            "lease": self.backend.at(now + timedelta(seconds=lease_seconds)),
            "now": self.backend.at(now),
            "limit": limit,
            "tenant": tenant,
            "actor": actor,
        }
        rows = self.backend.write(tenant, self.sql.CLAIM_ACTOR_JOBS, params)
        jobs = (
            Job(r["id"], r["tenant"], r["event_id"], r["strategy"], r["attempts"]) for r in rows
        )
        return sorted(jobs, key=lambda j: j.id)

    def heartbeat(self, job_ids: Sequence[int], now: datetime, lease_seconds: float) -> int:
        """Extend the lease of running jobs (of any tenant); return how many were running."""
        if not job_ids:
            return 0
        params = {
            "lease": self.backend.at(now + timedelta(seconds=lease_seconds)),
            "now": self.backend.at(now),
        }
        with self.backend.transaction(ALL_TENANTS) as db:
            return sum(
                db.execute(sql, bound).rowcount
                for sql, bound in self.backend.lists(self.sql.HEARTBEAT, params, list(job_ids))
            )

    def fail_job(
        self,
        job_id: int,
        error: str,
        now: datetime,
        retry_at: datetime | None = None,
        max_attempts: int = 3,
    ) -> str:
        """Record a failed attempt of a running job; see `Store.fail_job`: 'pending' (to be
        retried at `retry_at`), 'failed' (its last attempt), or 'gone' (not running)."""
        params = {
            "max_attempts": max_attempts,
            "retry_at": self.backend.at(retry_at),
            "error": error[:2000],
            "now": self.backend.at(now),
            "job_id": job_id,
        }
        rows = self.backend.write(ALL_TENANTS, self.sql.FAIL_JOB, params)
        return str(rows[0]["status"]) if rows else "gone"

    def pending_jobs(self, tenant: str | None = None) -> int:
        """How many jobs wait (pending or running), of one tenant or of all."""
        q = self.sql
        if tenant is None:
            rows = self.backend.read(ALL_TENANTS, q.COUNT_PENDING, {})
        else:
            rows = self.backend.read(tenant, q.COUNT_PENDING_TENANT, {"tenant": tenant})
        return int(rows[0]["n"])

    def list_jobs(
        self,
        tenant: str,
        status: str | None = None,
        limit: int = 100,
        actor: str | None = None,
        before: int | None = None,
    ) -> list[JobInfo]:
        """A tenant's (or one actor's) extraction jobs, newest first, optionally of one status,
        numbered below `before` (a keyset page; None: from the newest)."""
        q = self.sql
        below = LAST_NUMBER if before is None else before
        params = {
            "tenant": tenant,
            "actor": actor,
            "status": status,
            "limit": limit,
            "before": below,
        }
        if actor is not None:
            sql = q.LIST_JOBS_ACTOR
        else:
            sql = q.LIST_JOBS if status is None else q.LIST_JOBS_STATUS
        return [job_info_from(r, self.backend.time) for r in self.backend.read(tenant, sql, params)]

    def job_counts(self, tenant: str, actor: str | None = None) -> dict[str, int]:
        """A tenant's (or one actor's) extraction jobs by status: pending, running, done,
        failed."""
        q = self.sql
        sql = q.JOB_COUNTS if actor is None else q.JOB_COUNTS_ACTOR
        counts = dict.fromkeys(JOB_COUNTS, 0)
        for r in self.backend.read(tenant, sql, {"tenant": tenant, "actor": actor}):
            counts[str(r["status"])] = int(r["n"])
        return counts

    def job_groups(self, tenant: str | None) -> list[JobGroup]:
        """Jobs by strategy and status with the oldest one's creation, of one tenant or
        (None) of every tenant (read at a metrics scrape)."""
        q = self.sql
        if tenant is None:
            rows = self.backend.read(ALL_TENANTS, q.JOB_GROUPS_ALL, {})
        else:
            rows = self.backend.read(tenant, q.JOB_GROUPS, {"tenant": tenant})
        return [
            JobGroup(
                str(r["strategy"]), str(r["status"]), int(r["n"]), self.backend.time(r["oldest"])
            )
            for r in rows
        ]

    def retry_jobs(self, tenant: str, statuses: Sequence[str] = ("failed",)) -> int:
        """Put a tenant's jobs of these statuses back to pending; return how many."""
        if not statuses:
            return 0
        params = {"now": self.backend.at(self.backend.clock()), "tenant": tenant}
        with self.backend.transaction(tenant) as db:
            return sum(
                db.execute(sql, bound).rowcount
                for sql, bound in self.backend.lists(self.sql.RETRY_JOBS, params, list(statuses))
            )

    def requeue_job(self, tenant: str, event_id: str, strategy: str) -> bool:
        """Run one (event, strategy) job again, unless it is running; whether it was."""
        params = {
            "now": self.backend.at(self.backend.clock()),
            "tenant": tenant,
            "event_id": event_id,
            "strategy": strategy,
        }
        with self.backend.transaction(tenant) as db:
            return db.execute(self.sql.REQUEUE_JOB, params).rowcount > 0


class Ledger(_Role):
    """The request-id ledger of a store (`remem.store.roles.RequestLedger`), written once."""

    def claim_request(
        self,
        tenant: str,
        actor: str,
        request_id: str,
        operation: str,
        target: str | None,
        digest: str | None,
        token: str,
        lease_seconds: float,
    ) -> RequestEntry:
        """Claim a request id for `token`; see `Store.claim_request`. The claim is inserted
        (the key makes it exclusive: on PostgreSQL a second INSERT of it waits for the
        first's transaction), or an expired one without an outcome is taken over, or the
        entry found is returned as it is (another claimant's, or a final outcome)."""
        q, now = self.sql, self.backend.clock()
        params = {
            "tenant": tenant,
            "actor": actor,
            "request_id": request_id,
            "operation": operation,
            "target": target,
            "digest": digest,
            "token": token,
            "until": self.backend.at(now + timedelta(seconds=lease_seconds)),
            "now": self.backend.at(now),
        }
        with self.backend.transaction(tenant) as db:
            for sql in (q.CLAIM_REQUEST, q.RETAKE_REQUEST, q.GET_REQUEST):
                rows = db.execute(sql, params).fetchall()
                if rows:
                    return self._request(rows[0])
        raise AssertionError("a request is inserted, retaken or found in one transaction")

    def finish_request(
        self, tenant: str, actor: str, request_id: str, token: str, outcome: dict[str, Any]
    ) -> bool:
        """Record the outcome of a claim `token` holds; see `Store.finish_request`."""
        params = {
            "outcome": self.backend.json_param(outcome),
            "tenant": tenant,
            "actor": actor,
            "request_id": request_id,
            "token": token,
        }
        with self.backend.transaction(tenant) as db:
            return db.execute(self.sql.FINISH_REQUEST, params).rowcount > 0

    def release_request(self, tenant: str, actor: str, request_id: str, token: str) -> None:
        """Drop a claim `token` holds without an outcome; see `Store.release_request`."""
        params = {"tenant": tenant, "actor": actor, "request_id": request_id, "token": token}
        with self.backend.transaction(tenant) as db:
            db.execute(self.sql.RELEASE_REQUEST, params)

    def request_for_target(self, tenant: str, request_id: str, target: str) -> RequestEntry | None:
        """The final entry of a request id that named `target`; see the Store protocol."""
        params = {"tenant": tenant, "target": target, "request_id": request_id}
        rows = self.backend.read(tenant, self.sql.REQUEST_FOR_TARGET, params)
        return self._request(rows[0]) if rows else None

    def _request(self, r: Row) -> RequestEntry:
        outcome = None if r["outcome"] is None else self.backend.json_value(r["outcome"])
        return RequestEntry(
            str(r["actor"]),
            str(r["request_id"]),
            str(r["operation"]),
            r["target"],
            outcome,
            r["token"],
            r["digest"],
        )


class ModelCalls(_Role):
    """The model-call log of a store (`remem.store.roles.ModelCallLog`), written once."""

    def record_llm_calls(self, tenant: str, calls: Sequence[LLMCall]) -> None:
        """Log language-model calls (never a prompt, an answer or a key)."""
        if not calls:
            return
        at = self.backend.at(self.backend.clock())
        with self.backend.transaction(tenant) as db:
            db.executemany(
                self.sql.INSERT_LLM_CALL, [llm_call_params(tenant, c, at) for c in calls]
            )

    def llm_usage(self, tenant: str) -> dict[str, float]:
        """Totals of a tenant's logged model calls: calls, errors, tokens, seconds."""
        (r,) = self.backend.read(tenant, self.sql.LLM_USAGE, {"tenant": tenant})
        return {
            "calls": int(r["calls"]),
            "errors": int(r["errors"]),
            "prompt_tokens": int(r["prompt_tokens"]),
            "completion_tokens": int(r["completion_tokens"]),
            "seconds": float(r["seconds"]),
            "calls_with_dropped_items": int(r["calls_with_dropped_items"]),
        }
