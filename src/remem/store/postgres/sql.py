"""Named SQL for the PostgreSQL store, built here and run in `remem.store.postgres.store`
(with the migration scripts of `postgres/migrations`, read and split here).

Every statement that reads tenant-owned rows names the tenant itself; row-level
security (see `postgres/migrations/0001_initial.sql`) is the second lock, not
the first. Parameters are named (`%(name)s`); lists travel as arrays
(`= ANY(%(keys)s::text[])`), never as spliced text.
"""

from __future__ import annotations

import functools
from typing import Any

from remem.store.postgres.field_sql import by_field as by_field  # re-exported, as on SQLite

# the job queue's and the nearest-vector statements, kept apart, re-exported
from remem.store.postgres.job_sql import *  # noqa: F403
from remem.store.postgres.scope import scope_where
from remem.store.postgres.vectors.sql import *  # noqa: F403
from remem.store.roles import Scope
from remem.store.text import like_prefix as like_prefix  # re-exported: once, there
from remem.store.text import read_migrations
from remem.store.text import split_sql as split_sql
from remem.store.text import words as words

TEXT_CONFIG = "english"  # the text search configuration of the tsvector columns


def migrations() -> list[tuple[int, str]]:
    """The numbered scripts of `postgres/migrations`, in order."""
    return read_migrations("postgres/migrations")


def list_records(
    scope: Scope, paged: bool = False, after: bool = False, fielded: bool = False
) -> tuple[str, dict[str, Any]]:
    """A scope's records of the statuses `keys` (an array), newest first, up to `limit`;
    `paged`: in the order of their unique key (valid_from, id), `after` it (`after_at`,
    `after_id`); `fielded`: only those about a field."""
    where, params = scope_where(scope)
    if fielded:
        where += " AND field IS NOT NULL"
    order = "id" if paged else "seq"
    keyset = "AND (valid_from, id) < (%(after_at)s, %(after_id)s) " if after else ""
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM records WHERE {where} AND status = ANY(%(keys)s::text[]) "
        f"{keyset}ORDER BY valid_from DESC, {order} DESC LIMIT %(limit)s"
    )
    return sql, params


# ts_rank scores at most this many of the newest matches (as BM25 does on SQLite), so
# a word found in tens of thousands of a subject's records costs a bounded amount
LEXICAL_WINDOW = 1000


def _lexical(table: str, terms: str, key: str, where: str, window: int = LEXICAL_WINDOW) -> str:
    """The newest `window` rows of `table` holding a query term, ranked by ts_rank;
    named parameters `words` (the query's), `tenant`, `actor`, `limit` and those of `where`.

    The terms table is read by (tenant, actor, term) under its btree, one query
    term at a time, newest first: the only index that row-level security lets
    the planner use for words (see `postgres/migrations/0004_terms.sql`). Its
    rows carry each term's ts_rank, so ts_rank of the OR of the query's terms is
    summed there, for all the window's matches (a materialized step). Then the
    matches are read from `table` best first, one by primary key at a time (a
    LATERAL subquery with its own LIMIT, so the planner cannot turn it into a
    join), and the scope and status conditions `where` filter each: the walk stops
    at `limit` rows kept, about `limit` lookups where joining every match cost up
    to `LEXICAL_WINDOW` (at 1,000,000 records, a common word's 1,000 matches read
    about 4,000 buffers). Were the conditions in a join, the planner could walk the
    scope's own index instead, row by row for each match, whenever its statistics
    say the scope is small (52 ms instead of 2 on 2,000 rows just written).
    """
    return f"""
WITH w AS MATERIALIZED (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('{TEXT_CONFIG}', %(words)s))) AS term
),
m AS MATERIALIZED (
    SELECT t.{key}, t.seq, sum(t.weight) / (SELECT count(*) FROM w) AS score
    FROM w, LATERAL (
        SELECT {key}, seq, weight FROM {terms}
        WHERE tenant = %(tenant)s AND actor = %(actor)s AND term = w.term
        ORDER BY seq DESC LIMIT {window:d}
    ) AS t
    GROUP BY t.{key}, t.seq ORDER BY t.seq DESC LIMIT {window:d}
)
SELECT r.id, m.score FROM (SELECT * FROM m ORDER BY score DESC, seq DESC) AS m,
LATERAL (
    SELECT r.id FROM {table} r WHERE r.tenant = %(tenant)s AND r.id = m.{key} AND {where}
    LIMIT 1
) AS r
ORDER BY m.score DESC, m.seq DESC LIMIT %(limit)s
"""


