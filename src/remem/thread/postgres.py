"""Thread state on the PostgreSQL store: checkpoints and the tool-call ledger.

Runs on an open `PostgresStore` (its pool, tenant-bound transactions and
migrations; the tables come from `postgres_migrations/0005_thread.sql`, the
SQL from `remem.thread.postgres_sql`). Semantics are those of
`SQLiteThreadStore`; what differs is how they hold with many writers and no
database-wide write lock, at PostgreSQL's default READ COMMITTED:

- optimistic concurrency is a conditional `UPDATE ... WHERE version = %s`. A
  second writer of one version waits for the first to commit, finds the
  version moved, and matches nothing: a `CheckpointConflict`, never an
  overwrite;
- a ledger row is claimed with `INSERT ... ON CONFLICT DO NOTHING`: of any
  number of concurrent begins exactly one inserts (and performs); the others
  wait for it to commit and then lock and read its row.

Every transaction is bound to its tenant (`PostgresStore._tx`), so row-level
security confines it to that tenant's rows even if a statement forgot its
`WHERE tenant = %s`; every statement also names (tenant, actor), so a
workflow of another actor is simply not there.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from remem.errors import ConflictError
from remem.thread import postgres_sql as q
from remem.thread.checkpoints import (
    MAX_PAYLOAD_BYTES,
    Begun,
    CallStatus,
    Checkpoint,
    CheckpointState,
    ExpiryReport,
    Held,
    ToolCall,
    encode_json,
    retention_hold,
)

# the messages and parameters both backends share (the same errors, word for word)
from remem.thread.sqlite import _conflict, _no_call, _state_params
from remem.timeutil import parse_time, utcnow

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import DictRow

    from remem.store.postgres import PostgresStore

    Cursor = psycopg.Cursor[DictRow]

BEGIN_TRIES = 3  # a begin whose conflicting row was released before it could be read


class PostgresThreadStore:
    """Checkpoints and tool calls in the database of one `PostgresStore`.

    Shares the store's connection pool, so it is as thread-safe as the store;
    any number of processes may use the same database.
    """

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    # -- checkpoints -----------------------------------------------------------------------

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
        at = now or utcnow()
        values = _state_params(state)
        key = (tenant, actor, workflow)
        with self._store._tx(tenant) as cur:
            if expected_version is None:
                params = (*key, *values, at, at, expires_at)
                written = cur.execute(q.INSERT_CHECKPOINT, params).rowcount
            else:
                params = (*values, at, expires_at, *key, expected_version)
                written = cur.execute(q.UPDATE_CHECKPOINT, params).rowcount
            if written != 1:
                current = cur.execute(q.CHECKPOINT_VERSION, key).fetchone()
                found = None if current is None else int(current["version"])
                raise _conflict(actor, workflow, expected_version, found)
            row = cur.execute(q.GET_CHECKPOINT, key).fetchone()
        assert row is not None  # written in this transaction
        return _checkpoint(row)

    def checkpoint_load(self, tenant: str, actor: str, workflow: str) -> Checkpoint | None:
        """The checkpoint of one workflow of (tenant, actor), or None."""
        rows = self._store._rows(tenant, q.GET_CHECKPOINT, (tenant, actor, workflow))
        return _checkpoint(rows[0]) if rows else None

    def checkpoint_list(self, tenant: str, actor: str, limit: int = 1000) -> list[Checkpoint]:
        """The checkpoints of (tenant, actor), most recently saved first."""
        rows = self._store._rows(tenant, q.LIST_CHECKPOINTS, (tenant, actor, limit))
        return [_checkpoint(r) for r in rows]

    # -- the tool-call ledger --------------------------------------------------------------

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
        at = now or utcnow()
        with self._store._tx(tenant) as cur:
            for _ in range(BEGIN_TRIES):
                params = (*key, tool_call_id, body, at, expires_at)
                if cur.execute(q.INSERT_TOOL_CALL, params).rowcount == 1:
                    return Begun(_tool_call(_one(cur, q.GET_TOOL_CALL, key)), begun=True)
                # locked, so that the request compared is the one the re-begin counts on
                existing = cur.execute(q.LOCK_TOOL_CALL, key).fetchone()
                if existing is not None:
                    break
            else:  # begun and released over and over while this one tried
                raise ConflictError(
                    f"idempotency key {idempotency_key!r} of workflow {workflow!r} is being "
                    "begun and released concurrently; retry"
                )
            if existing["request"] != body:
                raise ConflictError(
                    f"idempotency key {idempotency_key!r} of workflow {workflow!r} was begun "
                    f"for a different request (its status: {existing['status']}); one key "
                    "names one operation, so use a new key for a new request"
                )
            cur.execute(q.REBEGIN_TOOL_CALL, key)
            return Begun(_tool_call(_one(cur, q.GET_TOOL_CALL, key)), begun=False)

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
        with self._store._tx(tenant) as cur:
            params = (body, now or utcnow(), expires_at, *key)
            completed = cur.execute(q.COMPLETE_TOOL_CALL, params).rowcount
            row = cur.execute(q.GET_TOOL_CALL, key).fetchone()
            if row is None:
                raise _no_call(actor, workflow, idempotency_key)
            if completed == 0 and row["result"] != body:
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
        with self._store._tx(tenant) as cur:
            row = cur.execute(q.LOCK_TOOL_CALL, key).fetchone()
            if row is None:
                raise _no_call(actor, workflow, idempotency_key)
            if row["status"] == CallStatus.COMPLETED:
                raise ConflictError(
                    f"tool call {idempotency_key!r} of workflow {workflow!r} is completed; "
                    "its result is the record and it cannot be released"
                )
            cur.execute(q.DELETE_TOOL_CALL, key)
        return _tool_call(row)

    def tool_call_status(
        self, tenant: str, actor: str, workflow: str, idempotency_key: str
    ) -> ToolCall | None:
        """The ledger row of one key, or None if it was never begun."""
        key = (tenant, actor, workflow, idempotency_key)
        rows = self._store._rows(tenant, q.GET_TOOL_CALL, key)
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
        params = (tenant, actor, workflow, workflow, unresolved, limit)
        return [_tool_call(r) for r in self._store._rows(tenant, q.LIST_TOOL_CALLS, params)]

    # -- retention and erasure -------------------------------------------------------------

    def expire(self, now: datetime, tenant: str | None = None) -> ExpiryReport:
        """Delete thread state past its `expires_at` (all tenants when `tenant` is None).

        A workflow expires as a whole: its checkpoint with its completed tool
        calls. One waiting for an approval or holding a tool call of unknown
        outcome is kept and reported in `held`, never expired silently. Tool
        calls of a workflow with no checkpoint expire on their own date, on the
        same terms. A workflow saved or begun on while this runs is decided on
        its newest state: it is kept if that holds it.
        """
        held: list[Held] = []
        checkpoints = calls = 0
        # `None` is the store's ALL_TENANTS: retention for every tenant, by design
        with self._store._tx(tenant) as cur:
            for r in cur.execute(q.EXPIRED_CHECKPOINTS, (now, tenant, tenant)).fetchall():
                reason = retention_hold(bool(r["pending"]), bool(r["unresolved"]))
                wf = (r["tenant"], r["actor"], r["workflow"])
                if reason is not None:
                    held.append(Held(r["actor"], r["workflow"], reason))
                    continue
                gone = cur.execute(q.DELETE_EXPIRED_CHECKPOINT, (*wf, now)).rowcount
                if gone == 0:  # a tool call was begun since: it holds the workflow
                    held.append(Held(r["actor"], r["workflow"], "unresolved_tool_call"))
                    continue
                checkpoints += gone
                calls += cur.execute(q.DELETE_WORKFLOW_CALLS, wf).rowcount
            for r in cur.execute(q.EXPIRED_ORPHAN_CALLS, (now, tenant, tenant)).fetchall():
                key = (r["tenant"], r["actor"], r["workflow"], r["idempotency_key"])
                if r["status"] != CallStatus.COMPLETED:
                    held.append(Held(r["actor"], r["workflow"], "unresolved_tool_call", key[3]))
                    continue
                calls += cur.execute(q.DELETE_EXPIRED_CALL, (*key, now)).rowcount
        return ExpiryReport(checkpoints, calls, tuple(held))

    def forget_actor(self, tenant: str, actor: str) -> dict[str, int]:
        """Erase every checkpoint and tool call of one actor (held ones too)."""
        with self._store._tx(tenant) as cur:
            return erase_actor_rows(cur, tenant, actor)


def erase_actor_rows(cur: Cursor, tenant: str, actor: str) -> dict[str, int]:
    """Delete one actor's thread state inside the caller's transaction; counts by table.

    For `PostgresStore.forget_actor`, so that forgetting a subject reaches its
    checkpoints and tool calls in the same transaction as its records.
    """
    return {
        "checkpoints": cur.execute(q.FORGET_CHECKPOINTS, (tenant, actor)).rowcount,
        "tool_calls": cur.execute(q.FORGET_TOOL_CALLS, (tenant, actor)).rowcount,
    }


def count_actor_rows(store: PostgresStore, tenant: str, actor: str) -> dict[str, int]:
    """How much thread state of one actor remains; for verifying an erasure."""
    counts = {
        "checkpoints": q.COUNT_ACTOR_CHECKPOINTS,
        "tool_calls": q.COUNT_ACTOR_TOOL_CALLS,
    }
    return {
        name: int(store._rows(tenant, sql, (tenant, actor))[0]["count"])
        for name, sql in counts.items()
    }


# -- rows ----------------------------------------------------------------------------------


def _one(cur: Cursor, sql: str, params: tuple[Any, ...]) -> DictRow:
    row = cur.execute(sql, params).fetchone()
    assert row is not None  # read inside the transaction that wrote or locked it
    return row


def _checkpoint(r: DictRow) -> Checkpoint:
    return Checkpoint(
        tenant=r["tenant"],
        actor=r["actor"],
        workflow=r["workflow"],
        version=r["version"],
        state=CheckpointState(
            step=r["step"],
            completed_steps=tuple(json.loads(r["completed_steps"])),
            pending_approval=_json_or_none(r["pending_approval"]),
            tool_call_id=r["tool_call_id"],
            idempotency_key=r["idempotency_key"],
            artifacts=tuple(json.loads(r["artifacts"])),
            last_verified_outcome=_json_or_none(r["last_verified_outcome"]),
            data=json.loads(r["data"]),
        ),
        created_at=parse_time(r["created_at"]),
        updated_at=parse_time(r["updated_at"]),
        expires_at=_time_or_none(r["expires_at"]),
    )


def _tool_call(r: DictRow) -> ToolCall:
    return ToolCall(
        tenant=r["tenant"],
        actor=r["actor"],
        workflow=r["workflow"],
        idempotency_key=r["idempotency_key"],
        tool_call_id=r["tool_call_id"],
        status=CallStatus(r["status"]),
        attempts=r["attempts"],
        request=json.loads(r["request"]),
        result=_json_or_none(r["result"]),
        started_at=parse_time(r["started_at"]),
        completed_at=_time_or_none(r["completed_at"]),
        expires_at=_time_or_none(r["expires_at"]),
    )


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _time_or_none(t: datetime | None) -> datetime | None:
    """A timestamptz as psycopg returns it (in the session's zone), in UTC; or None."""
    return None if t is None else parse_time(t)
