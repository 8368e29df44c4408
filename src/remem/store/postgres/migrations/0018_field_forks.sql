-- remem PostgreSQL schema 18: a field's records held at a past time, found by a bounded
-- read (SQLite's schema 14; docs/decisions/field-history.md). A lookup as of a past
-- time wants the invalid records whose validity held then (valid_from <= valid <
-- valid_until) and, known at a past time, those still open then (created_at <= known <
-- closed_at; closed_at: their first INVALID history entry). Each is an interval that
-- holds a point, and a B-tree on one end of it reads every record on that side of the
-- point. So each interval, in whole seconds since 0000-01-01, is registered at its fork:
-- the number in it with the most trailing zero bits, the largest (hi >> t) << t that is
-- lo or more (`remem.store.forks`). An interval that holds a point is registered at one
-- of the point's 39 ancestors, so a lookup seeks those, and reads at each only the
-- records open at one moment. The forks are kept by the history an invalid record is
-- closed in (the only way a record becomes invalid).
ALTER TABLE records ADD COLUMN IF NOT EXISTS closed_at timestamptz;
ALTER TABLE records ADD COLUMN IF NOT EXISTS known_fork bigint;
ALTER TABLE records ADD COLUMN IF NOT EXISTS valid_fork bigint;

CREATE OR REPLACE FUNCTION remem_seconds(t timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT floor(extract(epoch FROM t))::bigint + 62167219200
$$;

CREATE OR REPLACE FUNCTION remem_fork(lo bigint, hi bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    node bigint;
BEGIN
    IF lo IS NULL OR hi IS NULL OR hi < lo THEN
        RETURN NULL;
    END IF;
    FOR t IN REVERSE 38..0 LOOP
        node := (hi >> t) << t;
        IF node >= lo THEN
            RETURN node;
        END IF;
    END LOOP;
    RETURN hi;
END
$$;

-- the fill reads and writes every tenant's rows: row-level security (forced on both
-- tables) shows them all only so, until the migration's transaction ends
SELECT set_config('remem.all_tenants', 'on', true);
UPDATE records SET closed_at = (SELECT min(h.at) FROM history h
    WHERE h.tenant = records.tenant AND h.record_id = records.id AND h.status = 'invalid')
WHERE field IS NOT NULL AND status = 'invalid';
UPDATE records
SET known_fork = remem_fork(remem_seconds(created_at), remem_seconds(closed_at)),
    valid_fork = remem_fork(remem_seconds(valid_from), remem_seconds(valid_until))
WHERE field IS NOT NULL AND status = 'invalid';

CREATE OR REPLACE FUNCTION history_closes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE records
    SET closed_at = LEAST(closed_at, NEW.at),
        known_fork = remem_fork(remem_seconds(created_at),
                                remem_seconds(LEAST(closed_at, NEW.at))),
        valid_fork = remem_fork(remem_seconds(valid_from), remem_seconds(valid_until))
    WHERE tenant = NEW.tenant AND id = NEW.record_id AND field IS NOT NULL;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS history_closes ON history;
CREATE TRIGGER history_closes AFTER INSERT ON history
    FOR EACH ROW WHEN (NEW.status = 'invalid') EXECUTE FUNCTION history_closes();

CREATE INDEX IF NOT EXISTS records_field_known_fork
    ON records (tenant, actor, field, known_fork)
    WHERE field IS NOT NULL AND known_fork IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_field_valid_fork
    ON records (tenant, actor, field, valid_fork)
    WHERE field IS NOT NULL AND valid_fork IS NOT NULL;
