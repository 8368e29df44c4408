-- remem PostgreSQL schema 15: the evidence of an erasure, and the audit log (issue 39;
-- SQLite's schema 11). A deletion job names who asked (the key's id and a name for
-- it), whose data it was (the actor, for a record's erasure too) and why (a reason or
-- ticket reference). The audit log is appended to, never updated, by the service: one
-- row per read of an actor's memory, export, erasure, review decision and key change,
-- with ids and counts only, never memory content.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE deletions ADD COLUMN actor text;
ALTER TABLE deletions ADD COLUMN requested_by text;
ALTER TABLE deletions ADD COLUMN requester text;
ALTER TABLE deletions ADD COLUMN reason text;
SELECT set_config('remem.all_tenants', 'on', true);
UPDATE deletions SET actor = key WHERE target = 'actor';

CREATE TABLE audit_log (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant  text NOT NULL,
    at      timestamptz NOT NULL,
    key_id  text,
    action  text NOT NULL,
    actor   text,
    target  text,
    detail  jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_tenant ON audit_log (tenant, id);
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON audit_log USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
