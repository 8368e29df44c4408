-- remem schema 11: the evidence of an erasure, and the audit log (issue 39).
-- A deletion job names who asked (the key's id and a name for it), whose data it was
-- (the actor, for a record's erasure too) and why (a reason or ticket reference); jobs
-- logged before this migration keep NULL there, except an actor's erasure, whose key
-- is its actor. The audit log is appended to, never updated, by the service: one row
-- per read of an actor's memory, export, erasure, review decision and key change, with
-- ids and counts only, never memory content.
ALTER TABLE deletions ADD COLUMN actor TEXT;
ALTER TABLE deletions ADD COLUMN requested_by TEXT;  -- the key's id (NULL: not a key)
ALTER TABLE deletions ADD COLUMN requester TEXT;     -- a name for who asked
ALTER TABLE deletions ADD COLUMN reason TEXT;        -- why: a reason or ticket reference
UPDATE deletions SET actor = key WHERE target = 'actor';

CREATE TABLE IF NOT EXISTS audit_log (
    id      INTEGER PRIMARY KEY,
    tenant  TEXT NOT NULL,
    at      TEXT NOT NULL,
    key_id  TEXT,                -- the key that acted (NULL: not a key, e.g. the CLI)
    action  TEXT NOT NULL,       -- read | search | transcript | export | erase | approve | ...
    actor   TEXT,                -- whose memory (NULL: none, e.g. a key's creation)
    target  TEXT,                -- an id: a record, a deletion job, a key
    detail  TEXT NOT NULL DEFAULT '{}'  -- JSON: surface, counts; never memory content
);
CREATE INDEX IF NOT EXISTS audit_log_tenant ON audit_log (tenant, id);
