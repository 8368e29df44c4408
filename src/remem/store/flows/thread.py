"""Thread state on a SQL database, once for every backend.

`ThreadStore` makes every decision about checkpoints and the tool-call ledger:
what a begin finds and returns, when a complete or a release is refused, what
retention deletes and what it holds. A backend (`SQLiteThreadStore`,
`PostgresThreadStore`) supplies only its named SQL (a module that satisfies
`ThreadSQL`: `sqlite_sql.py`, `postgres_sql.py`), its transactions and how
it passes a time. No check is followed by a write that depends on it without
the database holding what was checked:

- optimistic concurrency is a conditional `UPDATE ... WHERE version = :version`: of
  two writers of one version the second matches nothing, a `CheckpointConflict`;
- a ledger row is claimed with `INSERT ... ON CONFLICT DO NOTHING`: of any
  number of concurrent begins exactly one inserts, and performs; the others
  read the row locked (`LOCK_TOOL_CALL`) before counting their attempt;
- retention deletes a workflow with a statement that checks its hold again,
  so one saved or begun on while it runs is decided on its newest state.

Every statement is scoped by (tenant, actor): a workflow of another actor or
tenant is simply not there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar, Protocol

from remem.errors import ConflictError, NotFound, StoreError
from remem.store.flows.backend import Row, Tx
from remem.store.roles import ThreadHost, ThreadState
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
from remem.timeutil import parse_time

BEGIN_TRIES = 3  # a begin whose conflicting row was released before it could be read

# the columns the row readers below expect, selected by both backends' SQL
STATE_COLUMNS = (
    "step, completed_steps, pending_approval, tool_call_id, idempotency_key, artifacts, "
    "last_verified_outcome, data"
)
CHECKPOINT_COLUMNS = (
    f"tenant, actor, workflow, version, {STATE_COLUMNS}, created_at, updated_at, expires_at"
)
TOOL_CALL_COLUMNS = (
    "tenant, actor, workflow, idempotency_key, tool_call_id, status, attempts, request, "
    "result, started_at, completed_at, expires_at"
)


class ThreadSQL(Protocol):
    """The named statements a backend supplies, with the named parameters shown here.

    A checkpoint's key is `tenant`, `actor`, `workflow`; a tool call's adds
    `idempotency_key`. The state values are named after their columns
    (`STATE_COLUMNS`); `at` is the time written, `expires` an expiry or NULL.
    """

    INSERT_CHECKPOINT: str  # the key, the state values, at, expires
    UPDATE_CHECKPOINT: str  # the key, version (expected), the state values, at, expires
    GET_CHECKPOINT: str  # the key
    CHECKPOINT_VERSION: str  # the key
    LIST_CHECKPOINTS: str  # tenant, actor, limit
    SCAN_CHECKPOINTS: str  # tenant, actor, low, high (names in [low, high)), limit
    DELETE_CHECKPOINTS: str  # tenant, actor, low, high
    INSERT_TOOL_CALL: str  # the key, tool_call_id, request, at, expires
    GET_TOOL_CALL: str  # the key
    LOCK_TOOL_CALL: str  # the key; the row stays as read until the transaction ends
    REBEGIN_TOOL_CALL: str  # the key
    COMPLETE_TOOL_CALL: str  # the key, result, at, expires
    DELETE_TOOL_CALL: str  # the key
    LIST_TOOL_CALLS: str  # tenant, actor, workflow or NULL, unresolved (only), limit
    EXPIRED_CHECKPOINTS: str  # now, tenant or NULL (every tenant)
    DELETE_EXPIRED_CHECKPOINT: str  # the key, now
    DELETE_WORKFLOW_CALLS: str  # the key
    EXPIRED_ORPHAN_CALLS: str  # now, tenant or NULL (every tenant)
    DELETE_EXPIRED_CALL: str  # the key, now
    FORGET_CHECKPOINTS: str  # tenant, actor
    FORGET_TOOL_CALLS: str  # tenant, actor
    COUNT_ACTOR_CHECKPOINTS: str  # tenant, actor; one column `n`
    COUNT_ACTOR_TOOL_CALLS: str  # tenant, actor; one column `n`


class ThreadStore:
    """Checkpoints and tool calls in one store's database; what every backend does.

    Runs on the role a store offers (`store.thread`, a `ThreadHost`: its
    transactions, its reads, how its driver takes a time); a backend's subclass
    sets only `sql`, its named statements. `thread_state(store)` picks the one
    for a store. Every operation is scoped by (tenant, actor);
    `remem.thread.api` validates what the caller sent, and this class only
    stores and reads it.
    """

    sql: ClassVar[ThreadSQL]

    def __init__(self, host: ThreadHost) -> None:
        self._host = host
        self.path = host.path

    def _tx(self, tenant: str | None) -> AbstractContextManager[Tx]:
        """One write transaction of `tenant` (None: of every tenant, for retention)."""
        return self._host.tx(tenant)

    def _rows(self, tenant: str, sql: str, params: Mapping[str, Any]) -> Sequence[Row]:
        """The rows of one read, in its own transaction of `tenant`."""
        return self._host.rows(tenant, sql, params)

    def _at(self, t: datetime | None) -> object:
        """A time as the driver takes it."""
        return self._host.at(t)

    # -- checkpoints ------------------------------------------------------------------------

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
        q, at, expiry = self.sql, self._at(now or self._host.clock()), self._at(expires_at)
        key = {"tenant": tenant, "actor": actor, "workflow": workflow}
        params = {**key, **_state_params(state), "at": at, "expires": expiry}
        with self._tx(tenant) as db:
            if expected_version is None:
                cur = db.execute(q.INSERT_CHECKPOINT, params)
            else:
                cur = db.execute(q.UPDATE_CHECKPOINT, {**params, "version": expected_version})
            if cur.rowcount != 1:
                current = db.execute(q.CHECKPOINT_VERSION, key).fetchone()
                found = None if current is None else int(current["version"])
                raise _conflict(actor, workflow, expected_version, found)
            return _checkpoint(_one(db, q.GET_CHECKPOINT, key))

    def checkpoint_load(self, tenant: str, actor: str, workflow: str) -> Checkpoint | None:
        """The checkpoint of one workflow of (tenant, actor), or None."""
        key = {"tenant": tenant, "actor": actor, "workflow": workflow}
        rows = self._rows(tenant, self.sql.GET_CHECKPOINT, key)
        return _checkpoint(rows[0]) if rows else None

    def checkpoint_list(self, tenant: str, actor: str, limit: int = 1000) -> list[Checkpoint]:
        """The checkpoints of (tenant, actor), most recently saved first."""
        params = {"tenant": tenant, "actor": actor, "limit": limit}
        rows = self._rows(tenant, self.sql.LIST_CHECKPOINTS, params)
        return [_checkpoint(r) for r in rows]

    def checkpoint_scan(
        self, tenant: str, actor: str, prefix: str, before: str | None, limit: int
    ) -> list[Checkpoint]:
        """The checkpoints of (tenant, actor) whose workflow name starts with `prefix`, by
        name descending (byte order on both backends); with `before`, only names below it."""
        low, high = name_range(prefix, before)
        params = {"tenant": tenant, "actor": actor, "low": low, "high": high, "limit": limit}
        return [_checkpoint(r) for r in self._rows(tenant, self.sql.SCAN_CHECKPOINTS, params)]

    def checkpoint_delete(self, tenant: str, actor: str, prefix: str, *, exact: bool) -> int:
        """Delete the checkpoint named `prefix` (`exact`), or every one whose name starts
        with it; how many went. The ledger's tool calls stay: they expire on their own."""
        low, high = (prefix, prefix + "\x01") if exact else name_range(prefix, None)
        params = {"tenant": tenant, "actor": actor, "low": low, "high": high}
        with self._tx(tenant) as db:
            return int(db.execute(self.sql.DELETE_CHECKPOINTS, params).rowcount)

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
        q, body = self.sql, encode_json("tool call request", request, MAX_PAYLOAD_BYTES)
        key = _call_key(tenant, actor, workflow, idempotency_key)
        params = {
            **key,
            "tool_call_id": tool_call_id,
            "request": body,
            "at": self._at(now or self._host.clock()),
            "expires": self._at(expires_at),
        }
        with self._tx(tenant) as db:
            for _ in range(BEGIN_TRIES):
                if db.execute(q.INSERT_TOOL_CALL, params).rowcount == 1:
                    return Begun(_tool_call(_one(db, q.GET_TOOL_CALL, key)), begun=True)
                # locked, so that the request compared is the one the re-begin counts on
                existing = db.execute(q.LOCK_TOOL_CALL, key).fetchone()
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
            db.execute(q.REBEGIN_TOOL_CALL, key)
            return Begun(_tool_call(_one(db, q.GET_TOOL_CALL, key)), begun=False)

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
        q, body = self.sql, encode_json("tool call result", result, MAX_PAYLOAD_BYTES)
        key = _call_key(tenant, actor, workflow, idempotency_key)
        with self._tx(tenant) as db:
            at, expiry = self._at(now or self._host.clock()), self._at(expires_at)
            params = {**key, "result": body, "at": at, "expires": expiry}
            completed = db.execute(q.COMPLETE_TOOL_CALL, params).rowcount
            row = db.execute(q.GET_TOOL_CALL, key).fetchone()
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
        key = _call_key(tenant, actor, workflow, idempotency_key)
        with self._tx(tenant) as db:
            row = db.execute(self.sql.LOCK_TOOL_CALL, key).fetchone()
            if row is None:
                raise _no_call(actor, workflow, idempotency_key)
            if row["status"] == CallStatus.COMPLETED:
                raise ConflictError(
                    f"tool call {idempotency_key!r} of workflow {workflow!r} is completed; "
                    "its result is the record and it cannot be released"
                )
            db.execute(self.sql.DELETE_TOOL_CALL, key)
        return _tool_call(row)

    def tool_call_status(
        self, tenant: str, actor: str, workflow: str, idempotency_key: str
    ) -> ToolCall | None:
        """The ledger row of one key, or None if it was never begun."""
        key = _call_key(tenant, actor, workflow, idempotency_key)
        rows = self._rows(tenant, self.sql.GET_TOOL_CALL, key)
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
        params = {"tenant": tenant, "actor": actor, "workflow": workflow,
                  "unresolved": unresolved, "limit": limit}  # fmt: skip
        return [_tool_call(r) for r in self._rows(tenant, self.sql.LIST_TOOL_CALLS, params)]

    # -- retention and erasure --------------------------------------------------------------

    def expire(self, now: datetime, tenant: str | None = None) -> ExpiryReport:
        """Delete thread state past its `expires_at` (all tenants when `tenant` is None).

        A workflow expires as a whole: its checkpoint with its completed tool
        calls. One waiting for an approval or holding a tool call of unknown
        outcome is kept and reported in `held`, never expired silently. Tool
        calls of a workflow with no checkpoint expire on their own date, on the
        same terms. A workflow saved or begun on while this runs is decided on
        its newest state: it is kept if that holds it.
        """
        q, at = self.sql, self._at(now)
        held: list[Held] = []
        checkpoints = calls = 0
        with self._tx(tenant) as db:  # tenant None: retention for every tenant, by design
            when = {"now": at, "tenant": tenant}
            for r in db.execute(q.EXPIRED_CHECKPOINTS, when).fetchall():
                reason = retention_hold(bool(r["pending"]), bool(r["unresolved"]))
                wf = {"tenant": r["tenant"], "actor": r["actor"], "workflow": r["workflow"]}
                if reason is not None:
                    held.append(Held(r["actor"], r["workflow"], reason))
                    continue
                gone = db.execute(q.DELETE_EXPIRED_CHECKPOINT, {**wf, "now": at}).rowcount
                if gone == 0:  # a tool call was begun since: it holds the workflow
                    held.append(Held(r["actor"], r["workflow"], "unresolved_tool_call"))
                    continue
                checkpoints += gone
                calls += db.execute(q.DELETE_WORKFLOW_CALLS, wf).rowcount
            for r in db.execute(q.EXPIRED_ORPHAN_CALLS, when).fetchall():
                key = _call_key(r["tenant"], r["actor"], r["workflow"], r["idempotency_key"])
                if r["status"] != CallStatus.COMPLETED:
                    name = r["idempotency_key"]
                    held.append(Held(r["actor"], r["workflow"], "unresolved_tool_call", name))
                    continue
                calls += db.execute(q.DELETE_EXPIRED_CALL, {**key, "now": at}).rowcount
        return ExpiryReport(checkpoints, calls, tuple(held))

    def forget_actor(self, tenant: str, actor: str) -> dict[str, int]:
        """Erase every checkpoint and tool call of one actor (held ones too)."""
        with self._tx(tenant) as db:
            return self.erase_actor_rows(db, tenant, actor)

    @classmethod
    def erase_actor_rows(cls, db: Tx, tenant: str, actor: str) -> dict[str, int]:
        """Delete one actor's thread state inside the caller's transaction; counts by table.

        For the store's `forget_actor`, so that forgetting a subject reaches its
        checkpoints and tool calls in the same transaction as its records.
        """
        who = {"tenant": tenant, "actor": actor}
        return {
            "checkpoints": db.execute(cls.sql.FORGET_CHECKPOINTS, who).rowcount,
            "tool_calls": db.execute(cls.sql.FORGET_TOOL_CALLS, who).rowcount,
        }

    def count_actor_rows(self, tenant: str, actor: str) -> dict[str, int]:
        """How much thread state of one actor remains; for verifying an erasure."""
        counts = {
            "checkpoints": self.sql.COUNT_ACTOR_CHECKPOINTS,
            "tool_calls": self.sql.COUNT_ACTOR_TOOL_CALLS,
        }
        return {
            name: int(self._rows(tenant, sql, {"tenant": tenant, "actor": actor})[0]["n"])
            for name, sql in counts.items()
        }


