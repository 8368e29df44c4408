"""Named SQL for the PostgreSQL store, built here and run in `remem.store.postgres`.

Every statement that reads tenant-owned rows names the tenant itself; row-level
security (see `postgres_migrations/0001_initial.sql`) is the second lock, not
the first. Lists travel as arrays (`= ANY(%s::text[])`), never as spliced text.
"""

from __future__ import annotations

from typing import Any

from remem.store.base import Scope
from remem.store.sqlite_sql import like_prefix, words

__all__ = ["like_prefix", "words"]

TEXT_CONFIG = "english"  # the text search configuration of the tsvector columns


def scope_sql(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) of one scope, LIKE wildcards escaped."""
    a = f"{alias}." if alias else ""
    sql = f"{a}tenant = %s AND {a}actor = %s"
    params: list[Any] = [scope.tenant, scope.actor]
    if scope.namespace_prefix:
        sql += f" AND {a}namespace LIKE %s ESCAPE '\\'"
        params.append(like_prefix(scope.namespace_prefix))
    return sql, params


def tsquery(text: str) -> tuple[str, list[Any]] | None:
    """An OR of `plainto_tsquery` terms, one per content word of `text`, or None.

    Each word is a bound parameter, so no query syntax can reach the parser.
    """
    found = words(text)
    if not found:
        return None
    sql = " || ".join(f"plainto_tsquery('{TEXT_CONFIG}', %s)" for _ in found)
    return sql, list(found)


def list_records(scope: Scope) -> tuple[str, list[Any]]:
    """A scope's records of some statuses (then a status array and a limit), newest first."""
    where, params = scope_sql(scope)
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM records WHERE {where} AND status = ANY(%s::text[]) "
        "ORDER BY valid_from DESC, seq DESC LIMIT %s"
    )
    return sql, params


def search_records(scope: Scope, query: str, limit: int) -> tuple[str, list[Any]] | None:
    """ts_rank over one scope's active and invalid records, or None for an empty query."""
    tsq = tsquery(query)
    if tsq is None:
        return None
    where, params = scope_sql(scope)
    sql = (
        "SELECT id, ts_rank(tsv, s.q) AS score "
        f"FROM records, (SELECT {tsq[0]} AS q) AS s "
        f"WHERE {where} AND status IN ('active', 'invalid') AND tsv @@ s.q "
        "ORDER BY score DESC, seq DESC LIMIT %s"
    )
    return sql, [*tsq[1], *params, limit]


def search_events(scope: Scope, query: str, limit: int) -> tuple[str, list[Any]] | None:
    """ts_rank over one actor's raw events, or None for an empty query."""
    tsq = tsquery(query)
    if tsq is None:
        return None
    sql = (
        "SELECT id, ts_rank(tsv, s.q) AS score "
        f"FROM events, (SELECT {tsq[0]} AS q) AS s "
        "WHERE tenant = %s AND actor = %s AND tsv @@ s.q "
        "ORDER BY score DESC, seq DESC LIMIT %s"
    )
    return sql, [*tsq[1], scope.tenant, scope.actor, limit]


def vector_search(scope: Scope, include_invalid: bool) -> tuple[str, list[Any]]:
    """Exact cosine search inside one scope; then (query, model, at, at, query, limit).

    The scope, model, status and validity are in the WHERE clause, so the scan
    only ever reads one subject's vectors.
    """
    where, params = scope_sql(scope, "r")
    statuses = "('active', 'invalid')" if include_invalid else "('active')"
    sql = (
        "SELECT r.id, 1 - (v.vec <=> %s::vector) AS cosine "
        "FROM record_vectors v JOIN records r ON r.tenant = v.tenant AND r.id = v.record_id "
        f"WHERE v.tenant = %s AND v.actor = %s AND {where} AND v.model = %s "
        f"AND r.status IN {statuses} AND r.valid_from <= %s "
        "AND (r.valid_until IS NULL OR r.valid_until > %s) "
        "ORDER BY v.vec <=> %s::vector, r.seq LIMIT %s"
    )
    return sql, [scope.tenant, scope.actor, *params]


SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
# one migrator at a time across every process sharing the database
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(1919249773)"  # 0x72656D6D, "remm"
SCHEMA_VERSION = "SELECT coalesce(max(version), 0) FROM schema_version"
SET_VERSION = "INSERT INTO schema_version (version) VALUES (%s)"
SET_TENANT = "SELECT set_config('remem.tenant', %s, true)"
SET_ALL_TENANTS = "SELECT set_config('remem.all_tenants', 'on', true)"

RECORD_COLUMNS = (
    "id, tenant, actor, namespace, kind, text, field, value, source_type, source_event_ids, "
    "strategy, extractor, authority, sensitivity, valid_from, valid_until, created_at, "
    "updated_at, status, supersedes, superseded_by, flags"
)
EVENT_COLUMNS = "id, tenant, actor, session, role, text, time, metadata"

INSERT_EVENT = """
INSERT INTO events (tenant, id, actor, session, role, text, time, metadata, received_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (tenant, id) DO NOTHING
RETURNING id
"""
INSERT_JOB = """
INSERT INTO jobs (tenant, event_id, strategy, created_at, updated_at) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (tenant, event_id, strategy) DO NOTHING
"""
LIST_EVENTS_ACTOR = f"""
SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %s AND actor = %s ORDER BY time, seq LIMIT %s
"""
LIST_EVENTS_SESSION = f"""
SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %s AND actor = %s AND session = %s
ORDER BY time, seq LIMIT %s
"""
GET_EVENTS = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %s AND id = ANY(%s::text[]) ORDER BY seq"
)
SESSION_CONTEXT = f"""
SELECT {EVENT_COLUMNS} FROM events
WHERE tenant = %s AND actor = %s AND session = %s AND time < %s
ORDER BY time DESC, seq DESC LIMIT %s
"""
# Any number of workers claim at once: each takes rows nobody else holds. Then
# (lease, now, now, strategies or NULL for all, strategies, limit).
CLAIM_JOBS = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = %s, updated_at = %s
WHERE id IN (
    SELECT id FROM jobs
    WHERE ((status = 'pending' AND (run_after IS NULL OR run_after <= %s))
        OR (status = 'running' AND lease_until < %s))
      AND (%s::text[] IS NULL OR strategy = ANY(%s::text[]))
    ORDER BY id LIMIT %s
    FOR UPDATE SKIP LOCKED
)
RETURNING id, tenant, event_id, strategy, attempts
"""
HEARTBEAT = """
UPDATE jobs SET lease_until = %s, updated_at = %s
WHERE status = 'running' AND id = ANY(%s::bigint[])
"""
# then (max_attempts, retry_at, error, now, job id)
FAIL_JOB = """
UPDATE jobs SET status = CASE WHEN attempts >= %s THEN 'failed' ELSE 'pending' END,
    run_after = %s, last_error = %s, lease_until = NULL, updated_at = %s
WHERE id = %s AND status = 'running'
RETURNING status
"""
DONE_JOBS = """
UPDATE jobs SET status = 'done', lease_until = NULL, run_after = NULL, updated_at = %s
WHERE tenant = %s AND id = ANY(%s::bigint[])
"""
COUNT_PENDING = "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')"
COUNT_PENDING_TENANT = (
    "SELECT count(*) FROM jobs WHERE tenant = %s AND status IN ('pending', 'running')"
)
JOB_INFO_COLUMNS = "id, event_id, strategy, status, attempts, last_error, run_after, updated_at"
LIST_JOBS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = %s ORDER BY id DESC LIMIT %s
"""
LIST_JOBS_STATUS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = %s AND status = %s ORDER BY id DESC LIMIT %s
"""
JOB_COUNTS = "SELECT status, count(*) AS n FROM jobs WHERE tenant = %s GROUP BY status"
RETRY_JOBS = """
UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, lease_until = NULL,
    updated_at = %s
