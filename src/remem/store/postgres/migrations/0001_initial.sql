-- remem PostgreSQL schema 1: events and their outbox, records with history,
-- full-text and vector indexes, tombstones and the deletion log.
-- Same record model as the SQLite schema; times are timestamptz, lists are arrays.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE events (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- arrival order only
    tenant      text NOT NULL,
    id          text NOT NULL,                -- the client's event id
    actor       text NOT NULL,
    session     text NOT NULL,
    role        text NOT NULL,
    text        text NOT NULL,
    time        timestamptz NOT NULL,         -- the event's own time; decides recency
    metadata    jsonb NOT NULL DEFAULT '{}',
    received_at timestamptz NOT NULL,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    UNIQUE (tenant, id)
);
CREATE INDEX events_thread ON events (tenant, actor, session, time);
CREATE INDEX events_tsv ON events USING gin (tsv);

-- the outbox: written in the same transaction as its event
CREATE TABLE jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant      text NOT NULL,
    event_id    text NOT NULL,
    strategy    text NOT NULL,
    status      text NOT NULL DEFAULT 'pending',   -- pending | running | done | failed
    attempts    integer NOT NULL DEFAULT 0,
    lease_until timestamptz,
    last_error  text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    UNIQUE (tenant, event_id, strategy)
);
CREATE INDEX jobs_ready ON jobs (id) WHERE status IN ('pending', 'running');

CREATE TABLE records (
    seq              bigint GENERATED ALWAYS AS IDENTITY,  -- insertion order, breaks ties
    id               text NOT NULL,
    tenant           text NOT NULL,
    actor            text NOT NULL,
    namespace        text NOT NULL,
    kind             text NOT NULL,
    text             text NOT NULL,
    field            text,
    value            text,
    source_type      text NOT NULL,
    source_event_ids text[] NOT NULL DEFAULT '{}',
    strategy         text NOT NULL DEFAULT '',
    extractor        text NOT NULL DEFAULT '',
    authority        text NOT NULL,
    sensitivity      text NOT NULL,
    valid_from       timestamptz NOT NULL,
    valid_until      timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    status           text NOT NULL,
    supersedes       text,
    superseded_by    text,
    flags            text[] NOT NULL DEFAULT '{}',
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (tenant, id)   -- tenant first: the distribution key when sharded
);
CREATE UNIQUE INDEX records_id ON records (id);
CREATE INDEX records_scope ON records (tenant, actor, status, valid_from);
CREATE INDEX records_field ON records (tenant, actor, field) WHERE field IS NOT NULL;
CREATE INDEX records_namespace ON records (tenant, actor, namespace text_pattern_ops);
CREATE INDEX records_tsv ON records USING gin (tsv);

-- which source events a record came from, for deletion and tombstone checks
CREATE TABLE record_events (
    tenant    text NOT NULL,
    event_id  text NOT NULL,
    record_id text NOT NULL,
    PRIMARY KEY (tenant, event_id, record_id)
);
CREATE INDEX record_events_record ON record_events (tenant, record_id);

-- append-only: one row per change of a record; content is erased on deletion
CREATE TABLE history (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text NOT NULL,
    record_id  text NOT NULL,
    action     text NOT NULL,
    at         timestamptz NOT NULL,
    text       text,
    status     text NOT NULL,
    related_id text,
    reason     text NOT NULL DEFAULT '',
    by_whom    text NOT NULL DEFAULT ''
);
CREATE INDEX history_record ON history (tenant, record_id, id);

-- one vector per record. The column has no fixed dimension so any embedder
-- fits; a search compares only vectors of one model (one dimension), and it
-- scans one (tenant, actor) scope exactly: scope first, never a global
-- approximate search filtered afterwards.
CREATE TABLE record_vectors (
    tenant    text NOT NULL,
    record_id text NOT NULL,
    actor     text NOT NULL,
    model     text NOT NULL,
    vec       vector NOT NULL,
    PRIMARY KEY (tenant, record_id),
    FOREIGN KEY (tenant, record_id) REFERENCES records (tenant, id) ON DELETE CASCADE
);
CREATE INDEX record_vectors_scope ON record_vectors (tenant, actor, model);

-- raw events embedded when their extraction job runs (short-term memory by meaning)
CREATE TABLE event_vectors (
    tenant   text NOT NULL,
    event_id text NOT NULL,
    actor    text NOT NULL,
    model    text NOT NULL,
    time     timestamptz NOT NULL,   -- the event's own time
    vec      vector NOT NULL,
    PRIMARY KEY (tenant, event_id),
    FOREIGN KEY (tenant, event_id) REFERENCES events (tenant, id) ON DELETE CASCADE
);
CREATE INDEX event_vectors_scope ON event_vectors (tenant, actor, model);

-- content-free markers that stop a late job from recreating what was deleted
CREATE TABLE tombstones (
    tenant     text NOT NULL,
    kind       text NOT NULL,      -- 'actor' | 'event' | 'record'
    key        text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, kind, key)
);

-- deletion jobs: every forget is a job with a status, attempts and the
-- verified result, so an erasure can be audited and retried
CREATE TABLE deletions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text NOT NULL,
    target     text NOT NULL,      -- 'record' | 'actor'
    key        text NOT NULL,      -- the record id or actor
    status     text NOT NULL,      -- pending | done | failed
    attempts   integer NOT NULL DEFAULT 0,
    result     jsonb NOT NULL DEFAULT '{}',
    last_error text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX deletions_tenant ON deletions (tenant, id);

-- Row-level security: a row is visible only to a transaction that set
-- remem.tenant to its tenant (set_config(..., true) at the start of every
-- transaction). The few operations that span tenants by design (claiming
-- jobs, counting for stats) set remem.all_tenants = 'on' instead. FORCE makes
-- the tables' owner obey the policy too; superusers still bypass it, so run
-- remem as an ordinary role.
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON events USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON jobs USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE records ENABLE ROW LEVEL SECURITY;
ALTER TABLE records FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON records USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE record_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE record_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON record_events USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE history ENABLE ROW LEVEL SECURITY;
ALTER TABLE history FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON history USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE record_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE record_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON record_vectors USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE event_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON event_vectors USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON tombstones USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE deletions ENABLE ROW LEVEL SECURITY;
ALTER TABLE deletions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON deletions USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