def search_records(
    scope: Scope, query: str, limit: int, window: int = LEXICAL_WINDOW
) -> tuple[str, dict[str, Any]] | None:
    """ts_rank over one scope's `window` newest matching active and invalid records, or
    None for a query without words."""
    found = words(query)
    if not found:
        return None
    where, params = searched_where(scope)
    sql = _lexical("records", "record_terms", "record_id", where, window)
    return sql, {**params, "words": " ".join(found), "limit": limit}


def search_events(scope: Scope, query: str, limit: int) -> tuple[str, dict[str, Any]] | None:
    """ts_rank over one actor's newest matching raw events, or None for a query without
    words."""
    found = words(query)
    if not found:
        return None
    where = "r.tenant = %(tenant)s AND r.actor = %(actor)s"
    sql = _lexical("events", "event_terms", "event_id", where)
    words_ = " ".join(found)
    return sql, {"tenant": scope.tenant, "actor": scope.actor, "words": words_, "limit": limit}


def searched_where(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The condition `search_records` puts on its matches (active or invalid, in the
    scope), on records `r`, with its named parameters."""
    where, params = scope_where(scope, "r")
    return where + " AND r.status IN ('active', 'invalid')", params


SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
# one migrator at a time across every process sharing the database
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(1919249773)"  # 0x72656D6D, "remm"
SCHEMA_VERSION = "SELECT coalesce(max(version), 0) FROM schema_version"
SCHEMA_EXISTS = "SELECT to_regclass('schema_version') IS NOT NULL AS found"
SET_VERSION = "INSERT INTO schema_version (version) VALUES (%(version)s)"
SET_TENANT = "SELECT set_config('remem.tenant', %(tenant)s, true)"
SET_ALL_TENANTS = "SELECT set_config('remem.all_tenants', 'on', true)"
# Whether row-level security binds the role remem connected as: not for a superuser
# or a BYPASSRLS role, and not on a tenant table that has it off, or that this role
# owns (or has the privileges of its owner) without FORCE ROW LEVEL SECURITY.
ROW_SECURITY = """
SELECT r.rolsuper, r.rolbypassrls,
       coalesce((SELECT array_agg(c.relname::text ORDER BY c.relname)
                   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
                    AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                                   AND a.attname = 'tenant' AND NOT a.attisdropped)
                    AND (NOT c.relrowsecurity
                         OR (pg_has_role(c.relowner, 'USAGE') AND NOT c.relforcerowsecurity))),
                '{}') AS open_tables
  FROM pg_roles r WHERE r.rolname = current_user
