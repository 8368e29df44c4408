-- remem schema 14: a field's records held at a past time, found by a bounded read
-- (PostgreSQL's schema 18; docs/decisions/field-history.md). A lookup as of a past time
-- wants the invalid records whose validity held then (valid_from <= valid < valid_until)
-- and, known at a past time, those still open then (created_at <= known < closed_at;
-- closed_at: their first INVALID history entry). Each is an interval that holds a point,
-- and a B-tree on one end of it reads every record on that side of the point. So each
-- interval, in whole seconds since 0000-01-01, is registered at its fork: the number in
-- it with the most trailing zero bits, the largest (hi >> t) << t that is lo or more
-- (`remem.store.forks`). An interval that holds a point is registered at one of the
-- point's 39 ancestors, so a lookup seeks those, and reads at each only the records open
-- at one moment. The forks are kept by the history an invalid record is closed in (the
-- only way a record becomes invalid); the CASE is written out, as SQLite has no loop.
ALTER TABLE records ADD COLUMN closed_at TEXT;
ALTER TABLE records ADD COLUMN known_fork INTEGER;
ALTER TABLE records ADD COLUMN valid_fork INTEGER;
UPDATE records SET closed_at = (SELECT min(h.at) FROM history h
    WHERE h.tenant = records.tenant AND h.record_id = records.id AND h.status = 'invalid')
WHERE field IS NOT NULL AND status = 'invalid';
UPDATE records SET known_fork = (SELECT CASE WHEN lo IS NULL OR hi IS NULL OR hi < lo THEN NULL
            WHEN ((hi >> 38) << 38) >= lo THEN (hi >> 38) << 38
            WHEN ((hi >> 37) << 37) >= lo THEN (hi >> 37) << 37
            WHEN ((hi >> 36) << 36) >= lo THEN (hi >> 36) << 36
            WHEN ((hi >> 35) << 35) >= lo THEN (hi >> 35) << 35
            WHEN ((hi >> 34) << 34) >= lo THEN (hi >> 34) << 34
            WHEN ((hi >> 33) << 33) >= lo THEN (hi >> 33) << 33
            WHEN ((hi >> 32) << 32) >= lo THEN (hi >> 32) << 32
            WHEN ((hi >> 31) << 31) >= lo THEN (hi >> 31) << 31
            WHEN ((hi >> 30) << 30) >= lo THEN (hi >> 30) << 30
            WHEN ((hi >> 29) << 29) >= lo THEN (hi >> 29) << 29
            WHEN ((hi >> 28) << 28) >= lo THEN (hi >> 28) << 28
            WHEN ((hi >> 27) << 27) >= lo THEN (hi >> 27) << 27
            WHEN ((hi >> 26) << 26) >= lo THEN (hi >> 26) << 26
            WHEN ((hi >> 25) << 25) >= lo THEN (hi >> 25) << 25
            WHEN ((hi >> 24) << 24) >= lo THEN (hi >> 24) << 24
            WHEN ((hi >> 23) << 23) >= lo THEN (hi >> 23) << 23
            WHEN ((hi >> 22) << 22) >= lo THEN (hi >> 22) << 22
            WHEN ((hi >> 21) << 21) >= lo THEN (hi >> 21) << 21
            WHEN ((hi >> 20) << 20) >= lo THEN (hi >> 20) << 20
            WHEN ((hi >> 19) << 19) >= lo THEN (hi >> 19) << 19
            WHEN ((hi >> 18) << 18) >= lo THEN (hi >> 18) << 18
            WHEN ((hi >> 17) << 17) >= lo THEN (hi >> 17) << 17
            WHEN ((hi >> 16) << 16) >= lo THEN (hi >> 16) << 16
            WHEN ((hi >> 15) << 15) >= lo THEN (hi >> 15) << 15
            WHEN ((hi >> 14) << 14) >= lo THEN (hi >> 14) << 14
            WHEN ((hi >> 13) << 13) >= lo THEN (hi >> 13) << 13
            WHEN ((hi >> 12) << 12) >= lo THEN (hi >> 12) << 12
            WHEN ((hi >> 11) << 11) >= lo THEN (hi >> 11) << 11
            WHEN ((hi >> 10) << 10) >= lo THEN (hi >> 10) << 10
            WHEN ((hi >> 9) << 9) >= lo THEN (hi >> 9) << 9
            WHEN ((hi >> 8) << 8) >= lo THEN (hi >> 8) << 8
            WHEN ((hi >> 7) << 7) >= lo THEN (hi >> 7) << 7
            WHEN ((hi >> 6) << 6) >= lo THEN (hi >> 6) << 6
            WHEN ((hi >> 5) << 5) >= lo THEN (hi >> 5) << 5
            WHEN ((hi >> 4) << 4) >= lo THEN (hi >> 4) << 4
            WHEN ((hi >> 3) << 3) >= lo THEN (hi >> 3) << 3
            WHEN ((hi >> 2) << 2) >= lo THEN (hi >> 2) << 2
            WHEN ((hi >> 1) << 1) >= lo THEN (hi >> 1) << 1
            WHEN ((hi >> 0) << 0) >= lo THEN (hi >> 0) << 0
        END
        FROM (SELECT CAST(strftime('%s', substr(records.created_at, 1, 19)) AS INTEGER) + 62167219200 AS lo,
                     CAST(strftime('%s', substr(records.closed_at, 1, 19)) AS INTEGER) + 62167219200 AS hi)),
    valid_fork = (SELECT CASE WHEN lo IS NULL OR hi IS NULL OR hi < lo THEN NULL
            WHEN ((hi >> 38) << 38) >= lo THEN (hi >> 38) << 38
            WHEN ((hi >> 37) << 37) >= lo THEN (hi >> 37) << 37
            WHEN ((hi >> 36) << 36) >= lo THEN (hi >> 36) << 36
            WHEN ((hi >> 35) << 35) >= lo THEN (hi >> 35) << 35
            WHEN ((hi >> 34) << 34) >= lo THEN (hi >> 34) << 34
            WHEN ((hi >> 33) << 33) >= lo THEN (hi >> 33) << 33
            WHEN ((hi >> 32) << 32) >= lo THEN (hi >> 32) << 32
            WHEN ((hi >> 31) << 31) >= lo THEN (hi >> 31) << 31
            WHEN ((hi >> 30) << 30) >= lo THEN (hi >> 30) << 30
            WHEN ((hi >> 29) << 29) >= lo THEN (hi >> 29) << 29
            WHEN ((hi >> 28) << 28) >= lo THEN (hi >> 28) << 28
            WHEN ((hi >> 27) << 27) >= lo THEN (hi >> 27) << 27
            WHEN ((hi >> 26) << 26) >= lo THEN (hi >> 26) << 26
            WHEN ((hi >> 25) << 25) >= lo THEN (hi >> 25) << 25
            WHEN ((hi >> 24) << 24) >= lo THEN (hi >> 24) << 24
            WHEN ((hi >> 23) << 23) >= lo THEN (hi >> 23) << 23
            WHEN ((hi >> 22) << 22) >= lo THEN (hi >> 22) << 22
            WHEN ((hi >> 21) << 21) >= lo THEN (hi >> 21) << 21
            WHEN ((hi >> 20) << 20) >= lo THEN (hi >> 20) << 20
            WHEN ((hi >> 19) << 19) >= lo THEN (hi >> 19) << 19
            WHEN ((hi >> 18) << 18) >= lo THEN (hi >> 18) << 18
            WHEN ((hi >> 17) << 17) >= lo THEN (hi >> 17) << 17
            WHEN ((hi >> 16) << 16) >= lo THEN (hi >> 16) << 16
            WHEN ((hi >> 15) << 15) >= lo THEN (hi >> 15) << 15
            WHEN ((hi >> 14) << 14) >= lo THEN (hi >> 14) << 14
            WHEN ((hi >> 13) << 13) >= lo THEN (hi >> 13) << 13
            WHEN ((hi >> 12) << 12) >= lo THEN (hi >> 12) << 12
            WHEN ((hi >> 11) << 11) >= lo THEN (hi >> 11) << 11
            WHEN ((hi >> 10) << 10) >= lo THEN (hi >> 10) << 10
            WHEN ((hi >> 9) << 9) >= lo THEN (hi >> 9) << 9
            WHEN ((hi >> 8) << 8) >= lo THEN (hi >> 8) << 8
            WHEN ((hi >> 7) << 7) >= lo THEN (hi >> 7) << 7
            WHEN ((hi >> 6) << 6) >= lo THEN (hi >> 6) << 6
            WHEN ((hi >> 5) << 5) >= lo THEN (hi >> 5) << 5
            WHEN ((hi >> 4) << 4) >= lo THEN (hi >> 4) << 4
            WHEN ((hi >> 3) << 3) >= lo THEN (hi >> 3) << 3
            WHEN ((hi >> 2) << 2) >= lo THEN (hi >> 2) << 2
            WHEN ((hi >> 1) << 1) >= lo THEN (hi >> 1) << 1
            WHEN ((hi >> 0) << 0) >= lo THEN (hi >> 0) << 0
        END
        FROM (SELECT CAST(strftime('%s', substr(records.valid_from, 1, 19)) AS INTEGER) + 62167219200 AS lo,
                     CAST(strftime('%s', substr(records.valid_until, 1, 19)) AS INTEGER) + 62167219200 AS hi))
WHERE field IS NOT NULL AND status = 'invalid';
CREATE TRIGGER IF NOT EXISTS history_closes AFTER INSERT ON history
WHEN NEW.status = 'invalid'
BEGIN
    UPDATE records SET closed_at = NEW.at
    WHERE tenant = NEW.tenant AND id = NEW.record_id AND field IS NOT NULL
        AND (closed_at IS NULL OR closed_at > NEW.at);
    UPDATE records SET known_fork = (SELECT CASE WHEN lo IS NULL OR hi IS NULL OR hi < lo THEN NULL
            WHEN ((hi >> 38) << 38) >= lo THEN (hi >> 38) << 38
            WHEN ((hi >> 37) << 37) >= lo THEN (hi >> 37) << 37
            WHEN ((hi >> 36) << 36) >= lo THEN (hi >> 36) << 36
            WHEN ((hi >> 35) << 35) >= lo THEN (hi >> 35) << 35
            WHEN ((hi >> 34) << 34) >= lo THEN (hi >> 34) << 34
            WHEN ((hi >> 33) << 33) >= lo THEN (hi >> 33) << 33
            WHEN ((hi >> 32) << 32) >= lo THEN (hi >> 32) << 32
            WHEN ((hi >> 31) << 31) >= lo THEN (hi >> 31) << 31
            WHEN ((hi >> 30) << 30) >= lo THEN (hi >> 30) << 30
            WHEN ((hi >> 29) << 29) >= lo THEN (hi >> 29) << 29
            WHEN ((hi >> 28) << 28) >= lo THEN (hi >> 28) << 28
            WHEN ((hi >> 27) << 27) >= lo THEN (hi >> 27) << 27
            WHEN ((hi >> 26) << 26) >= lo THEN (hi >> 26) << 26
            WHEN ((hi >> 25) << 25) >= lo THEN (hi >> 25) << 25
            WHEN ((hi >> 24) << 24) >= lo THEN (hi >> 24) << 24
            WHEN ((hi >> 23) << 23) >= lo THEN (hi >> 23) << 23
            WHEN ((hi >> 22) << 22) >= lo THEN (hi >> 22) << 22
            WHEN ((hi >> 21) << 21) >= lo THEN (hi >> 21) << 21
            WHEN ((hi >> 20) << 20) >= lo THEN (hi >> 20) << 20
            WHEN ((hi >> 19) << 19) >= lo THEN (hi >> 19) << 19
            WHEN ((hi >> 18) << 18) >= lo THEN (hi >> 18) << 18
            WHEN ((hi >> 17) << 17) >= lo THEN (hi >> 17) << 17
            WHEN ((hi >> 16) << 16) >= lo THEN (hi >> 16) << 16
            WHEN ((hi >> 15) << 15) >= lo THEN (hi >> 15) << 15
            WHEN ((hi >> 14) << 14) >= lo THEN (hi >> 14) << 14
            WHEN ((hi >> 13) << 13) >= lo THEN (hi >> 13) << 13
            WHEN ((hi >> 12) << 12) >= lo THEN (hi >> 12) << 12
            WHEN ((hi >> 11) << 11) >= lo THEN (hi >> 11) << 11
            WHEN ((hi >> 10) << 10) >= lo THEN (hi >> 10) << 10
            WHEN ((hi >> 9) << 9) >= lo THEN (hi >> 9) << 9
            WHEN ((hi >> 8) << 8) >= lo THEN (hi >> 8) << 8
            WHEN ((hi >> 7) << 7) >= lo THEN (hi >> 7) << 7
            WHEN ((hi >> 6) << 6) >= lo THEN (hi >> 6) << 6
            WHEN ((hi >> 5) << 5) >= lo THEN (hi >> 5) << 5
            WHEN ((hi >> 4) << 4) >= lo THEN (hi >> 4) << 4
            WHEN ((hi >> 3) << 3) >= lo THEN (hi >> 3) << 3
            WHEN ((hi >> 2) << 2) >= lo THEN (hi >> 2) << 2
            WHEN ((hi >> 1) << 1) >= lo THEN (hi >> 1) << 1
            WHEN ((hi >> 0) << 0) >= lo THEN (hi >> 0) << 0
        END
        FROM (SELECT CAST(strftime('%s', substr(records.created_at, 1, 19)) AS INTEGER) + 62167219200 AS lo,
                     CAST(strftime('%s', substr(records.closed_at, 1, 19)) AS INTEGER) + 62167219200 AS hi)),
    valid_fork = (SELECT CASE WHEN lo IS NULL OR hi IS NULL OR hi < lo THEN NULL
            WHEN ((hi >> 38) << 38) >= lo THEN (hi >> 38) << 38
            WHEN ((hi >> 37) << 37) >= lo THEN (hi >> 37) << 37
            WHEN ((hi >> 36) << 36) >= lo THEN (hi >> 36) << 36
            WHEN ((hi >> 35) << 35) >= lo THEN (hi >> 35) << 35
            WHEN ((hi >> 34) << 34) >= lo THEN (hi >> 34) << 34
            WHEN ((hi >> 33) << 33) >= lo THEN (hi >> 33) << 33
            WHEN ((hi >> 32) << 32) >= lo THEN (hi >> 32) << 32
            WHEN ((hi >> 31) << 31) >= lo THEN (hi >> 31) << 31
            WHEN ((hi >> 30) << 30) >= lo THEN (hi >> 30) << 30
            WHEN ((hi >> 29) << 29) >= lo THEN (hi >> 29) << 29
            WHEN ((hi >> 28) << 28) >= lo THEN (hi >> 28) << 28
            WHEN ((hi >> 27) << 27) >= lo THEN (hi >> 27) << 27
            WHEN ((hi >> 26) << 26) >= lo THEN (hi >> 26) << 26
            WHEN ((hi >> 25) << 25) >= lo THEN (hi >> 25) << 25
            WHEN ((hi >> 24) << 24) >= lo THEN (hi >> 24) << 24
            WHEN ((hi >> 23) << 23) >= lo THEN (hi >> 23) << 23
            WHEN ((hi >> 22) << 22) >= lo THEN (hi >> 22) << 22
            WHEN ((hi >> 21) << 21) >= lo THEN (hi >> 21) << 21
            WHEN ((hi >> 20) << 20) >= lo THEN (hi >> 20) << 20
            WHEN ((hi >> 19) << 19) >= lo THEN (hi >> 19) << 19
            WHEN ((hi >> 18) << 18) >= lo THEN (hi >> 18) << 18
            WHEN ((hi >> 17) << 17) >= lo THEN (hi >> 17) << 17
            WHEN ((hi >> 16) << 16) >= lo THEN (hi >> 16) << 16
            WHEN ((hi >> 15) << 15) >= lo THEN (hi >> 15) << 15
            WHEN ((hi >> 14) << 14) >= lo THEN (hi >> 14) << 14
            WHEN ((hi >> 13) << 13) >= lo THEN (hi >> 13) << 13
            WHEN ((hi >> 12) << 12) >= lo THEN (hi >> 12) << 12
            WHEN ((hi >> 11) << 11) >= lo THEN (hi >> 11) << 11
            WHEN ((hi >> 10) << 10) >= lo THEN (hi >> 10) << 10
            WHEN ((hi >> 9) << 9) >= lo THEN (hi >> 9) << 9
            WHEN ((hi >> 8) << 8) >= lo THEN (hi >> 8) << 8
            WHEN ((hi >> 7) << 7) >= lo THEN (hi >> 7) << 7
            WHEN ((hi >> 6) << 6) >= lo THEN (hi >> 6) << 6
            WHEN ((hi >> 5) << 5) >= lo THEN (hi >> 5) << 5
            WHEN ((hi >> 4) << 4) >= lo THEN (hi >> 4) << 4
            WHEN ((hi >> 3) << 3) >= lo THEN (hi >> 3) << 3
            WHEN ((hi >> 2) << 2) >= lo THEN (hi >> 2) << 2
            WHEN ((hi >> 1) << 1) >= lo THEN (hi >> 1) << 1
            WHEN ((hi >> 0) << 0) >= lo THEN (hi >> 0) << 0
        END
        FROM (SELECT CAST(strftime('%s', substr(records.valid_from, 1, 19)) AS INTEGER) + 62167219200 AS lo,
                     CAST(strftime('%s', substr(records.valid_until, 1, 19)) AS INTEGER) + 62167219200 AS hi))
    WHERE tenant = NEW.tenant AND id = NEW.record_id AND field IS NOT NULL;
END;
CREATE INDEX IF NOT EXISTS records_field_known_fork
    ON records (tenant, actor, field, known_fork) WHERE field IS NOT NULL AND known_fork IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_field_valid_fork
    ON records (tenant, actor, field, valid_fork) WHERE field IS NOT NULL AND valid_fork IS NOT NULL;
