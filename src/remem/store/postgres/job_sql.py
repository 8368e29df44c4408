"""Named SQL of the job queue, the request ledger and the model-call log on PostgreSQL.

Run by the flows of `remem.store.flows.jobs` (named parameters); `remem.store.postgres.sql`
re-exports every name, so the store reads all its SQL as one `q`. Claims take
their rows `FOR UPDATE SKIP LOCKED`: concurrent claimers never wait for each
other nor take the same job.
"""

from __future__ import annotations

__all__ = [
    "ACTOR_BACKLOG",
    "ACTOR_BACKLOG_BY_EVENTS",
    "CLAIM_ACTOR_JOBS",
    "CLAIM_JOBS",
    "CLAIM_JOBS_OF",
    "CLAIM_REQUEST",
    "COUNT_PENDING",
    "COUNT_PENDING_TENANT",
    "DONE_JOBS",
    "FAIL_JOB",
    "FINISH_REQUEST",
    "GET_REQUEST",
    "HEARTBEAT",
    "INSERT_LLM_CALL",
    "JOB_COUNTS",
    "JOB_COUNTS_ACTOR",
    "JOB_GROUPS",
    "JOB_GROUPS_ALL",
    "JOB_INFO_COLUMNS",
    "LIST_JOBS",
    "LIST_JOBS_ACTOR",
    "LIST_JOBS_STATUS",
    "LLM_USAGE",
    "RELEASE_REQUEST",
    "REQUEST_COLUMNS",
    "REQUEST_FOR_TARGET",
    "REQUEUE_JOB",
    "RETAKE_REQUEST",
    "RETRY_JOBS",
    "TENANT_BACKLOG",
]

# Any number of workers claim at once: each takes rows nobody else holds.
_READY = """((status = 'pending' AND (run_after IS NULL OR run_after <= %(now)s))
        OR (status = 'running' AND lease_until < %(now)s))"""
_CLAIM = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = %(lease)s,
    updated_at = %(now)s
WHERE id IN (
    SELECT id FROM jobs WHERE {ready}{strategies}
    ORDER BY id LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING id, tenant, event_id, strategy, attempts
"""
CLAIM_JOBS = _CLAIM.format(ready=_READY, strategies="")
CLAIM_JOBS_OF = _CLAIM.format(ready=_READY, strategies=" AND strategy = ANY(%(keys)s::text[])")
HEARTBEAT = """
UPDATE jobs SET lease_until = %(lease)s, updated_at = %(now)s
WHERE status = 'running' AND id = ANY(%(keys)s::bigint[])
"""
FAIL_JOB = """
UPDATE jobs SET status = CASE WHEN attempts >= %(max_attempts)s THEN 'failed' ELSE 'pending' END,
    run_after = %(retry_at)s, last_error = %(error)s, lease_until = NULL, updated_at = %(now)s
WHERE id = %(job_id)s AND status = 'running'
RETURNING status
"""
DONE_JOBS = """
UPDATE jobs SET status = 'done', lease_until = NULL, run_after = NULL, updated_at = %(at)s
WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::bigint[])
"""
COUNT_PENDING = "SELECT count(*) AS n FROM jobs WHERE status IN ('pending', 'running')"
COUNT_PENDING_TENANT = """
SELECT count(*) AS n FROM jobs
WHERE tenant = %(tenant)s AND status IN ('pending', 'running')
"""
JOB_INFO_COLUMNS = "id, event_id, strategy, status, attempts, last_error, run_after, updated_at"
LIST_JOBS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = %(tenant)s AND id < %(before)s
ORDER BY id DESC LIMIT %(limit)s
"""
LIST_JOBS_STATUS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = %(tenant)s AND status = %(status)s
AND id < %(before)s ORDER BY id DESC LIMIT %(limit)s
"""
JOB_COUNTS = "SELECT status, count(*) AS n FROM jobs WHERE tenant = %(tenant)s GROUP BY status"
# the jobs by strategy and status with the oldest one's creation (remem.telemetry.metrics)
JOB_GROUPS = """
SELECT strategy, status, count(*) AS n, min(created_at) AS oldest FROM jobs
WHERE tenant = %(tenant)s GROUP BY strategy, status
"""
JOB_GROUPS_ALL = """
SELECT strategy, status, count(*) AS n, min(created_at) AS oldest FROM jobs
GROUP BY strategy, status
"""
# one actor's jobs: those of the actor's events (an actor-narrowed key sees no others)
JOB_COUNTS_ACTOR = """
SELECT j.status, count(*) AS n
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = %(tenant)s AND e.actor = %(actor)s GROUP BY j.status
"""
LIST_JOBS_ACTOR = """
SELECT j.id, j.event_id, j.strategy, j.status, j.attempts, j.last_error, j.run_after, j.updated_at
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = %(tenant)s AND e.actor = %(actor)s
    AND (%(status)s::text IS NULL OR j.status = %(status)s) AND j.id < %(before)s
