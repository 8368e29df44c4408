"""Thread state of a memory (a `Memory` or its `Deps`): checkpoints, tool calls, retention.

    from remem.thread.api import begin_tool_call, checkpoint_save, complete_tool_call

    cp = checkpoint_save(mem, actor="u42", workflow="refund-981",
                         state={"step": "pay", "completed_steps": ["quote"]})
    begun = begin_tool_call(mem, actor="u42", workflow="refund-981",
                            idempotency_key="refund-981/pay", request={"amount": 30})
    if begun.decision == "perform":
        receipt = pay(30)                       # the side effect, exactly once
        complete_tool_call(mem, actor="u42", workflow="refund-981",
                           idempotency_key="refund-981/pay", result=receipt)
    elif begun.decision == "unknown":
        escalate(begun.call)                    # never retried blindly

Authorised resume: every function takes the actor explicitly and reads and
writes only the rows of (the memory's tenant, that actor), exactly as recall
does. A workflow of another actor or tenant is `NotFound`; it is never
returned, and its existence is not revealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInput, NotFound, RefusedContent, StoreError
from remem.memory.deps import HasDeps
from remem.policy.dataclasses import refusal_reason, secret_kinds, shown
from remem.policy.scope import check_name, refuse_secret_in, stored_name
from remem.store.flows.thread import ThreadStore
from remem.thread.backends import thread_state
from remem.thread.checkpoints import (
    MAX_PAYLOAD_BYTES,
    MAX_STATE_BYTES,
    Begun,
    Checkpoint,
    CheckpointState,
    ExpiryReport,
    ToolCall,
    check_key,
    encode_json,
)

if TYPE_CHECKING:
    from remem.store.roles import Store

MAX_LIST = 1_000_000  # rows one list call may return (export reads everything)
MAX_VERSION = 2**62  # a checkpoint version: within every backend's integer
MAX_RETENTION = timedelta(days=365 * 1000)  # so that now + retention stays a datetime


def checkpoint_save(
    mem: HasDeps,
    *,
    actor: str,
    workflow: str,
    state: CheckpointState | Mapping[str, Any],
    expected_version: int | None = None,
    retention: timedelta | None = None,
) -> Checkpoint:
    """Save a workflow's checkpoint under optimistic concurrency; return what was stored.

    Pass `expected_version=None` to create the checkpoint, and afterwards the
    version you loaded: if another writer saved in between, this raises
    `CheckpointConflict` (a `ConflictError`) naming the current version and
    stores nothing. `retention` sets when it expires, counted from this save;
    None keeps it until deleted.
    """
    stored_name("actor", actor)
    stored_name("workflow", workflow)
    if expected_version is not None:
        _check_version(expected_version)
    raw = state.as_dict() if isinstance(state, CheckpointState) else state
    valid = CheckpointState.from_dict(raw)
    _refuse_secrets("checkpoint state", valid.as_dict(), MAX_STATE_BYTES)
    now = mem.deps.clock()
    return _thread(mem).checkpoint_save(
        mem.deps.tenant,
        actor,
        workflow,
        valid,
        expected_version,
        now=now,
        expires_at=now + _check_retention(retention) if retention is not None else None,
    )


def checkpoint_load(mem: HasDeps, *, actor: str, workflow: str) -> Checkpoint:
    """The checkpoint of one of `actor`'s workflows; NotFound when it has none."""
    check_name("actor", actor)
    check_name("workflow", workflow)
    found = _thread(mem).checkpoint_load(mem.deps.tenant, actor, workflow)
    if found is None:
        raise NotFound(
            f"actor {actor!r} has no checkpoint for workflow {workflow!r} in tenant "
            f"{mem.deps.tenant!r}; check the actor and workflow, or save one first"
        )
    return found


def checkpoint_list(mem: HasDeps, *, actor: str, limit: int = 1000) -> list[Checkpoint]:
    """`actor`'s checkpoints, most recently saved first."""
    check_name("actor", actor)
    return _thread(mem).checkpoint_list(mem.deps.tenant, actor, _check_limit(limit))


