-- remem schema 12: a name for an API key, and an audit log the database keeps
-- append-only (issue 39; PostgreSQL's schema 16).
-- A key's name (optional, at most 100 characters, screened like every stored string)
-- says whose key it is in the console, in receipts ("who asked") and in audit rows.
-- The triggers refuse any UPDATE of an audit row, and any DELETE of a row younger than
-- 30 days: the shortest retention $REMEM_AUDIT_DAYS allows, so the service's purge of
-- rows past the retention passes and nothing else that is recent does. They hold
-- against remem's own statements and anyone using its connection; not against whoever
-- can write the file without them (DROP TRIGGER, another build of SQLite).
ALTER TABLE api_keys ADD COLUMN name TEXT;

CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only: its rows are never changed');
END;

CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.at >= strftime('%Y-%m-%dT%H:%M:%f', 'now', '-30 days')
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only: only rows older than 30 days are purged');
END;