ORDER BY j.id DESC LIMIT %(limit)s
"""
# one actor's backlog and its claim (a recall catching up, `remem.memory.catch_up`). The
# tenant's waiting jobs, at most %(cap)s of them, by the jobs_tenant index (nothing else is
# read when none waits); when fewer than the cap wait, the actor's among them, else the
# actor's events (by events_thread) and their jobs (by their key)
TENANT_BACKLOG = """
SELECT count(*) AS n FROM (
    SELECT 1 FROM jobs WHERE tenant = %(tenant)s AND status IN ('pending', 'running')
    LIMIT %(cap)s
) AS waiting
"""
_BACKLOG_COLUMNS = """count(*) FILTER (WHERE (j.status = 'pending'
            AND (j.run_after IS NULL OR j.run_after <= %(now)s))
        OR (j.status = 'running' AND j.lease_until < %(now)s)) AS ready,
    count(*) AS n"""
ACTOR_BACKLOG = f"""
SELECT {_BACKLOG_COLUMNS}
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = %(tenant)s AND j.status IN ('pending', 'running') AND e.actor = %(actor)s
"""
ACTOR_BACKLOG_BY_EVENTS = f"""
SELECT {_BACKLOG_COLUMNS}
FROM events e JOIN jobs j ON j.tenant = e.tenant AND j.event_id = e.id
WHERE e.tenant = %(tenant)s AND e.actor = %(actor)s AND j.status IN ('pending', 'running')
"""
CLAIM_ACTOR_JOBS = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = %(lease)s,
    updated_at = %(now)s
WHERE id IN (
    SELECT j.id FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
    WHERE j.tenant = %(tenant)s AND j.status IN ('pending', 'running') AND e.actor = %(actor)s
        AND ((j.status = 'pending' AND (j.run_after IS NULL OR j.run_after <= %(now)s))
            OR (j.status = 'running' AND j.lease_until < %(now)s))
    ORDER BY j.id LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
RETURNING id, tenant, event_id, strategy, attempts
"""
RETRY_JOBS = """
UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, lease_until = NULL,
    updated_at = %(now)s
WHERE tenant = %(tenant)s AND status = ANY(%(keys)s::text[])
"""
REQUEUE_JOB = """
UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, lease_until = NULL,
    updated_at = %(now)s
WHERE tenant = %(tenant)s AND event_id = %(event_id)s AND strategy = %(strategy)s
    AND status != 'running'
"""
# the request ledger: a claim is inserted first (the primary key makes it exclusive),
# an expired one is taken over, then the outcome replaces it (schema 7); `digest` is
# what the request asked (schema 19)
REQUEST_COLUMNS = "actor, request_id, operation, target, outcome, token, digest"
CLAIM_REQUEST = f"""
INSERT INTO api_requests
    (tenant, actor, request_id, operation, target, digest, token, lease_until, created_at)
VALUES (%(tenant)s, %(actor)s, %(request_id)s, %(operation)s, %(target)s, %(digest)s,
    %(token)s, %(until)s, %(now)s)
ON CONFLICT (tenant, actor, request_id) DO NOTHING
RETURNING {REQUEST_COLUMNS}
"""
RETAKE_REQUEST = f"""
UPDATE api_requests SET operation = %(operation)s, target = %(target)s,
    digest = %(digest)s, token = %(token)s, lease_until = %(until)s
WHERE tenant = %(tenant)s AND actor = %(actor)s AND request_id = %(request_id)s
    AND outcome IS NULL AND lease_until < %(now)s
RETURNING {REQUEST_COLUMNS}
"""
GET_REQUEST = f"""
SELECT {REQUEST_COLUMNS} FROM api_requests
WHERE tenant = %(tenant)s AND actor = %(actor)s AND request_id = %(request_id)s
"""
FINISH_REQUEST = """
UPDATE api_requests SET outcome = %(outcome)s, token = NULL, lease_until = NULL
WHERE tenant = %(tenant)s AND actor = %(actor)s AND request_id = %(request_id)s
    AND token = %(token)s AND outcome IS NULL
"""
RELEASE_REQUEST = """
DELETE FROM api_requests
WHERE tenant = %(tenant)s AND actor = %(actor)s AND request_id = %(request_id)s
    AND token = %(token)s AND outcome IS NULL
"""
REQUEST_FOR_TARGET = f"""
SELECT {REQUEST_COLUMNS} FROM api_requests
WHERE tenant = %(tenant)s AND target = %(target)s AND request_id = %(request_id)s
    AND outcome IS NOT NULL
ORDER BY created_at LIMIT 1
"""
INSERT_LLM_CALL = """
INSERT INTO llm_calls (tenant, job_id, strategy, model, prompt_version, prompt_tokens,
    completion_tokens, seconds, ok, error, created_at)
VALUES (%(tenant)s, %(job_id)s, %(strategy)s, %(model)s, %(prompt_version)s,
    %(prompt_tokens)s, %(completion_tokens)s, %(seconds)s, %(ok)s, %(error)s, %(at)s)
"""
LLM_USAGE = """
SELECT count(*) AS calls, count(*) FILTER (WHERE NOT ok) AS errors,
    coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens), 0) AS completion_tokens,
    coalesce(sum(seconds), 0) AS seconds,
    count(*) FILTER (WHERE ok AND error IS NOT NULL) AS calls_with_dropped_items
FROM llm_calls WHERE tenant = %(tenant)s
"""