WHERE tenant = %s AND status = ANY(%s::text[])
"""
REQUEST_OUTCOME = """
SELECT operation, actor, outcome FROM api_requests WHERE tenant = %s AND request_id = %s
"""
SAVE_REQUEST = """
INSERT INTO api_requests (tenant, request_id, operation, actor, outcome, created_at)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (tenant, request_id) DO NOTHING
"""
DELETE_ACTOR_REQUESTS = "DELETE FROM api_requests WHERE tenant = %s AND actor = %s"
COUNT_ACTOR_REQUESTS = "SELECT count(*) FROM api_requests WHERE tenant = %s AND actor = %s"
INSERT_LLM_CALL = """
INSERT INTO llm_calls (tenant, job_id, strategy, model, prompt_version, prompt_tokens,
    completion_tokens, seconds, ok, error, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
LLM_USAGE = """
SELECT count(*) AS calls, count(*) FILTER (WHERE NOT ok) AS errors,
    coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens), 0) AS completion_tokens,
    coalesce(sum(seconds), 0) AS seconds
FROM llm_calls WHERE tenant = %s
"""

INSERT_RECORD = f"""
INSERT INTO records ({RECORD_COLUMNS})
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
INSERT_RECORD_EVENT = """
INSERT INTO record_events (tenant, event_id, record_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING
"""
INSERT_VECTOR = """
INSERT INTO record_vectors (tenant, record_id, actor, model, vec)
VALUES (%s, %s, %s, %s, %s::vector)
ON CONFLICT (tenant, record_id) DO UPDATE SET model = excluded.model, vec = excluded.vec
"""
CLOSE_RECORD = """
UPDATE records SET status = %s, valid_until = COALESCE(%s, valid_until),
    superseded_by = COALESCE(%s, superseded_by), updated_at = %s
WHERE tenant = %s AND id = %s
"""
INSERT_HISTORY = """
INSERT INTO history (tenant, record_id, action, at, text, status, related_id, reason, by_whom)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
GET_RECORD = f"SELECT {RECORD_COLUMNS} FROM records WHERE tenant = %s AND id = %s"
GET_RECORDS = (
    f"SELECT {RECORD_COLUMNS} FROM records WHERE tenant = %s AND id = ANY(%s::text[]) ORDER BY seq"
)
BY_FIELD = f"""
SELECT {RECORD_COLUMNS} FROM records WHERE tenant = %s AND actor = %s AND field = %s
    AND status IN ('active', 'invalid')
ORDER BY valid_from DESC, seq DESC
"""
RECORD_STATUS_BY_EVENT = """
SELECT DISTINCT re.event_id, r.status FROM record_events re
JOIN records r ON r.tenant = re.tenant AND r.id = re.record_id
WHERE re.tenant = %s AND re.event_id = ANY(%s::text[])
"""
INSERT_EVENT_VECTOR = """
INSERT INTO event_vectors (tenant, event_id, actor, model, time, vec)
SELECT tenant, id, actor, %s, time, %s::vector FROM events WHERE tenant = %s AND id = %s
ON CONFLICT (tenant, event_id) DO UPDATE SET model = excluded.model, vec = excluded.vec
"""
# exact cosine search inside one actor's events; then (query, tenant, actor, model, at,
# query, limit)
EVENT_VECTOR_SEARCH = """
SELECT event_id AS id, 1 - (vec <=> %s::vector) AS cosine FROM event_vectors
WHERE tenant = %s AND actor = %s AND model = %s AND time <= %s
ORDER BY vec <=> %s::vector, time LIMIT %s
"""
ADJACENT_EVENTS = f"""
(SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %(tenant)s AND actor = %(actor)s
    AND session = %(session)s AND (time, seq) < (%(time)s, %(seq)s)
    ORDER BY time DESC, seq DESC LIMIT 1)
UNION ALL
(SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %(tenant)s AND actor = %(actor)s
    AND session = %(session)s AND (time, seq) > (%(time)s, %(seq)s)
    ORDER BY time, seq LIMIT 1)
"""
EVENT_SEQ = "SELECT seq, time FROM events WHERE tenant = %s AND id = %s"
DELETE_EVENT_VECTORS = "DELETE FROM event_vectors WHERE tenant = %s AND event_id = ANY(%s::text[])"
DELETE_ACTOR_EVENT_VECTORS = "DELETE FROM event_vectors WHERE tenant = %s AND actor = %s"
COUNT_EVENT_VECTORS = (
    "SELECT count(*) FROM event_vectors WHERE tenant = %s AND event_id = ANY(%s::text[])"
)
COUNT_ACTOR_EVENT_VECTORS = "SELECT count(*) FROM event_vectors WHERE tenant = %s AND actor = %s"
HISTORY = """
SELECT record_id, action, at, text, status, related_id, reason, by_whom FROM history
WHERE tenant = %s AND record_id = %s ORDER BY id
"""
VECTORS_FOR = """
SELECT record_id, vec::text FROM record_vectors
WHERE tenant = %s AND model = %s AND record_id = ANY(%s::text[])
"""

RECORD_ACTOR = "SELECT actor FROM records WHERE tenant = %s AND id = %s FOR UPDATE"
DELETE_VECTORS = "DELETE FROM record_vectors WHERE tenant = %s AND record_id = ANY(%s::text[])"
# the tsvector lives in the row, so deleting a row deletes its full-text entry
DELETE_RECORDS = """
DELETE FROM records WHERE tenant = %s AND id = ANY(%s::text[])
RETURNING (tsv IS NOT NULL) AS indexed
"""
TOMBSTONE = """
INSERT INTO tombstones (tenant, kind, key, created_at) VALUES (%s, %s, %s, %s)
ON CONFLICT DO NOTHING
"""
IS_TOMBSTONED = """
SELECT 1 FROM tombstones
WHERE tenant = %s AND ((kind = 'actor' AND key = %s) OR (kind = 'event' AND key = ANY(%s::text[])))
LIMIT 1
"""
RECORD_EVENT_IDS = "SELECT event_id FROM record_events WHERE tenant = %s AND record_id = %s"
DELETE_RECORD_EVENTS = "DELETE FROM record_events WHERE tenant = %s AND record_id = ANY(%s::text[])"
ERASE_HISTORY_TEXT = (
    "UPDATE history SET text = NULL WHERE tenant = %s AND record_id = ANY(%s::text[])"
)
HISTORY_WITH_TEXT = (
    "SELECT count(*) FROM history WHERE tenant = %s AND record_id = %s AND text IS NOT NULL"
)
ERASE_EVENT_TEXT = """
UPDATE events SET text = '', metadata = '{"forgotten": true}'
WHERE tenant = %s AND id = ANY(%s::text[])
"""
EVENTS_WITH_TEXT = (
    "SELECT count(*) FROM events WHERE tenant = %s AND text != '' AND id = ANY(%s::text[])"
)
COUNT_RECORD = "SELECT count(*) FROM records WHERE tenant = %s AND id = %s"
COUNT_RECORD_VECTORS = "SELECT count(*) FROM record_vectors WHERE tenant = %s AND record_id = %s"
ACTOR_RECORD_IDS = "SELECT id FROM records WHERE tenant = %s AND actor = %s"
DELETE_JOBS_OF_ACTOR = """
DELETE FROM jobs j USING events e
WHERE j.tenant = %s AND e.tenant = j.tenant AND e.id = j.event_id AND e.actor = %s
"""
DELETE_ACTOR_EVENTS = (
    "DELETE FROM events WHERE tenant = %s AND actor = %s RETURNING (text != '') AS indexed"
)
COUNT_ACTOR_RECORDS = "SELECT count(*) FROM records WHERE tenant = %s AND actor = %s"
COUNT_ACTOR_VECTORS = "SELECT count(*) FROM record_vectors WHERE tenant = %s AND actor = %s"
COUNT_ACTOR_EVENTS = "SELECT count(*) FROM events WHERE tenant = %s AND actor = %s"

STATS = {
    "events": "SELECT count(*) FROM events",
    "records": "SELECT count(*) FROM records",
    "active_records": "SELECT count(*) FROM records WHERE status = 'active'",
    "vectors": "SELECT count(*) FROM record_vectors",
    "jobs_pending": "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')",
    "jobs_failed": "SELECT count(*) FROM jobs WHERE status = 'failed'",
}

INSERT_DELETION = """
INSERT INTO deletions (tenant, target, key, status, attempts, result, last_error,
    created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING id
"""
LIST_DELETIONS = """
SELECT id, target, key, status, attempts, result, last_error, created_at FROM deletions
WHERE tenant = %s ORDER BY id DESC LIMIT %s
"""