def checkpoint_scan(
    mem: HasDeps, *, actor: str, prefix: str = "", before: str | None = None, limit: int = 1000
) -> list[Checkpoint]:
    """`actor`'s checkpoints whose workflow name starts with `prefix`, by name descending.

    Names compare byte by byte on both backends. Page with `before`: the last name of
    a page gives the next one (names below it only). A workflow store that names its
    workflows `app.{thread}.{time-ordered id}` lists a thread newest first this way.
    """
    check_name("actor", actor)
    _check_prefix(prefix)
    if before is not None:
        check_name("before", before)
    return _thread(mem).checkpoint_scan(mem.deps.tenant, actor, prefix, before, _check_limit(limit))


def checkpoint_delete(
    mem: HasDeps, *, actor: str, workflow: str | None = None, prefix: str | None = None
) -> int:
    """Delete one of `actor`'s checkpoints (`workflow`), or every one whose workflow name
    starts with `prefix` (not empty: `forget(actor=...)` erases them all); how many went.

    The tool-call ledger is kept: a call's outcome is the record, and completed calls
    expire on their own date (`expire_thread_state`).
    """
    check_name("actor", actor)
    if (workflow is None) == (prefix is None):
        raise InvalidInput("checkpoint_delete needs exactly one of workflow or prefix")
    if workflow is not None:
        return _thread(mem).checkpoint_delete(
            mem.deps.tenant, actor, check_name("workflow", workflow), exact=True
        )
    if not _check_prefix(prefix):
        raise InvalidInput(
            "an empty prefix would delete every checkpoint of the actor; name a prefix, "
            "or erase the actor with forget(actor=...)"
        )
    return _thread(mem).checkpoint_delete(mem.deps.tenant, actor, str(prefix), exact=False)


def begin_tool_call(
    mem: HasDeps,
    *,
    actor: str,
    workflow: str,
    idempotency_key: str,
    request: Any = None,
    tool_call_id: str | None = None,
    retention: timedelta | None = None,
) -> Begun:
    """Claim a side effect in the ledger before performing it.

    Perform the side effect only when `decision == "perform"`. Otherwise the
    key was begun before: `"done"` hands back the recorded result in
    `call.result`, and `"unknown"` means an earlier attempt never recorded its
    outcome, so it is surfaced (see `tool_calls(unresolved=True)`) for a person
    or a reconciliation step instead of being run again.
    """
    stored_name("actor", actor)
    stored_name("workflow", workflow)
    refuse_secret_in("idempotency key", check_key("idempotency_key", idempotency_key))
    _refuse_secrets("tool call request", request, MAX_PAYLOAD_BYTES)
    call_id = (
        mem.deps.ids("call") if tool_call_id is None else check_key("tool_call_id", tool_call_id)
    )
    refuse_secret_in("tool call id", call_id)
    now = mem.deps.clock()
    return _thread(mem).begin_tool_call(
        mem.deps.tenant,
        actor,
        workflow,
        idempotency_key,
        call_id,
        request,
        now=now,
        expires_at=now + _check_retention(retention) if retention is not None else None,
    )


def complete_tool_call(
    mem: HasDeps, *, actor: str, workflow: str, idempotency_key: str, result: Any
) -> ToolCall:
    """Record the result of a begun side effect (or of one a reconciler verified)."""
    check_name("actor", actor)
    check_name("workflow", workflow)
    check_key("idempotency_key", idempotency_key)
    _refuse_secrets("tool call result", result, MAX_PAYLOAD_BYTES)
    return _thread(mem).complete_tool_call(
        mem.deps.tenant, actor, workflow, idempotency_key, result, now=mem.deps.clock()
    )


