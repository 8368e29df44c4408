"""SQLite's named statements of the vector backfill (`remem.store.flows.backfill`)."""

from remem.store.sqlite.sql import NOTE_VECTOR_MODEL as NOTE_VECTOR_MODEL  # `BackfillSQL`

UNEMBEDDED_RECORDS = """
SELECT r.id, r.rowid AS key FROM records r
WHERE r.tenant = :tenant AND r.rowid > :after_record AND r.status <> 'deleted'
    AND NOT EXISTS (SELECT 1 FROM record_vectors v WHERE v.record_rowid = r.rowid)
ORDER BY r.rowid LIMIT :limit
"""
_EVENT_WAITS = """
    trim(e.text) <> ''
    AND NOT EXISTS (SELECT 1 FROM event_vectors v WHERE v.event_seq = e.seq)
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.tenant = e.tenant AND j.event_id = e.id
                    AND j.status IN ('pending', 'running'))
"""
UNEMBEDDED_EVENTS = f"""
SELECT e.id, e.seq FROM events e
WHERE e.tenant = :tenant AND e.seq > :after_event AND {_EVENT_WAITS}
ORDER BY e.seq LIMIT :limit
"""
UNEMBEDDED_COUNT = f"""
SELECT
    (SELECT count(*) FROM records r
     WHERE r.tenant = :tenant AND r.actor = :actor AND r.status <> 'deleted'
         AND NOT EXISTS (SELECT 1 FROM record_vectors v WHERE v.record_rowid = r.rowid))
        AS records,
    (SELECT count(*) FROM events e
     WHERE e.tenant = :tenant AND e.actor = :actor AND {_EVENT_WAITS}) AS events
"""
RECORD_STATE = """
SELECT id, status, valid_until FROM records WHERE tenant = :tenant AND id IN ({keys})
"""
