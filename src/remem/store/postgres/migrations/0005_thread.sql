-- remem PostgreSQL schema 5: thread state (SQLite schema 2). Workflow checkpoints
-- and the tool-call ledger, kept apart from long-term memory (DESIGN 1): nothing
-- here is recalled, and every row is scoped by (tenant, actor) like a record.
-- JSON values are kept as the canonical text remem writes (sorted keys), not
-- jsonb: jsonb reorders keys and rewrites numbers (1e+16 comes back as an
-- integer), and a tool call's request is compared byte for byte with a retry's.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

-- one row per workflow, rewritten in place under optimistic concurrency:
-- a writer names the version it read and the UPDATE matches only that version
CREATE TABLE checkpoints (
    tenant                text NOT NULL,
    actor                 text NOT NULL,
    workflow              text NOT NULL,
    version               integer NOT NULL,              -- 1 on create, +1 per save
    step                  text,                          -- the current step
    completed_steps       text NOT NULL DEFAULT '[]',    -- JSON array of step names
    pending_approval      text,                          -- JSON object, NULL when none
    tool_call_id          text,                          -- the tool call in flight, if any
    idempotency_key       text,                          -- and its key in tool_calls
    artifacts             text NOT NULL DEFAULT '[]',    -- JSON array
    last_verified_outcome text,                          -- JSON value, NULL when none
    data                  text NOT NULL DEFAULT '{}',    -- JSON object, the caller's own
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    expires_at            timestamptz,                   -- NULL keeps it until deleted
    PRIMARY KEY (tenant, actor, workflow)
);
CREATE INDEX checkpoints_recent ON checkpoints (tenant, actor, updated_at);
CREATE INDEX checkpoints_expiry ON checkpoints (expires_at) WHERE expires_at IS NOT NULL;

-- the ledger of side effects: one row per (workflow, idempotency key), written
-- before the side effect and completed after it. A row left 'started' or
-- 'unknown' is an outcome nobody knows and waits for reconciliation.
CREATE TABLE tool_calls (
    tenant          text NOT NULL,
    actor           text NOT NULL,
    workflow        text NOT NULL,
    idempotency_key text NOT NULL,
    tool_call_id    text NOT NULL,
    status          text NOT NULL CHECK (status IN ('started', 'completed', 'unknown')),
    attempts        integer NOT NULL DEFAULT 1,          -- begins seen for this key
    request         text NOT NULL DEFAULT 'null',        -- JSON
    result          text,                                -- JSON, set on completion
    started_at      timestamptz NOT NULL,
    completed_at    timestamptz,
    expires_at      timestamptz,
    PRIMARY KEY (tenant, actor, workflow, idempotency_key)
);
CREATE INDEX tool_calls_unresolved ON tool_calls (tenant, actor, status)
    WHERE status <> 'completed';
CREATE INDEX tool_calls_expiry ON tool_calls (expires_at) WHERE expires_at IS NOT NULL;

ALTER TABLE checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON checkpoints USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE tool_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE tool_calls FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON tool_calls USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
