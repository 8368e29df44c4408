-- remem schema 1: events and their outbox, records with history, indexes.
-- Times are ISO 8601 UTC strings ("2026-01-31T09:30:00.000000+00:00"), which sort.

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY,          -- arrival order; never decides recency
    tenant      TEXT NOT NULL,
    id          TEXT NOT NULL,                -- the client's event id
    actor       TEXT NOT NULL,
    session     TEXT NOT NULL,
    role        TEXT NOT NULL,
    text        TEXT NOT NULL,
    time        TEXT NOT NULL,                -- the event's own time; decides recency
    metadata    TEXT NOT NULL DEFAULT '{}',
    received_at TEXT NOT NULL,
    UNIQUE (tenant, id)
);
CREATE INDEX events_thread ON events (tenant, actor, session, time);

-- the outbox: written in the same transaction as its event
CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    strategy    TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending',   -- pending | running | done | failed
    attempts    INTEGER NOT NULL DEFAULT 0,
    lease_until TEXT,
    last_error  TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (tenant, event_id, strategy)
);
CREATE INDEX jobs_ready ON jobs (status, id);

CREATE TABLE records (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    tenant           TEXT NOT NULL,
    actor            TEXT NOT NULL,
    namespace        TEXT NOT NULL,
    kind             TEXT NOT NULL,
    text             TEXT NOT NULL,
    field            TEXT,
    value            TEXT,
    source_type      TEXT NOT NULL,
    source_event_ids TEXT NOT NULL DEFAULT '[]',
    strategy         TEXT NOT NULL DEFAULT '',
    extractor        TEXT NOT NULL DEFAULT '',
    authority        TEXT NOT NULL,
    sensitivity      TEXT NOT NULL,
    valid_from       TEXT NOT NULL,
    valid_until      TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    status           TEXT NOT NULL,
    supersedes       TEXT,
    superseded_by    TEXT,
    flags            TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX records_scope ON records (tenant, actor, status, valid_from);
CREATE INDEX records_field ON records (tenant, actor, field) WHERE field IS NOT NULL;
CREATE INDEX records_namespace ON records (tenant, namespace);

-- which source events a record came from, for deletion and tombstone checks
CREATE TABLE record_events (
    tenant    TEXT NOT NULL,
    event_id  TEXT NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id, record_id)
) WITHOUT ROWID;

-- append-only: one row per change of a record; content is erased on deletion
CREATE TABLE history (
    id         INTEGER PRIMARY KEY,
    tenant     TEXT NOT NULL,
    record_id  TEXT NOT NULL,
    action     TEXT NOT NULL,
    at         TEXT NOT NULL,
    text       TEXT,
    status     TEXT NOT NULL,
    related_id TEXT,
    reason     TEXT NOT NULL DEFAULT '',
    by_whom    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX history_record ON history (tenant, record_id, id);

-- derived indexes. Every word is indexed as <scope token><word>, where the
-- scope token names (tenant, actor): a match only ever reads one subject's
-- posting lists, so the search is scoped inside the index itself and its cost
-- does not grow with other subjects' data. `scope` holds the bare token, for
-- erasure checks.
CREATE VIRTUAL TABLE records_fts USING fts5 (text, scope, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE events_fts USING fts5 (text, scope, tokenize = 'porter unicode61');

-- status and validity are copied beside each vector (kept in step by the
-- store) so one scope's vectors load with one table scan
CREATE TABLE record_vectors (
    record_rowid INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    tenant       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    model        TEXT NOT NULL,
    status       TEXT NOT NULL,
    valid_from   REAL NOT NULL,         -- epoch seconds
    valid_until  REAL,                  -- epoch seconds; NULL while open
    vec          BLOB NOT NULL
);
CREATE INDEX record_vectors_scope ON record_vectors (tenant, actor);

-- raw events embedded when their extraction job runs (short-term memory by meaning)
CREATE TABLE event_vectors (
    event_seq INTEGER PRIMARY KEY,
    id        TEXT NOT NULL,
    tenant    TEXT NOT NULL,
    actor     TEXT NOT NULL,
    model     TEXT NOT NULL,
    time      REAL NOT NULL,      -- the event's own time, epoch seconds
    vec       BLOB NOT NULL
);
CREATE INDEX event_vectors_scope ON event_vectors (tenant, actor);

-- bumped in the same transaction as any change to a scope's records, so an
-- in-memory vector cache knows when to reload
CREATE TABLE scope_versions (
    tenant  TEXT NOT NULL,
    actor   TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (tenant, actor)
) WITHOUT ROWID;

-- content-free markers that stop a late job from recreating what was deleted
CREATE TABLE tombstones (
    tenant     TEXT NOT NULL,
    kind       TEXT NOT NULL,      -- 'actor' | 'event' | 'record'
    key        TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant, kind, key)
) WITHOUT ROWID;

-- deletion jobs: every forget is a job with a status, attempts and the
-- verified result, so an erasure can be audited and retried
CREATE TABLE deletions (
    id         INTEGER PRIMARY KEY,
    tenant     TEXT NOT NULL,
    target     TEXT NOT NULL,      -- 'record' | 'actor'
    key        TEXT NOT NULL,      -- the record id or actor
    status     TEXT NOT NULL,      -- pending | done | failed
    attempts   INTEGER NOT NULL DEFAULT 0,
    result     TEXT NOT NULL DEFAULT '{}',
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX deletions_tenant ON deletions (tenant, id);