def release_tool_call(mem: HasDeps, *, actor: str, workflow: str, idempotency_key: str) -> ToolCall:
    """Reconcile an open call whose side effect verifiably did not happen.

    The key becomes `never_started` again, so the workflow may begin it anew.
    Returns the released ledger row.
    """
    check_name("actor", actor)
    check_name("workflow", workflow)
    check_key("idempotency_key", idempotency_key)
    return _thread(mem).release_tool_call(mem.deps.tenant, actor, workflow, idempotency_key)


def tool_call_status(
    mem: HasDeps, *, actor: str, workflow: str, idempotency_key: str
) -> ToolCall | None:
    """The ledger row of one key of `actor`'s workflow, or None if never begun.

    `remem.thread.checkpoints.resume_state(...)` of the answer says what a resumed run may do.
    """
    check_name("actor", actor)
    check_name("workflow", workflow)
    check_key("idempotency_key", idempotency_key)
    return _thread(mem).tool_call_status(mem.deps.tenant, actor, workflow, idempotency_key)


def tool_calls(
    mem: HasDeps,
    *,
    actor: str,
    workflow: str | None = None,
    unresolved: bool = False,
    limit: int = 1000,
) -> list[ToolCall]:
    """`actor`'s tool calls, oldest first; `unresolved=True`: those awaiting reconciliation."""
    check_name("actor", actor)
    if workflow is not None:
        check_name("workflow", workflow)
    return _thread(mem).tool_call_list(
        mem.deps.tenant, actor, workflow, unresolved=unresolved, limit=_check_limit(limit)
    )


def expire_thread_state(mem: HasDeps) -> ExpiryReport:
    """Run retention for this tenant now: expired checkpoints and tool calls go.

    Workflows waiting for an approval, or with a tool call of unknown outcome,
    are kept and listed in the report's `held`.
    """
    return _thread(mem).expire(mem.deps.clock(), tenant=mem.deps.tenant)


# -- helpers ---------------------------------------------------------------------------------


def has_thread_state(mem: HasDeps) -> bool:
    """Whether this memory's store keeps thread state (checkpoints, tool calls)."""
    return _thread_store(mem.deps.store) is not None


def _thread(mem: HasDeps) -> ThreadStore:
    found = _thread_store(mem.deps.store)
    if found is None:
        raise StoreError(
            f"thread state (checkpoints, tool calls) is not available on "
            f"{type(mem.deps.store).__name__} in this build; use the SQLite or PostgreSQL store"
        )
    return found


def _thread_store(store: Store) -> ThreadStore | None:
    """The thread state of `store`'s backend, or None when that backend keeps none."""
    return thread_state(store)


def _refuse_secrets(what: str, value: object, limit: int) -> None:
    """Thread state is a write path too: secrets are refused here as everywhere (DESIGN 4),
    in every key and string of the JSON, as in event metadata and records."""
    encode_json(what, value, limit)
    kinds = secret_kinds(value)
    if kinds:
        raise RefusedContent(
            f"{what} {refusal_reason(kinds)}; keep a reference to it (a vault path or a "
            "payment token) instead"
        )


def _check_prefix(value: object) -> str:
    """The start of a workflow name: empty, or what a name may begin with."""
    if value == "":
        return ""
    try:
        return check_name("prefix", value)
    except InvalidInput:
        raise InvalidInput(
            f"prefix must be the start of a workflow name (letters, digits and . _ @ : + -, "
            f"at most 200, starting with a letter or digit); got {shown(value)}"
        ) from None


def _check_version(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        raise InvalidInput(
            f"expected version must be a positive whole number (the version you loaded); "
            f"got {shown(value)}"
        )
    return value


def _check_retention(value: object) -> timedelta:
    if not isinstance(value, timedelta) or not timedelta(0) < value <= MAX_RETENTION:
        raise InvalidInput(
            f"retention must be a positive timedelta of at most {MAX_RETENTION.days} days; "
            f"got {shown(value)}"
        )
    return value


def _check_limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIST:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIST}; got {shown(value)}")
    return value
