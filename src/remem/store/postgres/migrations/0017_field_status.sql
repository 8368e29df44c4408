-- remem PostgreSQL schema 17: one field's records by status and end of validity, and
-- by time (SQLite's schema 13). A write of a fielded fact reads the field's active
-- records, a lookup the records valid at a time, a listing the newest few
-- (`remem.store.postgres.field_sql`): each a seek of one of these, however long the
-- field's history. They lead with the columns of `records_field`, which they replace
-- (the reads by a field's prefix take them as they took it).
CREATE INDEX IF NOT EXISTS records_field_status
    ON records (tenant, actor, field, status, valid_until) WHERE field IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_field_time
    ON records (tenant, actor, field, valid_from, seq) WHERE field IS NOT NULL;
DROP INDEX IF EXISTS records_field;
