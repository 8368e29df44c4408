-- remem PostgreSQL schema 6: the API keys of the HTTP service and the MCP server
-- (SQLite schema 3's api_keys). A key is stored only as the sha256 of its secret:
-- the secret is shown once, at creation, and cannot be read back from here.
--
-- How the table is protected, and why. A request names no tenant: its key does,
-- so the lookup by hash runs before the tenant is known. The table is still a
-- tenant table under the same forced row-level security as every other one, so
-- that a tenant-bound statement that forgot its WHERE sees only its own tenant's
-- keys. The few statements that must span tenants say so, as a worker claiming
-- jobs does, with remem.all_tenants in their own one-statement transaction
-- (`remem.store.postgres_keys`): the lookup by hash (at most one row, matched on
-- a hash of 256 random bits), and the operator's `remem keys list` and
-- `remem keys revoke` from the command line. The alternatives were weighed:
-- - a table outside row-level security would let any tenant-bound statement
--   that forgot its WHERE read every tenant's key rows;
-- - a SECURITY DEFINER lookup function gains nothing here: remem runs as one
--   ordinary role that owns its tables, and FORCE ROW LEVEL SECURITY binds the
--   owner too, so the function would have to switch the same setting; a second,
--   more privileged owner role is one more thing for every deployment to create.
-- On a sharded deployment (Citus) this table would be a reference table: the
-- lookup cannot be routed to a tenant's shard before it has found the tenant.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    tenant      text NOT NULL,
    actor       text,                                  -- NULL: every actor of the tenant
    role        text NOT NULL CHECK (role IN ('agent', 'reviewer', 'admin')),
    key_hash    text NOT NULL UNIQUE,                  -- hex sha256 of the secret
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz                            -- NULL while the key is valid
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON api_keys USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
