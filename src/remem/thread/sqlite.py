"""Thread state on the SQLite store: checkpoints and the tool-call ledger.

Runs on an open `SQLiteStore` (its connection, write lock and migrations;
the tables come from `sqlite_migrations/0002_thread.sql`). Every write is one
`BEGIN IMMEDIATE` transaction, so a check and the write that depends on it
happen under the database's write lock: optimistic concurrency is a
conditional `UPDATE ... WHERE version = ?`, and a ledger row is claimed with
`INSERT ... ON CONFLICT DO NOTHING`, never read-then-write.

Every statement is scoped by (tenant, actor): a workflow of another actor or
tenant is simply not there.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from remem.errors import ConflictError, NotFound
from remem.store.sqlite import SQLiteStore
from remem.thread.checkpoints import (
    MAX_PAYLOAD_BYTES,
    MAX_STATE_BYTES,
    Begun,
    CallStatus,
    Checkpoint,
    CheckpointConflict,
    CheckpointState,
    ExpiryReport,
    Held,
    ToolCall,
    encode_json,
    retention_hold,
)
from remem.timeutil import parse_time, to_db, utcnow

# -- named SQL ----------------------------------------------------------------------------

_CP_COLUMNS = (
    "step, completed_steps, pending_approval, tool_call_id, idempotency_key, artifacts, "
    "last_verified_outcome, data"
)
_CP_SELECT = (
    f"SELECT tenant, actor, workflow, version, {_CP_COLUMNS}, created_at, updated_at, "
    "expires_at FROM checkpoints"
)
_KEY_CP = "tenant = ? AND actor = ? AND workflow = ?"

INSERT_CHECKPOINT = f"""
INSERT INTO checkpoints (tenant, actor, workflow, version, {_CP_COLUMNS},
                         created_at, updated_at, expires_at)
VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant, actor, workflow) DO NOTHING
"""
UPDATE_CHECKPOINT = f"""
UPDATE checkpoints
SET version = version + 1, step = ?, completed_steps = ?, pending_approval = ?,
    tool_call_id = ?, idempotency_key = ?, artifacts = ?, last_verified_outcome = ?, data = ?,
    updated_at = ?, expires_at = ?
WHERE {_KEY_CP} AND version = ?
"""
GET_CHECKPOINT = f"{_CP_SELECT} WHERE {_KEY_CP}"
CHECKPOINT_VERSION = f"SELECT version FROM checkpoints WHERE {_KEY_CP}"
LIST_CHECKPOINTS = (
    f"{_CP_SELECT} WHERE tenant = ? AND actor = ? ORDER BY updated_at DESC, workflow LIMIT ?"
)
DELETE_CHECKPOINT = f"DELETE FROM checkpoints WHERE {_KEY_CP}"

_TC_SELECT = (
    "SELECT tenant, actor, workflow, idempotency_key, tool_call_id, status, attempts, request, "
    "result, started_at, completed_at, expires_at FROM tool_calls"
)
_KEY_TC = "tenant = ? AND actor = ? AND workflow = ? AND idempotency_key = ?"

INSERT_TOOL_CALL = """
INSERT INTO tool_calls (tenant, actor, workflow, idempotency_key, tool_call_id, status,
                        request, started_at, expires_at)
VALUES (?, ?, ?, ?, ?, 'started', ?, ?, ?)
ON CONFLICT (tenant, actor, workflow, idempotency_key) DO NOTHING
"""
# a second begin of an open call puts its first attempt in doubt
REBEGIN_TOOL_CALL = f"""
UPDATE tool_calls
SET attempts = attempts + 1,
    status = CASE WHEN status = 'started' THEN 'unknown' ELSE status END
WHERE {_KEY_TC}
"""
COMPLETE_TOOL_CALL = f"""
UPDATE tool_calls
SET status = 'completed', result = ?, completed_at = ?, expires_at = coalesce(?, expires_at)
WHERE {_KEY_TC} AND status != 'completed'
"""
GET_TOOL_CALL = f"{_TC_SELECT} WHERE {_KEY_TC}"
DELETE_TOOL_CALL = f"DELETE FROM tool_calls WHERE {_KEY_TC}"
LIST_TOOL_CALLS = f"""
{_TC_SELECT}
WHERE tenant = ? AND actor = ? AND (? IS NULL OR workflow = ?)
  AND (? = 0 OR status != 'completed')
ORDER BY started_at, workflow, idempotency_key LIMIT ?
"""

EXPIRED_CHECKPOINTS = """
SELECT c.tenant, c.actor, c.workflow, c.pending_approval IS NOT NULL AS pending,
       EXISTS (SELECT 1 FROM tool_calls t
               WHERE t.tenant = c.tenant AND t.actor = c.actor AND t.workflow = c.workflow
                 AND t.status != 'completed') AS unresolved