"""

RECORD_COLUMNS = (
    "id, tenant, actor, namespace, kind, text, field, value, source_type, source_event_ids, "
    "strategy, extractor, authority, sensitivity, valid_from, valid_until, created_at, "
    "updated_at, status, supersedes, superseded_by, flags, metadata"
)
EVENT_COLUMNS = "id, tenant, actor, session, role, text, time, metadata, received_at"

# -- adding events (`remem.store.flows.events`, named parameters) --------------------------------
EVENT_FIELDS: tuple[str, ...] = tuple(
    "tenant id actor session role text time metadata received_at".split()
)
EVENT_ROWS = 100  # events to one INSERT


@functools.cache
def insert_events(rows: int) -> str:
    """One INSERT of `rows` events, each event's `EVENT_FIELDS` in turn (positional);
    RETURNING the key (the id) and id of each that was new (in no promised order)."""
    # compact, so that psycopg caches its parse of the statement (up to 4,096 characters)
    values = ", ".join(["(%s,%s,%s,%s,%s,%s,%s,%s,%s)"] * rows)
    return (
        f"INSERT INTO events ({', '.join(EVENT_FIELDS)}) VALUES {values} "
        "ON CONFLICT (tenant, id) DO NOTHING RETURNING id AS key, id"
    )


INSERT_JOB = """
INSERT INTO jobs (tenant, event_id, strategy, created_at, updated_at)
VALUES (%(tenant)s, %(event_id)s, %(strategy)s, %(at)s, %(at)s)
ON CONFLICT (tenant, event_id, strategy) DO NOTHING
"""
EVENT_IDENTITIES = """
SELECT id, actor, session, role, text FROM events
WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])
"""
# the words of just-inserted events (their tsv lexemes), for `search_events`
INSERT_EVENT_TERMS = """
INSERT INTO event_terms (tenant, actor, term, seq, event_id, weight)
SELECT e.tenant, e.actor, t.term, e.seq, e.id, remem_term_rank(e.tsv, t.term)
FROM events e, unnest(tsvector_to_array(e.tsv)) AS t(term)
WHERE e.tenant = %(tenant)s AND e.id = ANY(%(keys)s::text[])
"""
# -- reads by key or scope (`remem.store.flows.records`, `events`; named parameters) -----
LIST_EVENTS_ACTOR = f"""
SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %(tenant)s AND actor = %(actor)s
ORDER BY time, seq LIMIT %(limit)s
"""
LIST_EVENTS_SESSION = f"""
SELECT {EVENT_COLUMNS} FROM events
WHERE tenant = %(tenant)s AND actor = %(actor)s AND session = %(session)s
ORDER BY time, seq LIMIT %(limit)s
"""
# A page of events ends at `limit` rows or once the text and metadata before a row
# reach `bytes`: each row carries the bytes of the rows before it (`bytes_before`), and
# the first row past the bound is read too (its `bytes_before_last` is still under
# it), so the caller knows that more follow (`remem.store.flows.events.Events.events_page`).
_EVENT_SIZE = "octet_length(text) + octet_length(metadata)"
_EVENTS_AFTER = f"""
SELECT * FROM (
    SELECT {EVENT_COLUMNS}, seq,
        coalesce(sum({_EVENT_SIZE}) OVER (ORDER BY time, seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS bytes_before,
        coalesce(sum({_EVENT_SIZE}) OVER (ORDER BY time, seq
            ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS bytes_before_last
    FROM events WHERE tenant = %(tenant)s AND actor = %(actor)s {{session}}
        AND time >= %(time)s AND (time > %(time)s OR seq > %(seq)s)
    ORDER BY time, seq LIMIT %(limit)s
) page WHERE bytes_before_last < %(bytes)s ORDER BY time, seq
"""
EVENTS_AFTER_ACTOR = _EVENTS_AFTER.format(session="")
EVENTS_AFTER_SESSION = _EVENTS_AFTER.format(session="AND session = %(session)s")
GET_EVENTS = f"""
SELECT {EVENT_COLUMNS} FROM events WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])
ORDER BY seq
"""
SESSION_CONTEXT = f"""
SELECT {EVENT_COLUMNS} FROM events
WHERE tenant = %(tenant)s AND actor = %(actor)s AND session = %(session)s AND time < %(time)s
ORDER BY time DESC, seq DESC LIMIT %(limit)s
"""
# API keys (`remem.store.flows.keys`, `postgres/migrations/0006_keys.sql`, named): a key is
# found by the hash of its secret across tenants; every other statement names its tenant
KEY_COLUMNS = "id, tenant, actor, role, created_at, revoked_at, name"
INSERT_KEY = """
INSERT INTO api_keys (id, tenant, actor, role, key_hash, created_at, name)
VALUES (%(id)s, %(tenant)s, %(actor)s, %(role)s, %(key_hash)s, %(created_at)s, %(name)s)
"""
KEY_BY_HASH = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = %(key_hash)s AND revoked_at IS NULL
"""
LIST_KEYS = f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at, id"
LIST_TENANT_KEYS = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE tenant = %(tenant)s ORDER BY created_at, id
"""
PAGE_KEYS = f"""
SELECT {KEY_COLUMNS} FROM api_keys
WHERE tenant = %(tenant)s AND (%(actor)s::text IS NULL OR actor = %(actor)s)
    AND (created_at, id) > (%(after_at)s, %(after_id)s)
ORDER BY created_at, id LIMIT %(limit)s
"""
GET_KEY = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %(key_id)s"
GET_TENANT_KEY = f"""
SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %(key_id)s AND tenant = %(tenant)s
"""
REVOKE_KEY = """
UPDATE api_keys SET revoked_at = %(at)s WHERE id = %(key_id)s AND revoked_at IS NULL
"""
REVOKE_TENANT_KEY = """
UPDATE api_keys SET revoked_at = %(at)s
WHERE id = %(key_id)s AND tenant = %(tenant)s AND revoked_at IS NULL
"""
PING = "SELECT 1"
# -- writing a batch (`remem.store.flows.writes`, named parameters) ---------------------------
INSERT_RECORD = f"""
INSERT INTO records ({RECORD_COLUMNS})
VALUES ({", ".join(f"%({c.strip()})s" for c in RECORD_COLUMNS.split(","))})
RETURNING id AS key
"""
# the words of just-inserted records (their tsv lexemes)
INSERT_RECORD_TERMS = """
INSERT INTO record_terms (tenant, actor, term, seq, record_id, weight)
SELECT r.tenant, r.actor, t.term, r.seq, r.id, remem_term_rank(r.tsv, t.term)
FROM records r, unnest(tsvector_to_array(r.tsv)) AS t(term)
WHERE r.tenant = %(tenant)s AND r.id = ANY(%(keys)s::text[])
"""
INSERT_RECORD_EVENT = """
INSERT INTO record_events (tenant, event_id, record_id)
VALUES (%(tenant)s, %(event_id)s, %(record_id)s) ON CONFLICT DO NOTHING
"""
INSERT_VECTOR = """
INSERT INTO record_vectors (tenant, record_id, actor, model, vec)
VALUES (%(tenant)s, %(id)s, %(actor)s, %(model)s, %(vec)s::vector)
ON CONFLICT (tenant, record_id) DO UPDATE SET model = excluded.model, vec = excluded.vec
"""
# the models whose vectors a tenant holds (schema 12; `remem.memory.embedder`)
NOTE_VECTOR_MODEL = """
INSERT INTO vector_models (tenant, model, dim) VALUES (%(tenant)s, %(model)s, %(dim)s)
ON CONFLICT DO NOTHING
"""
VECTOR_MODELS = """
SELECT model, dim, fingerprint FROM vector_models WHERE tenant = %(tenant)s ORDER BY model
"""
# a write of vectors reads these first, under a shared lock of the tenant that a reindex's
# switch and cancel take exclusively (`remem.store.flows.vector_fit`; "remn")
VECTOR_FIT_LOCK = "SELECT pg_advisory_xact_lock_shared(1919249775, hashtext(%(tenant)s))"
VECTOR_INDEX_CHANGE_LOCK = "SELECT pg_advisory_xact_lock(1919249775, hashtext(%(tenant)s))"
VECTOR_FIT = """
SELECT 0 AS pending, model, dim FROM vector_models WHERE tenant = %(tenant)s
UNION ALL SELECT 1 AS pending, model, dim FROM reindexes WHERE tenant = %(tenant)s
"""
# a tenant holding no vectors yet: its first writers take turns (the shared lock does not
# order them), and `VECTOR_FIT` is read again, seeing the model of any who went first
VECTOR_FIRST_LOCK = """
SELECT pg_advisory_xact_lock(1919249776, hashtext(%(tenant)s))
WHERE NOT EXISTS (SELECT 1 FROM vector_models WHERE tenant = %(tenant)s)
"""
NOTE_FINGERPRINT = """
UPDATE vector_models SET fingerprint = %(fingerprint)s
WHERE tenant = %(tenant)s AND model = %(model)s AND fingerprint IS NULL
RETURNING model
"""
RECORD_SOURCES = """
SELECT actor, source_event_ids FROM records WHERE tenant = %(tenant)s AND id = %(record_id)s
FOR UPDATE
"""
GROW_SOURCES = """
UPDATE records SET source_event_ids = %(sources)s::text[], updated_at = %(at)s
WHERE tenant = %(tenant)s AND id = %(record_id)s
"""
# `Write.fresh_since`: one writer of an actor's records at a time, then what it checks
SCOPE_WRITE_LOCK = """
SELECT pg_advisory_xact_lock(1919249775, hashtext(%(tenant)s || '/' || %(actor)s))
"""
SAME_STATEMENT_SINCE = """
SELECT id FROM records
WHERE tenant = %(tenant)s AND actor = %(actor)s AND status = 'active' AND valid_from >= %(since)s
  AND text = %(text)s AND kind = %(kind)s AND field IS NOT DISTINCT FROM %(field)s
  AND namespace IS NOT DISTINCT FROM %(namespace)s
LIMIT 20
"""
CLOSE_RECORD = """
UPDATE records SET status = %(status)s, valid_until = COALESCE(%(valid_until)s, valid_until),
    superseded_by = COALESCE(%(superseded_by)s, superseded_by), updated_at = %(at)s
WHERE tenant = %(tenant)s AND id = %(record_id)s AND (status = 'active' OR NOT %(active_only)s)
RETURNING id AS key, actor
"""
INSERT_HISTORY = """
INSERT INTO history (tenant, record_id, action, at, text, status, related_id, reason, by_whom)
VALUES (%(tenant)s, %(record_id)s, %(action)s, %(at)s, %(text)s, %(status)s, %(related_id)s,
    %(reason)s, %(by_whom)s)
"""
# the jobs of a consolidation step, locked: an erasure deleting them waits, or has won
LOCK_JOBS = """
SELECT id FROM jobs WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::bigint[]) FOR UPDATE
"""
# the events an extraction's write read (`Write.context`), shared-locked: an erasure
# emptying their texts waits for the write, or has committed before the write reads
# what it covers
LOCK_EVENTS = """
SELECT 1 FROM events WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[]) FOR SHARE
"""
# what a tombstone covers (`remem.store.flows.erasure.covered`)
EVENT_TOMBSTONED = """
SELECT 1 FROM tombstones
WHERE tenant = %(tenant)s AND kind = 'event' AND key = ANY(%(keys)s::text[]) LIMIT 1
"""
ACTOR_ERASED_AT = """
SELECT created_at FROM tombstones WHERE tenant = %(tenant)s AND kind = 'actor' AND key = %(actor)s
"""
COUNT_STORED_EVENTS = """
SELECT count(DISTINCT id) AS n FROM events
WHERE tenant = %(tenant)s AND actor = %(actor)s AND id = ANY(%(keys)s::text[])
"""
DELETE_EVENT_TERMS = """
DELETE FROM event_terms
WHERE tenant = %(tenant)s AND event_id = ANY(%(keys)s::text[])
"""
DELETE_ACTOR_TERMS = [
    "DELETE FROM record_terms WHERE tenant = %(tenant)s AND actor = %(actor)s",
    "DELETE FROM event_terms WHERE tenant = %(tenant)s AND actor = %(actor)s",
]
COUNT_RECORD_TERMS = """
SELECT count(*) FROM record_terms
WHERE tenant = %(tenant)s AND record_id = %(record_id)s
"""
COUNT_EVENT_TERMS = """
SELECT count(*) FROM event_terms
WHERE tenant = %(tenant)s AND event_id = ANY(%(keys)s::text[])
"""
GET_RECORD = (
    f"SELECT {RECORD_COLUMNS} FROM records WHERE tenant = %(tenant)s AND id = %(record_id)s"
)
GET_RECORDS = f"""
SELECT {RECORD_COLUMNS} FROM records WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])
ORDER BY seq
"""
# The same, each with its order and its scope's version, read in one statement (one
# snapshot): what `postgres.upkeep.HeldRecords` keeps them with.
GET_RECORDS_HELD = f"""
SELECT r.*, coalesce((SELECT v.version FROM scope_versions v
                      WHERE v.tenant = r.tenant AND v.actor = r.actor), 0) AS scope_version
