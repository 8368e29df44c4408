"""The named SQL of thread state on PostgreSQL (the flows of `remem.store.flows.thread` run it).

The tables come from `store/postgres/migrations/0005_thread.sql`. Every
statement names its tenant even though row-level security already confines a
transaction to one (`PostgresStore._tx`); retention, which may run for every
tenant, passes NULL for "all". Text is ordered with `COLLATE "C"`, byte order,
as SQLite orders it, so both backends list in the same order.
"""

from __future__ import annotations

from remem.store.flows.thread import CHECKPOINT_COLUMNS, STATE_COLUMNS, TOOL_CALL_COLUMNS
from remem.store.postgres import sql as store_sql

_KEY_CP = "tenant = %(tenant)s AND actor = %(actor)s AND workflow = %(workflow)s"

# -- checkpoints: a conditional write, never read-then-write -------------------------------

INSERT_CHECKPOINT = f"""
INSERT INTO checkpoints (tenant, actor, workflow, version, {STATE_COLUMNS},
                         created_at, updated_at, expires_at)
VALUES (%(tenant)s, %(actor)s, %(workflow)s, 1, %(step)s, %(completed_steps)s,
        %(pending_approval)s, %(tool_call_id)s, %(idempotency_key)s, %(artifacts)s,
        %(last_verified_outcome)s, %(data)s, %(at)s, %(at)s, %(expires)s)
ON CONFLICT (tenant, actor, workflow) DO NOTHING
"""
# a concurrent writer holding the row makes this wait, then re-check the version
# on the row it committed: the second of two writers of one version matches nothing
UPDATE_CHECKPOINT = f"""
UPDATE checkpoints
SET version = version + 1, step = %(step)s, completed_steps = %(completed_steps)s,
    pending_approval = %(pending_approval)s, tool_call_id = %(tool_call_id)s,
    idempotency_key = %(idempotency_key)s, artifacts = %(artifacts)s,
    last_verified_outcome = %(last_verified_outcome)s, data = %(data)s, updated_at = %(at)s,
    expires_at = %(expires)s
WHERE {_KEY_CP} AND version = %(version)s
"""
GET_CHECKPOINT = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE {_KEY_CP}"
CHECKPOINT_VERSION = f"SELECT version FROM checkpoints WHERE {_KEY_CP}"
LIST_CHECKPOINTS = f"""
SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE tenant = %(tenant)s AND actor = %(actor)s
ORDER BY updated_at DESC, workflow COLLATE "C" LIMIT %(limit)s
"""
# workflows named in [low, high) in byte order, by name descending (`scan`)
SCAN_CHECKPOINTS = f"""
SELECT {CHECKPOINT_COLUMNS} FROM checkpoints
WHERE tenant = %(tenant)s AND actor = %(actor)s
  AND workflow COLLATE "C" >= %(low)s AND workflow COLLATE "C" < %(high)s
ORDER BY workflow COLLATE "C" DESC LIMIT %(limit)s
"""
DELETE_CHECKPOINTS = """
DELETE FROM checkpoints
WHERE tenant = %(tenant)s AND actor = %(actor)s
  AND workflow COLLATE "C" >= %(low)s AND workflow COLLATE "C" < %(high)s
"""

# -- the tool-call ledger ------------------------------------------------------------------

_KEY_TC = (
    "tenant = %(tenant)s AND actor = %(actor)s AND workflow = %(workflow)s "
    "AND idempotency_key = %(idempotency_key)s"
)

