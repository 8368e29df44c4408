"""Thread state values and the pure decisions made about them.

A durable workflow resumes from exact state, never from a model's guess
("the payment probably went through"). Two values carry that state:

- `Checkpoint`: one workflow's current step, completed steps, pending
  approval, the tool call in flight with its idempotency key, artifacts and
  the last verified outcome, under a version number for optimistic
  concurrency;
- `ToolCall`: one side effect in the ledger, written *before* it happens
  (`started`) and closed *after* (`completed`). A call whose outcome nobody
  recorded is `unknown` to whoever resumes, and is handed to a person or a
  reconciliation step instead of being run again.

Everything here is a value or a function of values: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from remem.errors import ConflictError, InvalidInput
from remem.policy.dataclasses import shown
from remem.policy.scope import key_problem
from remem.policy.text import check_json

MAX_STATE_BYTES = 256 * 1024  # a checkpoint's JSON; artifacts are references, not blobs
MAX_PAYLOAD_BYTES = 256 * 1024  # a tool call's request, and its result, each
MAX_STEPS = 10_000  # completed steps kept in one checkpoint
MAX_JSON_DEPTH = 64

_STEP = re.compile(r"[^\x00-\x1f\x7f]{1,200}")  # a step name: any printable text

STATE_FIELDS = (
    "step",
    "completed_steps",
    "pending_approval",
    "tool_call_id",
    "idempotency_key",
    "artifacts",
    "last_verified_outcome",
    "data",
)

ResumeState = Literal["done", "never_started", "unknown"]


class CallStatus(StrEnum):
    """Where a tool call is in the ledger."""

    STARTED = "started"  # begun; its side effect may or may not have happened
    COMPLETED = "completed"  # done, with its result recorded
    UNKNOWN = "unknown"  # begun again while still open: its first attempt is in doubt


class CheckpointConflict(ConflictError):
    """A checkpoint save named a version that is no longer current."""

    def __init__(self, message: str, current_version: int | None) -> None:
        super().__init__(message)
        self.current_version = current_version


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """What a workflow saves so that it can resume from exact state.

    `data` is the caller's own JSON object for anything else it needs; the
    other fields are the ones remem reads (retention holds a workflow with a
    `pending_approval`; `tool_call_id` and `idempotency_key` name the side
    effect in flight so a resumed run can look it up in the ledger).
    """

    step: str | None = None
    completed_steps: tuple[str, ...] = ()
    pending_approval: Mapping[str, Any] | None = None
    tool_call_id: str | None = None
    idempotency_key: str | None = None
    artifacts: tuple[Any, ...] = ()
    last_verified_outcome: Any = None
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: object) -> CheckpointState:
        """Validate a JSON object such as `{"step": "pay", "completed_steps": ["quote"]}`.

        Unknown fields are refused rather than dropped, so a typo cannot lose
        state; put free-form values under `data`.
        """
        if not isinstance(raw, Mapping):
            raise InvalidInput(f"checkpoint state must be a JSON object; got {type(raw).__name__}")
        unknown = sorted(str(k) for k in raw if k not in STATE_FIELDS)
        if unknown:
            raise InvalidInput(
                f"unknown checkpoint field(s) {', '.join(unknown)}; the fields are "
                f"{', '.join(STATE_FIELDS)} (put anything else under 'data')"
            )
        step = raw.get("step")
        completed = raw.get("completed_steps", [])
        approval = raw.get("pending_approval")
        artifacts = raw.get("artifacts", [])
        data = raw.get("data", {})
        if step is not None:
            check_step(step)
        if not isinstance(completed, list | tuple):
            raise InvalidInput("completed_steps must be a list of step names")
        if len(completed) > MAX_STEPS:
            raise InvalidInput(f"completed_steps holds {len(completed)} steps; at most {MAX_STEPS}")
        for s in completed:
            check_step(s)
        if approval is not None and not isinstance(approval, Mapping):
            raise InvalidInput(
                'pending_approval must be a JSON object (e.g. {"what": "refund $30"}) or null'
            )
        if not isinstance(artifacts, list | tuple):
            raise InvalidInput("artifacts must be a list")
        if not isinstance(data, Mapping):
            raise InvalidInput("data must be a JSON object")
        tool_call_id = raw.get("tool_call_id")
        key = raw.get("idempotency_key")
        state = cls(
            step=step,
            completed_steps=tuple(completed),
            pending_approval=dict(approval) if approval is not None else None,
            tool_call_id=None if tool_call_id is None else check_key("tool_call_id", tool_call_id),
            idempotency_key=None if key is None else check_key("idempotency_key", key),
            artifacts=tuple(artifacts),
            last_verified_outcome=raw.get("last_verified_outcome"),
            data=dict(data),
        )
        encode_json("checkpoint state", state.as_dict(), MAX_STATE_BYTES)
        return state

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "completed_steps": list(self.completed_steps),
            "pending_approval": (
                None if self.pending_approval is None else dict(self.pending_approval)
            ),
            "tool_call_id": self.tool_call_id,
            "idempotency_key": self.idempotency_key,
            "artifacts": list(self.artifacts),
            "last_verified_outcome": self.last_verified_outcome,
            "data": dict(self.data),
        }


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One workflow's saved state at one version. Scoped to (tenant, actor)."""

    tenant: str
    actor: str
    workflow: str
    version: int
    state: CheckpointState
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None

    @property
    def awaiting_approval(self) -> bool:
        """True while a person still has to approve something; retention holds it."""
        return self.state.pending_approval is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "actor": self.actor,
            "version": self.version,
            **self.state.as_dict(),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One side effect in the ledger, unique per (workflow, idempotency key)."""

    tenant: str
    actor: str
    workflow: str
    idempotency_key: str
    tool_call_id: str
    status: CallStatus
    attempts: int  # how many times it was begun: more than one means a resume saw it
    request: Any
    result: Any
    started_at: datetime
    completed_at: datetime | None = None
    expires_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "actor": self.actor,
            "idempotency_key": self.idempotency_key,
            "tool_call_id": self.tool_call_id,
            "status": self.status.value,
            "resume": resume_state(self),
            "attempts": self.attempts,
            "request": self.request,
            "result": self.result,
            "started_at": self.started_at.isoformat(),
            "completed_at": self.completed_at.isoformat() if self.completed_at else None,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True, slots=True)
class Begun:
    """What `begin_tool_call` found: perform the side effect only if `begun`.

    `begun` is True for exactly one caller per (workflow, idempotency key):
    the one whose begin wrote the ledger row. Everyone else gets the existing
    row and must follow `resume_state(call)`.
    """

    call: ToolCall
    begun: bool

    @property
    def decision(self) -> Literal["perform", "done", "never_started", "unknown"]:
        """`perform` for the caller that began it; else what resume must do."""
        return "perform" if self.begun else resume_state(self.call)

    def as_dict(self) -> dict[str, Any]:
        return {"begun": self.begun, "decision": self.decision, "tool_call": self.call.as_dict()}


@dataclass(frozen=True, slots=True)
class Held:
    """Thread state past its expiry that retention kept, and why."""

    actor: str
    workflow: str
    reason: Literal["pending_approval", "unresolved_tool_call"]
    idempotency_key: str | None = None  # set when the held item is a tool call

    def as_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor,
            "workflow": self.workflow,
            "reason": self.reason,
            "idempotency_key": self.idempotency_key,
        }


@dataclass(frozen=True, slots=True)
class ExpiryReport:
    """What one retention run removed, and what it kept on purpose."""

    checkpoints_expired: int = 0
    tool_calls_expired: int = 0
    held: tuple[Held, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "checkpoints_expired": self.checkpoints_expired,
            "tool_calls_expired": self.tool_calls_expired,
            "held": [h.as_dict() for h in self.held],
        }


# -- pure decisions -----------------------------------------------------------------


def resume_state(call: ToolCall | None) -> ResumeState:
    """What a resumed workflow may do about one side effect.

    - `never_started`: no ledger row, so the side effect never began: begin it;
    - `done`: completed, and `call.result` is its recorded result: use it;
    - `unknown`: begun but never completed. The process may have died before
      or after the side effect, so running it again could do it twice: hand
      it to a person or a reconciliation step, never retry it blindly.
    """
    if call is None:
        return "never_started"
    if call.status is CallStatus.COMPLETED:
        return "done"
    return "unknown"


def retention_hold(
    pending_approval: bool, unresolved_tool_call: bool
) -> Literal["pending_approval", "unresolved_tool_call"] | None:
    """Why an expired workflow must be kept, or None when it may go.

    A workflow waiting for a person, or with a side effect of unknown outcome,
    is never expired silently: it is kept and reported until resolved.
    """
    if pending_approval:
        return "pending_approval"
    if unresolved_tool_call:
        return "unresolved_tool_call"
    return None


# -- validation -----------------------------------------------------------------------


def check_step(value: object) -> str:
    """A step name: 1-200 characters of printable text."""
    if not isinstance(value, str) or not _STEP.fullmatch(value):
        raise InvalidInput(
            f"a step name must be 1-200 characters without control characters; got {shown(value)}"
        )
    return value


def check_key(what: str, value: object) -> str:
    """An idempotency key or tool-call id: 1-255 printable ASCII characters, no spaces."""
    if (problem := key_problem(what, value, 255)) is not None:
        raise InvalidInput(problem)
    return str(value)


def encode_json(what: str, value: object, limit: int) -> str:
    """`value` as canonical JSON (sorted keys), refusing what JSON cannot hold exactly.

    The one check of stored JSON (`remem.policy.text.check_json`): no NUL or
    lone surrogate in any key or string, no NaN, bytes or sets, bounded depth.
    """
    return check_json(what, value, max_depth=MAX_JSON_DEPTH, max_bytes=limit)