FROM (SELECT {RECORD_COLUMNS}, seq FROM records
      WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])) AS r
ORDER BY r.seq
"""
SCOPE_VERSIONS = """
SELECT actor, version FROM scope_versions
WHERE tenant = %(tenant)s AND actor = ANY(%(actors)s::text[])
"""
BY_FIELD_PREFIX = f"""
SELECT {RECORD_COLUMNS} FROM records
WHERE tenant = %(tenant)s AND actor = %(actor)s AND field IS NOT NULL
    AND left(field, %(n)s) = %(prefix)s AND status IN ('active', 'invalid')
    AND (%(namespace)s::text IS NULL OR namespace LIKE %(namespace)s ESCAPE '\\')
    AND (%(known_at)s::timestamptz IS NULL OR created_at <= %(known_at)s)
    AND (%(valid_at)s::timestamptz IS NULL OR valid_from <= %(valid_at)s) AND (NOT %(current)s
        OR (status = 'active' AND (valid_until IS NULL OR valid_until > %(valid_at)s)))
ORDER BY valid_from DESC, seq DESC LIMIT %(limit)s
"""
RECORD_STATUS_BY_EVENT = """
SELECT re.event_id, r.status, r.id AS record_id FROM record_events re
JOIN records r ON r.tenant = re.tenant AND r.id = re.record_id
WHERE re.tenant = %(tenant)s AND re.event_id = ANY(%(keys)s::text[]) AND r.kind <> 'summary'
"""
# an event whose text an erasure emptied takes no vector: one made from the text read
# before it (a job or a backfill racing the erasure) would outlive it. FOR SHARE waits
# for an erasure emptying the text to commit, and holds one off until this commits
INSERT_EVENT_VECTOR = """
INSERT INTO event_vectors (tenant, event_id, actor, model, time, vec)
SELECT tenant, id, actor, %(model)s, time, %(vec)s::vector FROM events
WHERE tenant = %(tenant)s AND id = %(event_id)s AND text != '' FOR SHARE
ON CONFLICT (tenant, event_id) DO UPDATE SET model = excluded.model, vec = excluded.vec
"""
# exact cosine search inside one actor's events; then (query, tenant, actor, model,
# dimension, at, query, limit)
_NEAR_COLUMNS = ", ".join(f"e.{c.strip()}" for c in EVENT_COLUMNS.split(","))
# tenant, reach, keys (event ids): up to `reach` events either side of each event in its
# session, each row naming the event it is near (near_of) and the side (-1 before)
EVENTS_NEAR = f"""
SELECT t.id AS near_of, n.* FROM events t CROSS JOIN LATERAL (
    (SELECT -1 AS side, e.seq, {_NEAR_COLUMNS}
     FROM events e WHERE e.tenant = t.tenant AND e.actor = t.actor AND e.session = t.session
        AND (e.time, e.seq) < (t.time, t.seq) ORDER BY e.time DESC, e.seq DESC LIMIT %(reach)s)
    UNION ALL
    (SELECT 1 AS side, e.seq, {_NEAR_COLUMNS}
     FROM events e WHERE e.tenant = t.tenant AND e.actor = t.actor AND e.session = t.session
        AND (e.time, e.seq) > (t.time, t.seq) ORDER BY e.time, e.seq LIMIT %(reach)s)
) n
WHERE t.tenant = %(tenant)s AND t.id = ANY(%(keys)s::text[])
"""
DELETE_EVENT_VECTORS = """
DELETE FROM event_vectors
WHERE tenant = %(tenant)s AND event_id = ANY(%(keys)s::text[])
"""
COUNT_EVENT_VECTORS = """
SELECT count(*) FROM event_vectors
WHERE tenant = %(tenant)s AND event_id = ANY(%(keys)s::text[])
"""
HISTORY = """
SELECT record_id, action, at, text, status, related_id, reason, by_whom FROM history
WHERE tenant = %(tenant)s AND record_id = %(record_id)s ORDER BY id
"""
# in pgvector's binary form (`rows.vector_from`): its text form took 4.6 ms to parse for
# a recall's 80 candidates, the binary 0.08
VECTORS_FOR = """
SELECT record_id, vector_send(vec) AS vec FROM record_vectors
WHERE tenant = %(tenant)s AND model = %(model)s AND record_id = ANY(%(keys)s::text[])
"""

DELETE_VECTORS = """
DELETE FROM record_vectors
WHERE tenant = %(tenant)s AND record_id = ANY(%(keys)s::text[])
"""
# the tsvector lives in the row, so deleting a row deletes its full-text entry
DELETE_RECORDS = """
DELETE FROM records WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])
RETURNING (tsv IS NOT NULL) AS indexed
"""
# a second erasure of the actor moves its tombstone's time to the newest one
# every table an erasure deletes or rewrites rows of (VACUUMed after it on request)
ERASED_TABLES = (
    "records", "record_terms", "record_vectors", "record_events", "history",
    "events", "event_terms", "event_vectors", "jobs", "api_requests",
    "checkpoints", "tool_calls",
)  # fmt: skip
HISTORY_WITH_TEXT = """
SELECT count(*) FROM history
WHERE tenant = %(tenant)s AND record_id = %(record_id)s
    AND (text IS NOT NULL OR (reason <> '' AND action <> 'DELETE'))