# exactly one of any number of concurrent begins inserts; the others wait for it
# to commit and then find its row
INSERT_TOOL_CALL = """
INSERT INTO tool_calls (tenant, actor, workflow, idempotency_key, tool_call_id, status,
                        request, started_at, expires_at)
VALUES (%(tenant)s, %(actor)s, %(workflow)s, %(idempotency_key)s, %(tool_call_id)s,
        'started', %(request)s, %(at)s, %(expires)s)
ON CONFLICT (tenant, actor, workflow, idempotency_key) DO NOTHING
"""
GET_TOOL_CALL = f"SELECT {TOOL_CALL_COLUMNS} FROM tool_calls WHERE {_KEY_TC}"
LOCK_TOOL_CALL = f"{GET_TOOL_CALL} FOR UPDATE"
# a second begin of an open call puts its first attempt in doubt
REBEGIN_TOOL_CALL = f"""
UPDATE tool_calls
SET attempts = attempts + 1,
    status = CASE WHEN status = 'started' THEN 'unknown' ELSE status END
WHERE {_KEY_TC}
"""
COMPLETE_TOOL_CALL = f"""
UPDATE tool_calls
SET status = 'completed', result = %(result)s, completed_at = %(at)s,
    expires_at = coalesce(%(expires)s::timestamptz, expires_at)
WHERE {_KEY_TC} AND status <> 'completed'
"""
DELETE_TOOL_CALL = f"DELETE FROM tool_calls WHERE {_KEY_TC}"
LIST_TOOL_CALLS = f"""
SELECT {TOOL_CALL_COLUMNS} FROM tool_calls
WHERE tenant = %(tenant)s AND actor = %(actor)s
  AND (%(workflow)s::text IS NULL OR workflow = %(workflow)s::text)
  AND (NOT %(unresolved)s::boolean OR status <> 'completed')
ORDER BY started_at, workflow COLLATE "C", idempotency_key COLLATE "C" LIMIT %(limit)s
"""

# -- retention -----------------------------------------------------------------------------

# `tenant` NULL: every tenant's; locks the checkpoints it returns, so a
# save waits until this run has decided about its workflow
EXPIRED_CHECKPOINTS = """
SELECT c.tenant, c.actor, c.workflow, c.pending_approval IS NOT NULL AS pending,
       EXISTS (SELECT 1 FROM tool_calls t
               WHERE t.tenant = c.tenant AND t.actor = c.actor AND t.workflow = c.workflow
                 AND t.status <> 'completed') AS unresolved
FROM checkpoints c
WHERE c.expires_at IS NOT NULL AND c.expires_at <= %(now)s
  AND (%(tenant)s::text IS NULL OR c.tenant = %(tenant)s::text)
ORDER BY c.tenant COLLATE "C", c.actor COLLATE "C", c.workflow COLLATE "C"
FOR UPDATE OF c
"""
# the hold is checked again as the row goes: a tool call begun since the SELECT
# above (the ledger is not locked by it) keeps the workflow
DELETE_EXPIRED_CHECKPOINT = f"""
DELETE FROM checkpoints c
WHERE {_KEY_CP} AND c.expires_at <= %(now)s AND c.pending_approval IS NULL
  AND NOT EXISTS (SELECT 1 FROM tool_calls t
                  WHERE t.tenant = c.tenant AND t.actor = c.actor AND t.workflow = c.workflow
                    AND t.status <> 'completed')
"""
DELETE_WORKFLOW_CALLS = f"DELETE FROM tool_calls WHERE {_KEY_CP} AND status = 'completed'"
# tool calls past expiry whose workflow has no checkpoint left to resume it
EXPIRED_ORPHAN_CALLS = """
SELECT t.tenant, t.actor, t.workflow, t.idempotency_key, t.status
FROM tool_calls t
WHERE t.expires_at IS NOT NULL AND t.expires_at <= %(now)s
  AND (%(tenant)s::text IS NULL OR t.tenant = %(tenant)s::text)
  AND NOT EXISTS (SELECT 1 FROM checkpoints c
                  WHERE c.tenant = t.tenant AND c.actor = t.actor AND c.workflow = t.workflow)
ORDER BY t.tenant COLLATE "C", t.actor COLLATE "C", t.workflow COLLATE "C",
         t.idempotency_key COLLATE "C"
"""
DELETE_EXPIRED_CALL = f"""
DELETE FROM tool_calls WHERE {_KEY_TC} AND status = 'completed' AND expires_at <= %(now)s
"""

# -- erasure: the store erases and counts an actor's thread state with the rest of it ------

FORGET_CHECKPOINTS = store_sql.FORGET_CHECKPOINTS
FORGET_TOOL_CALLS = store_sql.FORGET_TOOL_CALLS
COUNT_ACTOR_CHECKPOINTS = store_sql.COUNT_ACTOR_CHECKPOINTS
COUNT_ACTOR_TOOL_CALLS = store_sql.COUNT_ACTOR_TOOL_CALLS
