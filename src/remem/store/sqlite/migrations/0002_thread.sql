-- remem schema 2: thread state. Workflow checkpoints and the tool-call ledger.
-- Thread state is kept apart from long-term memory (DESIGN 1): nothing here is
-- recalled, and every row is scoped by (tenant, actor) like a record.

-- one row per workflow, rewritten in place under optimistic concurrency:
-- a writer names the version it read and the UPDATE matches only that version
CREATE TABLE checkpoints (
    tenant                TEXT NOT NULL,
    actor                 TEXT NOT NULL,
    workflow              TEXT NOT NULL,
    version               INTEGER NOT NULL,              -- 1 on create, +1 per save
    step                  TEXT,                          -- the current step
    completed_steps       TEXT NOT NULL DEFAULT '[]',    -- JSON array of step names
    pending_approval      TEXT,                          -- JSON object, NULL when none
    tool_call_id          TEXT,                          -- the tool call in flight, if any
    idempotency_key       TEXT,                          -- and its key in tool_calls
    artifacts             TEXT NOT NULL DEFAULT '[]',    -- JSON array
    last_verified_outcome TEXT,                          -- JSON value, NULL when none
    data                  TEXT NOT NULL DEFAULT '{}',    -- JSON object, the caller's own
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    expires_at            TEXT,                          -- NULL keeps it until deleted
    PRIMARY KEY (tenant, actor, workflow)
) WITHOUT ROWID;
CREATE INDEX checkpoints_recent ON checkpoints (tenant, actor, updated_at);
CREATE INDEX checkpoints_expiry ON checkpoints (expires_at) WHERE expires_at IS NOT NULL;

-- the ledger of side effects: one row per (workflow, idempotency key), written
-- before the side effect and completed after it. A row left 'started' or
-- 'unknown' is an outcome nobody knows and waits for reconciliation.
CREATE TABLE tool_calls (
    tenant          TEXT NOT NULL,
    actor           TEXT NOT NULL,
    workflow        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('started', 'completed', 'unknown')),
    attempts        INTEGER NOT NULL DEFAULT 1,          -- begins seen for this key
    request         TEXT NOT NULL DEFAULT 'null',        -- JSON
    result          TEXT,                                -- JSON, set on completion
    started_at      TEXT NOT NULL,
    completed_at    TEXT,
    expires_at      TEXT,
    PRIMARY KEY (tenant, actor, workflow, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX tool_calls_unresolved ON tool_calls (tenant, actor, status)
    WHERE status != 'completed';