"""
ERASE_EVENT_TEXT = """
UPDATE events SET text = '', metadata = '{"forgotten": true}'
WHERE tenant = %(tenant)s AND id = ANY(%(keys)s::text[])
"""
EVENTS_WITH_TEXT = """
SELECT count(*) FROM events
WHERE tenant = %(tenant)s AND text != '' AND id = ANY(%(keys)s::text[])
"""
COUNT_RECORD = "SELECT count(*) FROM records WHERE tenant = %(tenant)s AND id = %(record_id)s"
COUNT_RECORD_VECTORS = """
SELECT count(*) FROM record_vectors
WHERE tenant = %(tenant)s AND record_id = %(record_id)s
"""
DELETE_ACTOR_EVENTS = """
DELETE FROM events
WHERE tenant = %(tenant)s AND actor = %(actor)s RETURNING (text != '') AS indexed
"""

STATS = {
    "events": "SELECT count(*) FROM events",
    "records": "SELECT count(*) FROM records",
    "active_records": "SELECT count(*) FROM records WHERE status = 'active'",
    "vectors": "SELECT count(*) FROM record_vectors",
    "jobs_pending": "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')",
    "jobs_failed": "SELECT count(*) FROM jobs WHERE status = 'failed'",
}

DATABASE_SIZE = "SELECT pg_database_size(current_database())"

LIST_DELETIONS = """
SELECT id, target, key, status, attempts, result, last_error, created_at, updated_at, actor,
    requested_by, requester, reason FROM deletions
