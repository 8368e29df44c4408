"""PostgreSQL's named statements of the vector backfill (`remem.store.flows.backfill`)."""

from remem.store.postgres.sql import NOTE_VECTOR_MODEL as NOTE_VECTOR_MODEL  # `BackfillSQL`

UNEMBEDDED_RECORDS = """
SELECT r.id, r.seq AS key FROM records r
WHERE r.tenant = %(tenant)s AND r.seq > %(after_record)s AND r.status <> 'deleted'
    AND NOT EXISTS (SELECT 1 FROM record_vectors v
                    WHERE v.tenant = r.tenant AND v.record_id = r.id)
ORDER BY r.seq LIMIT %(limit)s
"""
_EVENT_WAITS = """
    btrim(e.text) <> ''
    AND NOT EXISTS (SELECT 1 FROM event_vectors v
                    WHERE v.tenant = e.tenant AND v.event_id = e.id)
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.tenant = e.tenant AND j.event_id = e.id
                    AND j.status IN ('pending', 'running'))
"""
UNEMBEDDED_EVENTS = f"""
SELECT e.id, e.seq FROM events e
WHERE e.tenant = %(tenant)s AND e.seq > %(after_event)s AND {_EVENT_WAITS}
ORDER BY e.seq LIMIT %(limit)s
"""
UNEMBEDDED_COUNT = f"""
SELECT
    (SELECT count(*) FROM records r
     WHERE r.tenant = %(tenant)s AND r.actor = %(actor)s AND r.status <> 'deleted'
         AND NOT EXISTS (SELECT 1 FROM record_vectors v
                         WHERE v.tenant = r.tenant AND v.record_id = r.id)) AS records,
    (SELECT count(*) FROM events e
     WHERE e.tenant = %(tenant)s AND e.actor = %(actor)s AND {_EVENT_WAITS}) AS events
"""
RECORD_STATE = """
SELECT id, status, valid_until FROM records WHERE tenant = %(tenant)s AND id = ANY(%(keys)s)
"""