FROM checkpoints c
WHERE c.expires_at IS NOT NULL AND c.expires_at <= ? AND (? IS NULL OR c.tenant = ?)
ORDER BY c.tenant, c.actor, c.workflow
"""
DELETE_WORKFLOW_CALLS = """
DELETE FROM tool_calls WHERE tenant = ? AND actor = ? AND workflow = ? AND status = 'completed'
"""
# tool calls past expiry whose workflow has no checkpoint left to resume it
EXPIRED_ORPHAN_CALLS = """
SELECT t.tenant, t.actor, t.workflow, t.idempotency_key, t.status
FROM tool_calls t
WHERE t.expires_at IS NOT NULL AND t.expires_at <= ? AND (? IS NULL OR t.tenant = ?)
  AND NOT EXISTS (SELECT 1 FROM checkpoints c
                  WHERE c.tenant = t.tenant AND c.actor = t.actor AND c.workflow = t.workflow)
ORDER BY t.tenant, t.actor, t.workflow, t.idempotency_key
"""

FORGET_CHECKPOINTS = "DELETE FROM checkpoints WHERE tenant = ? AND actor = ?"
FORGET_TOOL_CALLS = "DELETE FROM tool_calls WHERE tenant = ? AND actor = ?"
COUNT_ACTOR_CHECKPOINTS = "SELECT count(*) FROM checkpoints WHERE tenant = ? AND actor = ?"
COUNT_ACTOR_TOOL_CALLS = "SELECT count(*) FROM tool_calls WHERE tenant = ? AND actor = ?"


class SQLiteThreadStore:
    """Checkpoints and tool calls in the database of one `SQLiteStore`.

    Shares the store's connection and lock, so it is as thread-safe as the
    store; any number of processes may use the same file.
    """

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self.path = store.path

    # -- checkpoints ------------------------------------------------------------------

    def checkpoint_save(
        self,
        tenant: str,
        actor: str,
        workflow: str,
        state: CheckpointState,
        expected_version: int | None,
        *,
        now: datetime | None = None,
        expires_at: datetime | None = None,
    ) -> Checkpoint:
        """Write a workflow's checkpoint if nobody else saved since `expected_version`.

        `expected_version=None` creates it and fails if it exists; otherwise the
        save applies only while the stored version is `expected_version`, and
        the stored version becomes one more. A stale writer gets
        `CheckpointConflict` naming the current version; nothing is written.
        """
        at = to_db(now or utcnow())
        values = _state_params(state)
        expiry = to_db(expires_at)
        with self._store._tx() as db:
            if expected_version is None:
                cur = db.execute(
                    INSERT_CHECKPOINT, (tenant, actor, workflow, *values, at, at, expiry)
                )
            else:
                cur = db.execute(
                    UPDATE_CHECKPOINT,
                    (*values, at, expiry, tenant, actor, workflow, expected_version),
                )
            if cur.rowcount != 1:
                current = db.execute(CHECKPOINT_VERSION, (tenant, actor, workflow)).fetchone()
                raise _conflict(actor, workflow, expected_version, current and current[0])
            row = db.execute(GET_CHECKPOINT, (tenant, actor, workflow)).fetchone()
        return _checkpoint(row)

    def checkpoint_load(self, tenant: str, actor: str, workflow: str) -> Checkpoint | None:
        """The checkpoint of one workflow of (tenant, actor), or None."""
        rows = self._store._rows(GET_CHECKPOINT, (tenant, actor, workflow))
        return _checkpoint(rows[0]) if rows else None

    def checkpoint_list(self, tenant: str, actor: str, limit: int = 1000) -> list[Checkpoint]:
        """The checkpoints of (tenant, actor), most recently saved first."""
        return [_checkpoint(r) for r in self._store._rows(LIST_CHECKPOINTS, (tenant, actor, limit))]

    # -- the tool-call ledger ---------------------------------------------------------------

    def begin_tool_call(
        self,
        tenant: str,
        actor: str,
        workflow: str,
        idempotency_key: str,
        tool_call_id: str,
        request: Any,
        *,
        now: datetime | None = None,
        expires_at: datetime | None = None,
    ) -> Begun:
        """Claim a side effect before performing it; see `Begun`.

        The first begin of a key writes a `started` row and returns
        `begun=True`. Any later begin of that key returns the existing row with
        `begun=False` and never writes a second one; if the row was still
        `started`, it becomes `unknown` (whoever begins again believes the first
        attempt is gone, so its outcome is now in doubt). A later begin whose
        request differs from the first is refused: one key names one operation.
        """
        body = encode_json("tool call request", request, MAX_PAYLOAD_BYTES)
        key = (tenant, actor, workflow, idempotency_key)
        with self._store._tx() as db:
            cur = db.execute(
                INSERT_TOOL_CALL,
                (*key, tool_call_id, body, to_db(now or utcnow()), to_db(expires_at)),
            )
            if cur.rowcount == 1:
                return Begun(_tool_call(db.execute(GET_TOOL_CALL, key).fetchone()), begun=True)
            existing = db.execute(GET_TOOL_CALL, key).fetchone()
            if existing["request"] != body:
                raise ConflictError(
                    f"idempotency key {idempotency_key!r} of workflow {workflow!r} was begun "
                    f"for a different request (its status: {existing['status']}); one key "
                    "names one operation, so use a new key for a new request"
                )
            db.execute(REBEGIN_TOOL_CALL, key)
            return Begun(_tool_call(db.execute(GET_TOOL_CALL, key).fetchone()), begun=False)

    def complete_tool_call(
        self,
        tenant: str,
        actor: str,
        workflow: str,
        idempotency_key: str,
        result: Any,
        *,
        now: datetime | None = None,
        expires_at: datetime | None = None,
    ) -> ToolCall:
        """Record a side effect's result; the call is `completed` from now on.

        Completing a `started` or `unknown` call is how a reconciler records an
        outcome it verified. Completing again with the same result changes
        nothing; with a different result it is a `ConflictError`.
        """
        body = encode_json("tool call result", result, MAX_PAYLOAD_BYTES)
        key = (tenant, actor, workflow, idempotency_key)
        with self._store._tx() as db:
            cur = db.execute(
                COMPLETE_TOOL_CALL, (body, to_db(now or utcnow()), to_db(expires_at), *key)
            )
            row = db.execute(GET_TOOL_CALL, key).fetchone()
            if row is None:
                raise _no_call(actor, workflow, idempotency_key)
            if cur.rowcount == 0 and row["result"] != body:
                raise ConflictError(
                    f"tool call {idempotency_key!r} of workflow {workflow!r} was already "
                    "completed with a different result; the first result stands"
                )
        return _tool_call(row)

    def release_tool_call(
        self, tenant: str, actor: str, workflow: str, idempotency_key: str
    ) -> ToolCall:
        """Remove an open call whose side effect was verified not to have happened.

        After a release the key is `never_started` again and may be begun anew.
        A completed call cannot be released: its result is the record.
        """
        key = (tenant, actor, workflow, idempotency_key)
        with self._store._tx() as db:
            row = db.execute(GET_TOOL_CALL, key).fetchone()
            if row is None:
                raise _no_call(actor, workflow, idempotency_key)
            if row["status"] == CallStatus.COMPLETED:
                raise ConflictError(
                    f"tool call {idempotency_key!r} of workflow {workflow!r} is completed; "
                    "its result is the record and it cannot be released"
                )
            db.execute(DELETE_TOOL_CALL, key)
        return _tool_call(row)

    def tool_call_status(
        self, tenant: str, actor: str, workflow: str, idempotency_key: str
    ) -> ToolCall | None:
        """The ledger row of one key, or None if it was never begun."""
        rows = self._store._rows(GET_TOOL_CALL, (tenant, actor, workflow, idempotency_key))
        return _tool_call(rows[0]) if rows else None

    def tool_call_list(
        self,
        tenant: str,
        actor: str,
        workflow: str | None = None,
        *,
        unresolved: bool = False,
        limit: int = 1000,
    ) -> list[ToolCall]:
        """Tool calls of (tenant, actor), oldest first; `unresolved`: open ones only."""
        params = (tenant, actor, workflow, workflow, int(unresolved), limit)
        return [_tool_call(r) for r in self._store._rows(LIST_TOOL_CALLS, params)]

    # -- retention and erasure ----------------------------------------------------------------

    def expire(self, now: datetime, tenant: str | None = None) -> ExpiryReport:
        """Delete thread state past its `expires_at` (all tenants when `tenant` is None).

        A workflow expires as a whole: its checkpoint with its completed tool
        calls. One waiting for an approval or holding a tool call of unknown
        outcome is kept and reported in `held`, never expired silently. Tool
        calls of a workflow with no checkpoint expire on their own date, on the
        same terms.
        """
        at = to_db(now)
        held: list[Held] = []
        checkpoints = calls = 0
        with self._store._tx() as db:
            for r in db.execute(EXPIRED_CHECKPOINTS, (at, tenant, tenant)).fetchall():
                reason = retention_hold(bool(r["pending"]), bool(r["unresolved"]))
                wf = (r["tenant"], r["actor"], r["workflow"])
                if reason is not None:
                    held.append(Held(r["actor"], r["workflow"], reason))
                    continue
                checkpoints += db.execute(DELETE_CHECKPOINT, wf).rowcount
                calls += db.execute(DELETE_WORKFLOW_CALLS, wf).rowcount
            for r in db.execute(EXPIRED_ORPHAN_CALLS, (at, tenant, tenant)).fetchall():
                key = (r["tenant"], r["actor"], r["workflow"], r["idempotency_key"])
                if r["status"] != CallStatus.COMPLETED:
                    held.append(Held(r["actor"], r["workflow"], "unresolved_tool_call", key[3]))
                    continue
                calls += db.execute(DELETE_TOOL_CALL, key).rowcount
        return ExpiryReport(checkpoints, calls, tuple(held))

    def forget_actor(self, tenant: str, actor: str) -> dict[str, int]:
        """Erase every checkpoint and tool call of one actor (held ones too)."""
        with self._store._tx() as db:
            return erase_actor_rows(db, tenant, actor)


def erase_actor_rows(db: sqlite3.Connection, tenant: str, actor: str) -> dict[str, int]:
    """Delete one actor's thread state inside the caller's transaction; counts by table.

    For `SQLiteStore.forget_actor`, so that forgetting a subject reaches its
    checkpoints and tool calls in the same transaction as its records.
    """
    return {
        "checkpoints": db.execute(FORGET_CHECKPOINTS, (tenant, actor)).rowcount,
        "tool_calls": db.execute(FORGET_TOOL_CALLS, (tenant, actor)).rowcount,
    }


def count_actor_rows(store: SQLiteStore, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    return {
        "checkpoints": int(store._rows(COUNT_ACTOR_CHECKPOINTS, (tenant, actor))[0][0]),
        "tool_calls": int(store._rows(COUNT_ACTOR_TOOL_CALLS, (tenant, actor))[0][0]),
    }


# -- helpers ---------------------------------------------------------------------------------


def _state_params(state: CheckpointState) -> tuple[Any, ...]:
    encode_json("checkpoint state", state.as_dict(), MAX_STATE_BYTES)  # size and JSON check
    approval = state.pending_approval
    outcome = state.last_verified_outcome
    return (
        state.step,
        _json(list(state.completed_steps)),
        None if approval is None else _json(dict(approval)),
        state.tool_call_id,
        state.idempotency_key,
        _json(list(state.artifacts)),
        None if outcome is None else _json(outcome),
        _json(dict(state.data)),
    )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _conflict(
    actor: str, workflow: str, expected: int | None, current: int | None
) -> CheckpointConflict:
    if expected is None:
        return CheckpointConflict(
            f"workflow {workflow!r} of actor {actor!r} already has a checkpoint at version "
            f"{current}; load it and save with expected version {current}",
            current,
        )
    if current is None:
        return CheckpointConflict(
            f"workflow {workflow!r} of actor {actor!r} has no checkpoint (expected version "
            f"{expected}); save with no expected version to create it",
            None,
        )
    return CheckpointConflict(
        f"checkpoint of workflow {workflow!r} is at version {current}, not {expected}: "
        f"another writer saved first; load it, re-apply your change and save with "
        f"expected version {current}",
        current,
    )


def _no_call(actor: str, workflow: str, key: str) -> NotFound:
    return NotFound(
        f"no tool call with idempotency key {key!r} in workflow {workflow!r} of actor "
        f"{actor!r}; begin it first"
    )


def _checkpoint(r: sqlite3.Row) -> Checkpoint:
    return Checkpoint(
        tenant=r["tenant"],
        actor=r["actor"],
        workflow=r["workflow"],
        version=r["version"],
        state=CheckpointState(
            step=r["step"],
            completed_steps=tuple(json.loads(r["completed_steps"])),
            pending_approval=(
                json.loads(r["pending_approval"]) if r["pending_approval"] is not None else None
            ),
            tool_call_id=r["tool_call_id"],
            idempotency_key=r["idempotency_key"],
            artifacts=tuple(json.loads(r["artifacts"])),
            last_verified_outcome=(
                json.loads(r["last_verified_outcome"])
                if r["last_verified_outcome"] is not None
                else None
            ),
            data=json.loads(r["data"]),
        ),
        created_at=parse_time(r["created_at"]),
        updated_at=parse_time(r["updated_at"]),
        expires_at=parse_time(r["expires_at"]) if r["expires_at"] else None,
    )


def _tool_call(r: sqlite3.Row) -> ToolCall:
    return ToolCall(
        tenant=r["tenant"],
        actor=r["actor"],
        workflow=r["workflow"],
        idempotency_key=r["idempotency_key"],
        tool_call_id=r["tool_call_id"],
        status=CallStatus(r["status"]),
        attempts=r["attempts"],
        request=json.loads(r["request"]),
        result=json.loads(r["result"]) if r["result"] is not None else None,
        started_at=parse_time(r["started_at"]),
        completed_at=parse_time(r["completed_at"]) if r["completed_at"] else None,
        expires_at=parse_time(r["expires_at"]) if r["expires_at"] else None,
    )
