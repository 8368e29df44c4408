-- remem PostgreSQL schema 9: a version per scope (SQLite has had one since schema 1),
-- bumped in the same transaction as any change to the scope's records or vectors,
-- so a cache of the scope's searches (`remem.recall.applies`) knows when it is stale,
-- in this process or after another one wrote.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE scope_versions (
    tenant  text NOT NULL,
    actor   text NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (tenant, actor)
);
ALTER TABLE scope_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE scope_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON scope_versions USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
