"""Named SQL for the SQLite store, built here and run in `remem.store.sqlite.store`."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from remem.store.roles import Scope
from remem.store.sqlite.field_sql import by_field as by_field  # re-exported: read here
from remem.store.sqlite.scope import scope_where
from remem.store.text import STOPWORDS as STOPWORDS  # re-exported: once, in `remem.store.text`
from remem.store.text import WORD as WORD
from remem.store.text import words as words


@functools.lru_cache(maxsize=4096)
def scope_token(tenant: str, actor: str) -> str:
    """The full-text token that names one (tenant, actor) scope (22 characters)."""
    digest = hashlib.blake2b(f"{tenant}\x00{actor}".encode(), digest_size=10).hexdigest()
    return f"zs{digest}"


def scoped_text(token: str, text: str) -> str:
    """Text as the full-text index holds it: every word prefixed by the scope token."""
    found = WORD.findall(text.lower())
    return token + f" {token}".join(found) if found else ""


def fts_phrases(token: str, text: str) -> list[str]:
    """The quoted FTS5 phrases of the content words of `text` inside one scope, in order."""
    return [f'"{token}{w}"' for w in words(text)]


def fts_query(token: str, text: str) -> str | None:
    """A safe FTS5 OR-query of the content words of `text` inside one scope, or None."""
    return " OR ".join(fts_phrases(token, text)) or None


def list_records(
    scope: Scope, paged: bool = False, after: bool = False, fielded: bool = False
) -> tuple[str, dict[str, Any]]:
    """A scope's records of the statuses {keys}, newest first, up to `limit`; `paged`:
    in the order of their unique key (valid_from, id), `after` it (`after_at`, `after_id`);
    `fielded`: only those about a field."""
    where, params = scope_where(scope)
    if fielded:
        where += " AND field IS NOT NULL"
    order = "id" if paged else "rowid"
    keyset = (
        "AND (valid_from < :after_at OR (valid_from = :after_at AND id < :after_id)) "
        if after
        else ""
    )
    sql = (
        f"SELECT * FROM records WHERE {where} AND status IN ({{keys}}) {keyset}"
        f"ORDER BY valid_from DESC, {order} DESC LIMIT :limit"
    )
    return sql, params


def search_records(scope: Scope) -> tuple[str, dict[str, Any]]:
    """BM25 over a scope's records newer than a rowid floor (see `FTS_FLOOR`): the
    scope's named parameters, then `match`, `floor` and `limit`."""
    where, params = scope_where(scope, "r")
    sql = (
        "SELECT r.id, bm25(records_fts) AS rank FROM records_fts "
        "JOIN records r ON r.rowid = records_fts.rowid "
        "WHERE records_fts MATCH :match AND records_fts.rowid >= :floor "
        f"AND {where} AND r.status IN ('active', 'invalid') "
        "ORDER BY rank LIMIT :limit"
    )
    return sql, params


# The rowid of the Nth newest match: BM25 is computed for the newest matches
# only, so a word that occurs in tens of thousands of a subject's records
# costs a bounded amount (about 7 us a row here) and recency breaks the tie.
FTS_FLOOR = """
SELECT rowid FROM {table} WHERE {table} MATCH :match ORDER BY rowid DESC LIMIT 1 OFFSET :offset
"""


# -- adding events (`remem.store.flows.events`, named parameters) --------------------------------
EVENT_FIELDS: tuple[str, ...] = tuple(
    "tenant id actor session role text time metadata received_at".split()
)
EVENT_ROWS = 100  # events to one INSERT: 900 parameters, within every SQLite's 999


