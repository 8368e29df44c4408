"""The named SQL of thread state on SQLite (the flows of `remem.store.flows.thread` run it).

The tables come from `store/sqlite/migrations/0002_thread.sql`. Every write
runs inside `BEGIN IMMEDIATE`, which holds the database's write lock for the
whole transaction: a row read in it cannot change before the commit, so
`LOCK_TOOL_CALL` is a plain read here and the re-checks of retention always
find what the SELECT before them found. Retention, which may run for every
tenant, passes NULL for "all".
"""

from __future__ import annotations

from remem.store.flows.thread import CHECKPOINT_COLUMNS, STATE_COLUMNS, TOOL_CALL_COLUMNS
from remem.store.sqlite import sql as store_sql

_KEY_CP = "tenant = :tenant AND actor = :actor AND workflow = :workflow"

# -- checkpoints: a conditional write, never read-then-write -------------------------------

INSERT_CHECKPOINT = f"""
INSERT INTO checkpoints (tenant, actor, workflow, version, {STATE_COLUMNS},
                         created_at, updated_at, expires_at)
VALUES (:tenant, :actor, :workflow, 1, :step, :completed_steps, :pending_approval,
        :tool_call_id, :idempotency_key, :artifacts, :last_verified_outcome, :data,
        :at, :at, :expires)
ON CONFLICT (tenant, actor, workflow) DO NOTHING
"""
UPDATE_CHECKPOINT = f"""
UPDATE checkpoints
SET version = version + 1, step = :step, completed_steps = :completed_steps,
    pending_approval = :pending_approval, tool_call_id = :tool_call_id,
    idempotency_key = :idempotency_key, artifacts = :artifacts,
    last_verified_outcome = :last_verified_outcome, data = :data, updated_at = :at,
    expires_at = :expires
WHERE {_KEY_CP} AND version = :version
"""
GET_CHECKPOINT = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE {_KEY_CP}"
CHECKPOINT_VERSION = f"SELECT version FROM checkpoints WHERE {_KEY_CP}"
LIST_CHECKPOINTS = f"""
SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE tenant = :tenant AND actor = :actor
ORDER BY updated_at DESC, workflow LIMIT :limit
"""
# workflows named in [low, high), by name descending: a prefix, paged by a name (`scan`)
SCAN_CHECKPOINTS = f"""
SELECT {CHECKPOINT_COLUMNS} FROM checkpoints
WHERE tenant = :tenant AND actor = :actor AND workflow >= :low AND workflow < :high
ORDER BY workflow DESC LIMIT :limit
"""
DELETE_CHECKPOINTS = """
DELETE FROM checkpoints
WHERE tenant = :tenant AND actor = :actor AND workflow >= :low AND workflow < :high
"""

# -- the tool-call ledger ------------------------------------------------------------------

_KEY_TC = (
    "tenant = :tenant AND actor = :actor AND workflow = :workflow "
    "AND idempotency_key = :idempotency_key"
)

INSERT_TOOL_CALL = """
INSERT INTO tool_calls (tenant, actor, workflow, idempotency_key, tool_call_id, status,
                        request, started_at, expires_at)
VALUES (:tenant, :actor, :workflow, :idempotency_key, :tool_call_id, 'started', :request,
        :at, :expires)
ON CONFLICT (tenant, actor, workflow, idempotency_key) DO NOTHING
"""
GET_TOOL_CALL = f"SELECT {TOOL_CALL_COLUMNS} FROM tool_calls WHERE {_KEY_TC}"
LOCK_TOOL_CALL = GET_TOOL_CALL  # the transaction's write lock already holds the row
# a second begin of an open call puts its first attempt in doubt
REBEGIN_TOOL_CALL = f"""
UPDATE tool_calls
SET attempts = attempts + 1,
    status = CASE WHEN status = 'started' THEN 'unknown' ELSE status END
WHERE {_KEY_TC}
"""
COMPLETE_TOOL_CALL = f"""
UPDATE tool_calls
SET status = 'completed', result = :result, completed_at = :at,
    expires_at = coalesce(:expires, expires_at)
WHERE {_KEY_TC} AND status != 'completed'
"""
DELETE_TOOL_CALL = f"DELETE FROM tool_calls WHERE {_KEY_TC}"
LIST_TOOL_CALLS = f"""
SELECT {TOOL_CALL_COLUMNS} FROM tool_calls
WHERE tenant = :tenant AND actor = :actor AND (:workflow IS NULL OR workflow = :workflow)
  AND (:unresolved = 0 OR status != 'completed')
ORDER BY started_at, workflow, idempotency_key LIMIT :limit
"""

# -- retention -----------------------------------------------------------------------------

# `tenant` NULL: every tenant's
EXPIRED_CHECKPOINTS = """
SELECT c.tenant, c.actor, c.workflow, c.pending_approval IS NOT NULL AS pending,
       EXISTS (SELECT 1 FROM tool_calls t
               WHERE t.tenant = c.tenant AND t.actor = c.actor AND t.workflow = c.workflow
                 AND t.status != 'completed') AS unresolved
FROM checkpoints c
WHERE c.expires_at IS NOT NULL AND c.expires_at <= :now
  AND (:tenant IS NULL OR c.tenant = :tenant)
ORDER BY c.tenant, c.actor, c.workflow
"""
# the hold checked again as the row goes (under the write lock, it is what the SELECT saw)
DELETE_EXPIRED_CHECKPOINT = f"""
DELETE FROM checkpoints AS c
WHERE {_KEY_CP} AND c.expires_at <= :now AND c.pending_approval IS NULL
  AND NOT EXISTS (SELECT 1 FROM tool_calls t
                  WHERE t.tenant = c.tenant AND t.actor = c.actor AND t.workflow = c.workflow
                    AND t.status != 'completed')
"""
DELETE_WORKFLOW_CALLS = f"DELETE FROM tool_calls WHERE {_KEY_CP} AND status = 'completed'"
# tool calls past expiry whose workflow has no checkpoint left to resume it
EXPIRED_ORPHAN_CALLS = """
SELECT t.tenant, t.actor, t.workflow, t.idempotency_key, t.status
FROM tool_calls t
WHERE t.expires_at IS NOT NULL AND t.expires_at <= :now
  AND (:tenant IS NULL OR t.tenant = :tenant)
  AND NOT EXISTS (SELECT 1 FROM checkpoints c
                  WHERE c.tenant = t.tenant AND c.actor = t.actor AND c.workflow = t.workflow)
ORDER BY t.tenant, t.actor, t.workflow, t.idempotency_key
"""
DELETE_EXPIRED_CALL = f"""
DELETE FROM tool_calls WHERE {_KEY_TC} AND status = 'completed' AND expires_at <= :now
"""

# -- erasure: the store erases and counts an actor's thread state with the rest of it ------

FORGET_CHECKPOINTS = store_sql.FORGET_CHECKPOINTS
FORGET_TOOL_CALLS = store_sql.FORGET_TOOL_CALLS
COUNT_ACTOR_CHECKPOINTS = store_sql.COUNT_ACTOR_CHECKPOINTS
COUNT_ACTOR_TOOL_CALLS = store_sql.COUNT_ACTOR_TOOL_CALLS
