-- remem PostgreSQL schema 16: a name for an API key, and an audit log the database
-- keeps append-only (issue 39; SQLite's schema 12).
-- A key's name (optional, at most 100 characters, screened like every stored string)
-- says whose key it is in the console, in receipts ("who asked") and in audit rows.
-- The trigger refuses any UPDATE of an audit row, any TRUNCATE, and any DELETE of a
-- row younger than 30 days: the shortest retention $REMEM_AUDIT_DAYS allows, so the
-- service's purge of rows past the retention passes and nothing else that is recent
-- does. It holds against remem's statements and anyone using its role, short of
-- dropping the trigger: the table's owner (the role that migrated) and a superuser can
-- (ALTER TABLE ... DISABLE TRIGGER, DROP TRIGGER), and session_replication_role =
-- replica, which takes a superuser, skips it.
-- Its SQLSTATE, 23R01 (class 23, integrity), is remem's own: the store names it.
-- Statements are split on ';' outside $$ quotes.

ALTER TABLE api_keys ADD COLUMN name text;

CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.at < now() - interval '30 days' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit log is append-only: only rows older than 30 days are purged'
            USING ERRCODE = '23R01';
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: its rows are never changed'
        USING ERRCODE = '23R01';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