@functools.cache
def insert_events(rows: int) -> str:
    """One INSERT of `rows` events, each event's `EVENT_FIELDS` in turn (positional);
    RETURNING the key and id of each that was new (in no promised order)."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)
    return (
        f"INSERT INTO events ({', '.join(EVENT_FIELDS)}) VALUES {values} "
        "ON CONFLICT (tenant, id) DO NOTHING RETURNING seq AS key, id"
    )


INSERT_EVENT_FTS = "INSERT INTO events_fts (rowid, text, scope) VALUES (:key, :text, :scope)"
INSERT_JOB = """
INSERT INTO jobs (tenant, event_id, strategy, created_at, updated_at)
VALUES (:tenant, :event_id, :strategy, :at, :at)
ON CONFLICT (tenant, event_id, strategy) DO NOTHING
"""
EVENT_IDENTITIES = """
SELECT id, actor, session, role, text FROM events
WHERE tenant = :tenant AND id IN ({keys})
"""
# -- reads by key or scope (`remem.store.flows.records`, `events`; named parameters) -----
LIST_EVENTS_ACTOR = """
SELECT * FROM events WHERE tenant = :tenant AND actor = :actor ORDER BY time, seq LIMIT :limit
"""
LIST_EVENTS_SESSION = """
SELECT * FROM events WHERE tenant = :tenant AND actor = :actor AND session = :session
ORDER BY time, seq LIMIT :limit
"""
# a page ends at `limit` rows or `bytes` of text and metadata, as on PostgreSQL
# (`remem.store.postgres.sql._EVENTS_AFTER` says how)
_EVENT_SIZE = "length(CAST(text AS BLOB)) + length(CAST(metadata AS BLOB))"
_EVENTS_AFTER = f"""
SELECT * FROM (
    SELECT *,
        coalesce(sum({_EVENT_SIZE}) OVER (ORDER BY time, seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS bytes_before,
        coalesce(sum({_EVENT_SIZE}) OVER (ORDER BY time, seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS bytes_before_last
    FROM events WHERE tenant = :tenant AND actor = :actor {{session}}
        AND time >= :time AND (time > :time OR seq > :seq)
    ORDER BY time, seq LIMIT :limit
) WHERE bytes_before_last < :bytes ORDER BY time, seq
"""
EVENTS_AFTER_ACTOR = _EVENTS_AFTER.format(session="")
EVENTS_AFTER_SESSION = _EVENTS_AFTER.format(session="AND session = :session")
GET_EVENTS = "SELECT * FROM events WHERE tenant = :tenant AND id IN ({keys}) ORDER BY seq"
SESSION_CONTEXT = """
SELECT * FROM events
WHERE tenant = :tenant AND actor = :actor AND session = :session AND time < :time
ORDER BY time DESC, seq DESC LIMIT :limit
"""
# -- the job queue, the ledger and model calls of `remem.store.flows.jobs` (named) -------------
_READY = """(status = 'pending' AND (run_after IS NULL OR run_after <= :now))
   OR (status = 'running' AND lease_until < :now)"""
CLAIM_JOBS = f"""
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = :lease, updated_at = :now
WHERE id IN (SELECT id FROM jobs WHERE {_READY} ORDER BY id LIMIT :limit)
RETURNING id, tenant, event_id, strategy, attempts
"""
CLAIM_JOBS_OF = f"""
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = :lease, updated_at = :now
WHERE id IN (
    SELECT id FROM jobs WHERE ({_READY}) AND strategy IN ({{keys}}) ORDER BY id LIMIT :limit
)
RETURNING id, tenant, event_id, strategy, attempts
"""
HEARTBEAT = """
UPDATE jobs SET lease_until = :lease, updated_at = :now WHERE status = 'running' AND id IN ({keys})
"""
FAIL_JOB = """
UPDATE jobs SET status = CASE WHEN attempts >= :max_attempts THEN 'failed' ELSE 'pending' END,
    run_after = :retry_at, last_error = :error, lease_until = NULL, updated_at = :now
WHERE id = :job_id AND status = 'running'
RETURNING status
"""
DONE_JOBS = """
UPDATE jobs SET status = 'done', lease_until = NULL, run_after = NULL, updated_at = :at
WHERE +tenant = :tenant AND id IN ({keys})
"""
COUNT_PENDING = "SELECT count(*) AS n FROM jobs WHERE status IN ('pending', 'running')"
COUNT_PENDING_TENANT = """
SELECT count(*) AS n FROM jobs
WHERE tenant = :tenant AND status IN ('pending', 'running')
"""
JOB_INFO_COLUMNS = "id, event_id, strategy, status, attempts, last_error, run_after, updated_at"
LIST_JOBS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = :tenant AND id < :before
ORDER BY id DESC LIMIT :limit
"""
LIST_JOBS_STATUS = f"""
SELECT {JOB_INFO_COLUMNS} FROM jobs WHERE tenant = :tenant AND status = :status
AND id < :before ORDER BY id DESC LIMIT :limit
"""
REQUEUE_JOB = """
UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, lease_until = NULL,
    updated_at = :now
WHERE tenant = :tenant AND event_id = :event_id AND strategy = :strategy AND status != 'running'
"""
JOB_COUNTS = "SELECT status, count(*) AS n FROM jobs WHERE tenant = :tenant GROUP BY status"
# the jobs by strategy and status with the oldest one's creation (remem.telemetry.metrics)
JOB_GROUPS = """
SELECT strategy, status, count(*) AS n, min(created_at) AS oldest FROM jobs
WHERE tenant = :tenant GROUP BY strategy, status
"""
JOB_GROUPS_ALL = """
SELECT strategy, status, count(*) AS n, min(created_at) AS oldest FROM jobs
GROUP BY strategy, status
"""
# one actor's jobs: those of the actor's events (an actor-narrowed key sees no others)
JOB_COUNTS_ACTOR = """
SELECT j.status, count(*) AS n
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = :tenant AND e.actor = :actor GROUP BY j.status
"""
LIST_JOBS_ACTOR = """
SELECT j.id, j.event_id, j.strategy, j.status, j.attempts, j.last_error, j.run_after, j.updated_at
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = :tenant AND e.actor = :actor AND (:status IS NULL OR j.status = :status)
AND j.id < :before ORDER BY j.id DESC LIMIT :limit
"""
# one actor's backlog and its claim (a recall catching up, `remem.memory.catch_up`). The
# tenant's waiting jobs, at most :cap of them, by the jobs_tenant index (nothing else is
# read when none waits); when fewer than :cap wait, the actor's among them (each event by
# its key), else the actor's events (by events_thread) and their jobs (by their key)
TENANT_BACKLOG = """
SELECT count(*) AS n FROM (
    SELECT 1 FROM jobs WHERE tenant = :tenant AND status IN ('pending', 'running') LIMIT :cap
)
"""
_BACKLOG_COLUMNS = """coalesce(sum(CASE
        WHEN (j.status = 'pending' AND (j.run_after IS NULL OR j.run_after <= :now))
            OR (j.status = 'running' AND j.lease_until < :now) THEN 1 ELSE 0 END), 0) AS ready,
    count(*) AS n"""
ACTOR_BACKLOG = f"""
SELECT {_BACKLOG_COLUMNS}
FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
WHERE j.tenant = :tenant AND j.status IN ('pending', 'running') AND e.actor = :actor
"""
ACTOR_BACKLOG_BY_EVENTS = f"""
SELECT {_BACKLOG_COLUMNS}
FROM events e CROSS JOIN jobs j
WHERE e.tenant = :tenant AND e.actor = :actor
    AND j.tenant = e.tenant AND j.event_id = e.id AND j.status IN ('pending', 'running')
"""
CLAIM_ACTOR_JOBS = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = :lease, updated_at = :now
WHERE id IN (
    SELECT j.id FROM jobs j JOIN events e ON e.tenant = j.tenant AND e.id = j.event_id
    WHERE j.tenant = :tenant AND j.status IN ('pending', 'running') AND e.actor = :actor
        AND ((j.status = 'pending' AND (j.run_after IS NULL OR j.run_after <= :now))
            OR (j.status = 'running' AND j.lease_until < :now))
    ORDER BY j.id LIMIT :limit
)
RETURNING id, tenant, event_id, strategy, attempts
"""
RETRY_JOBS = """
UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, lease_until = NULL,
    updated_at = :now
WHERE tenant = :tenant AND status IN ({keys})
"""
# the request ledger: a claim is inserted first (the key makes it exclusive), an expired
# one is taken over, then the outcome replaces it
REQUEST_COLUMNS = "actor, request_id, operation, target, outcome, token, digest"
CLAIM_REQUEST = f"""
INSERT INTO api_requests
    (tenant, actor, request_id, operation, target, digest, token, lease_until, created_at)
VALUES (:tenant, :actor, :request_id, :operation, :target, :digest, :token, :until, :now)
ON CONFLICT DO NOTHING
RETURNING {REQUEST_COLUMNS}
"""
RETAKE_REQUEST = f"""
UPDATE api_requests SET operation = :operation, target = :target, digest = :digest,
    token = :token, lease_until = :until
WHERE tenant = :tenant AND actor = :actor AND request_id = :request_id AND outcome IS NULL
    AND lease_until < :now
RETURNING {REQUEST_COLUMNS}
"""
GET_REQUEST = f"""
SELECT {REQUEST_COLUMNS} FROM api_requests
WHERE tenant = :tenant AND actor = :actor AND request_id = :request_id
"""
FINISH_REQUEST = """
UPDATE api_requests SET outcome = :outcome, token = NULL, lease_until = NULL
WHERE tenant = :tenant AND actor = :actor AND request_id = :request_id AND token = :token
    AND outcome IS NULL
"""
RELEASE_REQUEST = """
DELETE FROM api_requests
WHERE tenant = :tenant AND actor = :actor AND request_id = :request_id AND token = :token
    AND outcome IS NULL
"""
REQUEST_FOR_TARGET = f"""
SELECT {REQUEST_COLUMNS} FROM api_requests
WHERE tenant = :tenant AND target = :target AND request_id = :request_id
    AND outcome IS NOT NULL
ORDER BY created_at LIMIT 1
"""
INSERT_LLM_CALL = """
INSERT INTO llm_calls (tenant, job_id, strategy, model, prompt_version, prompt_tokens,
    completion_tokens, seconds, ok, error, created_at)
VALUES (:tenant, :job_id, :strategy, :model, :prompt_version, :prompt_tokens,
    :completion_tokens, :seconds, :ok, :error, :at)
"""
LLM_USAGE = """
SELECT count(*) AS calls, coalesce(sum(1 - ok), 0) AS errors,
    coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens), 0) AS completion_tokens,
    coalesce(sum(seconds), 0) AS seconds,
    coalesce(sum(ok AND error IS NOT NULL), 0) AS calls_with_dropped_items
FROM llm_calls WHERE tenant = :tenant
"""
# API keys (`remem.store.flows.keys`, named): a key is found by the hash of its secret
KEY_COLUMNS = "id, tenant, actor, role, created_at, revoked_at, name"
INSERT_KEY = """
INSERT INTO api_keys (id, tenant, actor, role, key_hash, created_at, name)
VALUES (:id, :tenant, :actor, :role, :key_hash, :created_at, :name)
"""
KEY_BY_HASH = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = :key_hash AND revoked_at IS NULL
"""
LIST_KEYS = f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at, id"
LIST_TENANT_KEYS = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE tenant = :tenant ORDER BY created_at, id
"""
PAGE_KEYS = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE tenant = :tenant AND (:actor IS NULL OR actor = :actor)
AND (created_at > :after_at OR (created_at = :after_at AND id > :after_id))
ORDER BY created_at, id LIMIT :limit
"""
GET_KEY = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = :key_id"
GET_TENANT_KEY = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE id = :key_id AND tenant = :tenant
"""
REVOKE_KEY = """
UPDATE api_keys SET revoked_at = :at WHERE id = :key_id AND revoked_at IS NULL
"""
REVOKE_TENANT_KEY = """
UPDATE api_keys SET revoked_at = :at
WHERE id = :key_id AND tenant = :tenant AND revoked_at IS NULL
"""
PING = "SELECT 1"

# -- writing a batch (`remem.store.flows.writes`, named parameters) ---------------------------
INSERT_RECORD = """
INSERT INTO records (id, tenant, actor, namespace, kind, text, field, value, source_type,
    source_event_ids, strategy, extractor, authority, sensitivity, valid_from, valid_until,
    created_at, updated_at, status, supersedes, superseded_by, flags, metadata)
VALUES (:id, :tenant, :actor, :namespace, :kind, :text, :field, :value, :source_type,
    :source_event_ids, :strategy, :extractor, :authority, :sensitivity, :valid_from,
    :valid_until, :created_at, :updated_at, :status, :supersedes, :superseded_by, :flags,
    :metadata)
RETURNING rowid AS key
"""
INSERT_RECORD_FTS = "INSERT INTO records_fts (rowid, text, scope) VALUES (:key, :text, :scope)"
INSERT_RECORD_EVENT = """
INSERT INTO record_events (tenant, event_id, record_id) VALUES (:tenant, :event_id, :record_id)
ON CONFLICT DO NOTHING
"""
INSERT_VECTOR = """
INSERT OR REPLACE INTO record_vectors
    (record_rowid, id, tenant, actor, model, status, valid_from, valid_until, vec)
VALUES (:key, :id, :tenant, :actor, :model, :status, :valid_from, :valid_until, :vec)
"""
# the models whose vectors a tenant holds (schema 8; `remem.memory.embedder`)
NOTE_VECTOR_MODEL = """
INSERT INTO vector_models (tenant, model, dim) VALUES (:tenant, :model, :dim)
ON CONFLICT DO NOTHING
"""
VECTOR_MODELS = """
SELECT model, dim, fingerprint FROM vector_models WHERE tenant = :tenant ORDER BY model
"""
NOTE_FINGERPRINT = """
UPDATE vector_models SET fingerprint = :fingerprint
WHERE tenant = :tenant AND model = :model AND fingerprint IS NULL
RETURNING model
"""
CLOSE_VECTOR = """
UPDATE record_vectors SET status = :status, valid_until = COALESCE(:valid_until, valid_until)
WHERE record_rowid = :key
"""
RECORD_SOURCES = """
SELECT actor, source_event_ids FROM records WHERE +tenant = :tenant AND id = :record_id
"""
GROW_SOURCES = """
UPDATE records SET source_event_ids = :sources, updated_at = :at
WHERE +tenant = :tenant AND id = :record_id
"""
# `Write.fresh_since`, `Write.context`: SQLite's write lock (BEGIN IMMEDIATE) is one already
SCOPE_WRITE_LOCK = LOCK_EVENTS = ""
SAME_STATEMENT_SINCE = """SELECT id FROM records WHERE tenant = :tenant AND actor = :actor
  AND status = 'active' AND valid_from >= :since AND text = :text AND kind = :kind
  AND field IS :field AND namespace IS :namespace LIMIT 20"""
CLOSE_RECORD = """
UPDATE records SET status = :status, valid_until = COALESCE(:valid_until, valid_until),
    superseded_by = COALESCE(:superseded_by, superseded_by), updated_at = :at
WHERE +tenant = :tenant AND id = :record_id AND (status = 'active' OR NOT :active_only)
RETURNING rowid AS key, actor
"""
INSERT_HISTORY = """
INSERT INTO history (tenant, record_id, action, at, text, status, related_id, reason, by_whom)
VALUES (:tenant, :record_id, :action, :at, :text, :status, :related_id, :reason, :by_whom)
"""
# a scope changed (`remem.store.sqlite.search` bumps it too, for event vectors)
BUMP_SCOPE = """
INSERT INTO scope_versions (tenant, actor, version) VALUES (:tenant, :actor, 1)
ON CONFLICT (tenant, actor) DO UPDATE SET version = version + 1
"""
# the jobs a step came from (the write lock is held: nobody deletes them meanwhile)
LOCK_JOBS = "SELECT id FROM jobs WHERE +tenant = :tenant AND id IN ({keys})"
# what a tombstone covers (`remem.store.flows.erasure.covered`)
EVENT_TOMBSTONED = """
SELECT 1 FROM tombstones WHERE tenant = :tenant AND kind = 'event' AND key IN ({keys}) LIMIT 1
"""
ACTOR_ERASED_AT = """
SELECT created_at FROM tombstones WHERE tenant = :tenant AND kind = 'actor' AND key = :actor
"""
COUNT_STORED_EVENTS = """
SELECT count(DISTINCT id) AS n FROM events
WHERE tenant = :tenant AND actor = :actor AND id IN ({keys})
"""
# Lookups by record id write `+tenant` so the planner takes the unique id
# index: with many ids it otherwise prefers a tenant index and scans the tenant.
GET_RECORD = "SELECT * FROM records WHERE +tenant = :tenant AND id = :record_id"
GET_RECORDS = "SELECT * FROM records WHERE +tenant = :tenant AND id IN ({keys})"
BY_FIELD_PREFIX = """
SELECT * FROM records WHERE tenant = :tenant AND actor = :actor AND field IS NOT NULL
    AND substr(field, 1, :n) = :prefix AND status IN ('active', 'invalid')
    AND (:namespace IS NULL OR namespace LIKE :namespace ESCAPE '\\')
    AND (:known_at IS NULL OR created_at <= :known_at)
    AND (:valid_at IS NULL OR valid_from <= :valid_at) AND (NOT :current
        OR (status = 'active' AND (valid_until IS NULL OR valid_until > :valid_at)))
ORDER BY valid_from DESC, rowid DESC LIMIT :limit
"""
HISTORY = "SELECT * FROM history WHERE tenant = :tenant AND record_id = :record_id ORDER BY id"

SEARCH_EVENTS = """
SELECT e.id, bm25(events_fts) AS rank FROM events_fts JOIN events e ON e.seq = events_fts.rowid
WHERE events_fts MATCH :match AND events_fts.rowid >= :floor
    AND e.tenant = :tenant AND e.actor = :actor
ORDER BY rank LIMIT :limit
"""
SCOPE_VERSION = "SELECT version FROM scope_versions WHERE tenant = :tenant AND actor = :actor"
DATA_VERSION = "PRAGMA data_version"  # moves when another connection commits
NEWEST_RECORD_VECTOR = "SELECT coalesce(max(record_rowid), 0) FROM record_vectors"
# the scopes most record vectors were added to after row :after (on the scope index alone)
FILLED_SCOPES = """
SELECT tenant, actor FROM record_vectors INDEXED BY record_vectors_scope
WHERE record_rowid > :after GROUP BY tenant, actor HAVING count(*) >= :least
ORDER BY count(*) DESC LIMIT :limit
"""
VECTORS_FOR = """
SELECT r.id, v.vec FROM record_vectors v JOIN records r ON r.rowid = v.record_rowid
WHERE +r.tenant = :tenant AND v.model = :model AND r.id IN ({keys})
"""

DELETE_VECTORS = "DELETE FROM record_vectors WHERE record_rowid IN ({keys})"
DELETE_RECORDS_FTS = "DELETE FROM records_fts WHERE rowid IN ({keys})"
DELETE_RECORDS = "DELETE FROM records WHERE rowid IN ({keys})"
# a second erasure of the actor moves its tombstone's time to the newest one
HISTORY_WITH_TEXT = """
SELECT 1 FROM history
WHERE tenant = :tenant AND record_id = :record_id
    AND (text IS NOT NULL OR (reason <> '' AND action <> 'DELETE'))
"""
ACTOR_EVENT_SEQS = "SELECT seq FROM events WHERE tenant = :tenant AND actor = :actor"
# copies the WAL into the file and truncates it; waits for readers (busy_timeout)
WAL_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"
DELETE_EVENTS_FTS = "DELETE FROM events_fts WHERE rowid IN ({keys})"
DELETE_ACTOR_EVENTS = "DELETE FROM events WHERE tenant = :tenant AND actor = :actor"

STATS = {
    "events": "SELECT count(*) FROM events",
    "records": "SELECT count(*) FROM records",
    "active_records": "SELECT count(*) FROM records WHERE status = 'active'",
    "vectors": "SELECT count(*) FROM record_vectors",
    "jobs_pending": "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')",
    "jobs_failed": "SELECT count(*) FROM jobs WHERE status = 'failed'",
}

ERASE_EVENT_TEXT = """
UPDATE events SET text = '', metadata = :metadata
WHERE tenant = :tenant AND id = :event_id
"""
EVENT_SEQ = "SELECT seq FROM events WHERE tenant = :tenant AND id = :event_id"
EVENTS_WITH_TEXT = """
SELECT count(*) FROM events
WHERE tenant = :tenant AND text != '' AND id IN ({keys})
"""
LIST_DELETIONS = """
SELECT * FROM deletions WHERE tenant = :tenant AND id < :before ORDER BY id DESC LIMIT :limit
"""

INSERT_EVENT_VECTOR = """
INSERT OR REPLACE INTO event_vectors (event_seq, id, tenant, actor, model, time, vec)
SELECT seq, id, tenant, actor, :model, :time, :vec FROM events
WHERE tenant = :tenant AND id = :event_id AND text != ''  -- none for an erased text
"""
DELETE_EVENT_VECTOR = "DELETE FROM event_vectors WHERE event_seq = :seq"
RECORD_STATUS_BY_EVENT = """
SELECT re.event_id, r.status, r.id AS record_id FROM record_events re
JOIN records r ON r.id = re.record_id
WHERE re.tenant = :tenant AND re.event_id IN ({keys}) AND r.kind <> 'summary'
"""
EVENT_PLACES = """
SELECT id, actor, session, time, seq FROM events
WHERE tenant = :tenant AND id IN ({keys})
"""
# one event's neighbours; `{i}` names its parameters (id, actor, session, time, seq) apart
# from the other events' in one statement; `tenant` and `reach` are shared
_NEAR_ONE = """
SELECT * FROM (
    SELECT :id{i} AS near_of, -1 AS side, * FROM events
    WHERE tenant = :tenant AND actor = :actor{i} AND session = :session{i}
        AND (time < :time{i} OR (time = :time{i} AND seq < :seq{i}))
    ORDER BY time DESC, seq DESC LIMIT :reach
) UNION ALL SELECT * FROM (
    SELECT :id{i} AS near_of, 1 AS side, * FROM events
    WHERE tenant = :tenant AND actor = :actor{i} AND session = :session{i}
        AND (time > :time{i} OR (time = :time{i} AND seq > :seq{i}))
    ORDER BY time, seq LIMIT :reach
)"""


@functools.cache
def events_near(count: int) -> str:
    """The events around `count` events, one UNION ALL part per event and side, with named
    parameters: `tenant`, `reach`, and per event i `id{i}`, `actor{i}`, `session{i}`,
    `time{i}`, `seq{i}` (see `events_near_params`)."""
    return "\nUNION ALL\n".join(_NEAR_ONE.format(i=i) for i in range(count))


def events_near_params(
    tenant: str, reach: int, places: Sequence[Any], count: int = 0
) -> dict[str, Any]:
    """The parameters of `events_near(max(count, len(places)))` for these rows of
    `EVENT_PLACES`; the parts past them match nothing (NULL actors)."""
    params: dict[str, Any] = {"tenant": tenant, "reach": reach}
    for i in range(max(count, len(places))):
        for column in ("id", "actor", "session", "time", "seq"):
            params[f"{column}{i}"] = places[i][column] if i < len(places) else None
    return params


EVENT_VECTORS_FOR = "SELECT count(*) FROM event_vectors WHERE tenant = :tenant AND id IN ({keys})"

# thread state's tables (`remem.thread`): erased and counted with the rest of an actor
FORGET_CHECKPOINTS = "DELETE FROM checkpoints WHERE tenant = :tenant AND actor = :actor"
FORGET_TOOL_CALLS = "DELETE FROM tool_calls WHERE tenant = :tenant AND actor = :actor"
COUNT_ACTOR_CHECKPOINTS = """
SELECT count(*) AS n FROM checkpoints WHERE tenant = :tenant AND actor = :actor
"""
COUNT_ACTOR_TOOL_CALLS = """
SELECT count(*) AS n FROM tool_calls WHERE tenant = :tenant AND actor = :actor
"""

# -- the erasure flows of `remem.store.flows.erasure` (named parameters) --------------------------

RECORD_FOR_ERASURE = """
SELECT rowid AS key, id, actor, kind FROM records
WHERE +tenant = :tenant AND id = :record_id
"""
RECORDS_OF_ACTOR = """
SELECT rowid AS key, id, actor, kind FROM records
WHERE tenant = :tenant AND actor = :actor
"""
FORGET_ACTOR_JOBS = """
DELETE FROM jobs WHERE tenant = :tenant
AND event_id IN (SELECT id FROM events WHERE tenant = :tenant AND actor = :actor)
"""
FORGET_ACTOR_EVENT_VECTORS = "DELETE FROM event_vectors WHERE tenant = :tenant AND actor = :actor"
LIFT_EVENT_TOMBSTONES = """
DELETE FROM tombstones WHERE tenant = :tenant AND kind = 'event'
AND key IN (SELECT id FROM events WHERE tenant = :tenant AND actor = :actor)
"""
FORGET_ACTOR_REQUESTS = "DELETE FROM api_requests WHERE tenant = :tenant AND actor = :actor"
ACTOR_TOMBSTONE_AT = """
INSERT INTO tombstones (tenant, kind, key, created_at) VALUES (:tenant, 'actor', :actor, :at)
ON CONFLICT DO UPDATE SET created_at = excluded.created_at
"""
TOMBSTONE_KEY = """
INSERT INTO tombstones (tenant, kind, key, created_at) VALUES (:tenant, :kind, :key, :at)
ON CONFLICT DO NOTHING
"""
SOURCE_EVENT_IDS = """
SELECT event_id FROM record_events
WHERE tenant = :tenant AND record_id = :record_id
"""
FORGET_RECORD_LINKS = "DELETE FROM record_events WHERE tenant = :tenant AND record_id IN ({keys})"
FORGET_HISTORY_TEXT = """
UPDATE history SET text = NULL, reason = ''  -- a reason may quote the content
WHERE tenant = :tenant AND record_id IN ({keys})
"""
HISTORY_DELETED = """
INSERT INTO history (tenant, record_id, action, at, text, status, related_id, reason, by_whom)
VALUES (:tenant, :record_id, 'DELETE', :at, NULL, 'deleted', NULL, 'forget', '')
"""
ALL_TOMBSTONES = """
SELECT tenant, kind, key, created_at FROM tombstones ORDER BY created_at, tenant, kind, key
"""
LOG_DELETION = """
INSERT INTO deletions (tenant, target, key, status, attempts, result, last_error,
    created_at, updated_at, actor, requested_by, requester, reason)
VALUES (:tenant, :target, :key, :status, :attempts, :result, :error, :at, :at, :actor,
    :requested_by, :requester, :reason)
RETURNING id
"""
