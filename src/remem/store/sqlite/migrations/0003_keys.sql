-- remem schema 3: the HTTP service. API-key principals and idempotent batch requests.
-- A key is stored only as the sha256 of its secret: the secret is shown once, at
-- creation, and cannot be read back from the database.

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    actor       TEXT,                                   -- NULL: every actor of the tenant
    role        TEXT NOT NULL CHECK (role IN ('agent', 'reviewer', 'admin')),
    key_hash    TEXT NOT NULL UNIQUE,                   -- hex sha256 of the secret
    created_at  TEXT NOT NULL,
    revoked_at  TEXT                                    -- NULL while the key is valid
) WITHOUT ROWID;
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

-- one row per batch item that carried a request id: a repeat returns the first
-- outcome. The outcome names a record id and a status, never content, so
-- forgetting a record or a subject leaves nothing here worth erasing (the rows
-- of a forgotten actor are dropped all the same).
CREATE TABLE api_requests (
    tenant      TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    operation   TEXT NOT NULL,                          -- create | update | delete
    actor       TEXT NOT NULL,
    outcome     TEXT NOT NULL,                          -- JSON object
    created_at  TEXT NOT NULL,
    PRIMARY KEY (tenant, request_id)
) WITHOUT ROWID;
CREATE INDEX api_requests_actor ON api_requests (tenant, actor);
