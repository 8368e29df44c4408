-- remem PostgreSQL schema 3: the request-id ledger of idempotent batch writes
-- (SQLite schema 3's api_requests). A retried batch with the same request id
-- gets the first outcome back instead of writing twice. The outcome names a
-- record id and a status, never content; a forgotten actor's rows are dropped.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE api_requests (
    tenant     text NOT NULL,
    request_id text NOT NULL,
    operation  text NOT NULL,        -- create | update | delete
    actor      text NOT NULL,
    outcome    jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, request_id)
);
CREATE INDEX api_requests_actor ON api_requests (tenant, actor);

ALTER TABLE api_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_requests FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON api_requests USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