WHERE tenant = %(tenant)s AND id < %(before)s ORDER BY id DESC LIMIT %(limit)s
"""

# thread state's tables (`remem.thread`): erased and counted with the rest of an actor
FORGET_CHECKPOINTS = "DELETE FROM checkpoints WHERE tenant = %(tenant)s AND actor = %(actor)s"
FORGET_TOOL_CALLS = "DELETE FROM tool_calls WHERE tenant = %(tenant)s AND actor = %(actor)s"
COUNT_ACTOR_CHECKPOINTS = """
SELECT count(*) AS n FROM checkpoints WHERE tenant = %(tenant)s AND actor = %(actor)s
"""
COUNT_ACTOR_TOOL_CALLS = """
SELECT count(*) AS n FROM tool_calls WHERE tenant = %(tenant)s AND actor = %(actor)s
"""

# -- the erasure flows of `remem.store.flows.erasure` (named parameters) --------------------------

RECORD_FOR_ERASURE = """
SELECT id AS key, id, actor, kind FROM records WHERE tenant = %(tenant)s AND id = %(record_id)s
FOR UPDATE
"""
RECORDS_OF_ACTOR = """
SELECT id AS key, id, actor, kind FROM records
WHERE tenant = %(tenant)s AND actor = %(actor)s
"""
FORGET_ACTOR_JOBS = """
DELETE FROM jobs j USING events e
WHERE j.tenant = %(tenant)s AND e.tenant = j.tenant AND e.id = j.event_id AND e.actor = %(actor)s
"""
FORGET_ACTOR_EVENT_VECTORS = """
DELETE FROM event_vectors
WHERE tenant = %(tenant)s AND actor = %(actor)s
"""
LIFT_EVENT_TOMBSTONES = """
DELETE FROM tombstones t USING events e
WHERE t.tenant = %(tenant)s AND t.kind = 'event' AND e.tenant = t.tenant AND e.id = t.key
  AND e.actor = %(actor)s