def host_of(store: ThreadState, dialect: str) -> ThreadHost:
    """The thread role `store` offers, which must speak `dialect`; else `StoreError`."""
    host = store.thread
    if host is None or host.dialect != dialect:
        raise StoreError(
            f"thread state on {dialect} needs a {dialect} store; "
            f"{type(store).__name__} offers {'none' if host is None else host.dialect}"
        )
    return host


def name_range(prefix: str, before: str | None) -> tuple[str, str]:
    """The [low, high) range of workflow names that start with `prefix` (and, with
    `before`, sort below it). A name is of `[A-Za-z0-9._@:+-]`, all below "~"."""
    high = prefix + "~"
    return prefix, high if before is None else min(high, before)


# -- the same messages and values on every backend ----------------------------------------


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


def _call_key(tenant: str, actor: str, workflow: str, idempotency_key: str) -> dict[str, str]:
    """A tool call's key as the statements name it."""
    return {"tenant": tenant, "actor": actor, "workflow": workflow,
            "idempotency_key": idempotency_key}  # fmt: skip


def _state_params(state: CheckpointState) -> dict[str, Any]:
    """A checkpoint's state values, named after their columns (`STATE_COLUMNS`)."""
    encode_json("checkpoint state", state.as_dict(), MAX_STATE_BYTES)  # size and JSON check
    approval = state.pending_approval
    outcome = state.last_verified_outcome
    return {
        "step": state.step,
        "completed_steps": _json(list(state.completed_steps)),
        "pending_approval": None if approval is None else _json(dict(approval)),
        "tool_call_id": state.tool_call_id,
        "idempotency_key": state.idempotency_key,
        "artifacts": _json(list(state.artifacts)),
        "last_verified_outcome": None if outcome is None else _json(outcome),
        "data": _json(dict(state.data)),
    }


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _one(db: Tx, sql: str, params: Mapping[str, Any]) -> Row:
    row: Row | None = db.execute(sql, params).fetchone()
    assert row is not None  # read inside the transaction that wrote or locked it
    return row


def _checkpoint(r: Row) -> Checkpoint:
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


def _tool_call(r: Row) -> ToolCall:
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


def _time_or_none(t: str | datetime | None) -> datetime | None:
    """A stored time (SQLite's text, psycopg's datetime in the session's zone) in UTC; or None."""
    return None if t is None else parse_time(t)