"""
FORGET_ACTOR_REQUESTS = "DELETE FROM api_requests WHERE tenant = %(tenant)s AND actor = %(actor)s"
ACTOR_TOMBSTONE_AT = """
INSERT INTO tombstones (tenant, kind, key, created_at) VALUES (%(tenant)s, 'actor', %(actor)s,
    %(at)s)
ON CONFLICT (tenant, kind, key) DO UPDATE SET created_at = excluded.created_at
"""
TOMBSTONE_KEY = """
INSERT INTO tombstones (tenant, kind, key, created_at) VALUES (%(tenant)s, %(kind)s, %(key)s,
    %(at)s)
ON CONFLICT DO NOTHING
"""
SOURCE_EVENT_IDS = """
SELECT event_id FROM record_events
WHERE tenant = %(tenant)s AND record_id = %(record_id)s
"""
FORGET_RECORD_LINKS = """
DELETE FROM record_events
WHERE tenant = %(tenant)s AND record_id = ANY(%(keys)s::text[])
"""
FORGET_HISTORY_TEXT = """
UPDATE history SET text = NULL, reason = ''  -- a reason may quote the content
WHERE tenant = %(tenant)s AND record_id = ANY(%(keys)s::text[])
"""
HISTORY_DELETED = """
INSERT INTO history (tenant, record_id, action, at, text, status, related_id, reason, by_whom)
VALUES (%(tenant)s, %(record_id)s, 'DELETE', %(at)s, NULL, 'deleted', NULL, 'forget', '')
"""
ALL_TOMBSTONES = """
SELECT tenant, kind, key, created_at FROM tombstones ORDER BY created_at, tenant, kind, key
"""
LOG_DELETION = """
INSERT INTO deletions (tenant, target, key, status, attempts, result, last_error,
    created_at, updated_at, actor, requested_by, requester, reason)
VALUES (%(tenant)s, %(target)s, %(key)s, %(status)s, %(attempts)s, %(result)s, %(error)s,
    %(at)s, %(at)s, %(actor)s, %(requested_by)s, %(requester)s, %(reason)s)
RETURNING id
"""
