"""Thread state: an actor's workflow checkpoints (save, load, list by name, delete).

The same operations as `remem.thread.api`, under the key's scope: a key for one actor
reaches that actor's checkpoints only. A save with a stale `expected_version` is a
409 naming the current version; secrets in the state are refused (422).
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from remem.policy import scope
from remem.service import audit
from remem.service.answers import (
    KEYED,
    CheckpointAnswer,
    CheckpointsDeleted,
    CheckpointsPage,
    errors,
)
from remem.service.routes.deps import Svc, Via, Who
from remem.thread import api
from remem.thread.checkpoints import Checkpoint

router = APIRouter()
MAX_RETENTION_SECONDS = 365 * 1000 * 86400  # remem.thread.api.MAX_RETENTION


class CheckpointIn(BaseModel):
    """A checkpoint to save: its state, and the version it was loaded at (none: create)."""

    model_config = ConfigDict(extra="forbid")

    state: dict[str, Any] = Field(description="step, completed_steps, ..., data")
    expected_version: int | None = Field(default=None, ge=1)
    retention_seconds: int | None = Field(default=None, ge=1, le=MAX_RETENTION_SECONDS)


def _out(cp: Checkpoint) -> dict[str, Any]:
    return {"tenant": cp.tenant, **cp.as_dict()}


@router.put(
    "/v1/actors/{actor_id}/checkpoints/{workflow}",
    tags=["thread"],
    operation_id="save_checkpoint",
    response_model=CheckpointAnswer,
    responses=errors(*KEYED, 403, 409),
)
def save_checkpoint(
    actor_id: str, workflow: str, body: CheckpointIn, who: Who, svc: Svc
) -> dict[str, Any]:
    """Save a workflow's checkpoint under optimistic concurrency (409 when stale)."""
    actor = scope.allow(who, actor_id)
    retention = body.retention_seconds
    cp = api.checkpoint_save(
        svc.memory(who.tenant),
        actor=actor,
        workflow=workflow,
        state=body.state,
        expected_version=body.expected_version,
        retention=None if retention is None else timedelta(seconds=retention),
    )
    return {"checkpoint": _out(cp)}


@router.get(
    "/v1/actors/{actor_id}/checkpoints/{workflow}",
    tags=["thread"],
    operation_id="load_checkpoint",
    response_model=CheckpointAnswer,
    responses=errors(*KEYED, 403, 404),
)
def load_checkpoint(
    actor_id: str, workflow: str, who: Who, svc: Svc, via: Via = "api"
) -> dict[str, Any]:
    """One workflow's checkpoint; 404 when the actor has none of that name. Audited as a
    recall (a workflow loads its state every step: one row per key, actor and minute)."""
    actor = scope.allow(who, actor_id)
    cp = api.checkpoint_load(svc.memory(who.tenant), actor=actor, workflow=workflow)
    audit.recalled(svc.store.audit, who, via, actor)
    return {"checkpoint": _out(cp)}


@router.get(
    "/v1/actors/{actor_id}/checkpoints",
    tags=["thread"],
    operation_id="list_checkpoints",
    response_model=CheckpointsPage,
    responses=errors(*KEYED, 403),
)
def list_checkpoints(
    actor_id: str,
    who: Who,
    svc: Svc,
    prefix: Annotated[str, Query(max_length=200)] = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    via: Via = "api",
) -> dict[str, Any]:
    """The actor's checkpoints whose workflow name starts with `prefix`, by name
    descending, a page at a time (`next_cursor`, null on the last page); audited (a
    `read` row with the count)."""
    actor = scope.allow(who, actor_id)
    mem = svc.memory(who.tenant)
    page = api.checkpoint_scan(mem, actor=actor, prefix=prefix, before=cursor, limit=limit)
    audit.note(svc.store.audit, who, "read", via, actor=actor, checkpoints=len(page))
    more = len(page) == limit
    return {
        "checkpoints": [_out(cp) for cp in page],
        "next_cursor": page[-1].workflow if more else None,
    }


@router.delete(
    "/v1/actors/{actor_id}/checkpoints/{workflow}",
    tags=["thread"],
    operation_id="delete_checkpoint",
    response_model=CheckpointsDeleted,
    responses=errors(*KEYED, 403),
)
def delete_checkpoint(actor_id: str, workflow: str, who: Who, svc: Svc) -> dict[str, Any]:
    """Delete one workflow's checkpoint (its tool-call ledger stays); `deleted` is 0 or 1."""
    actor = scope.allow(who, actor_id)
    n = api.checkpoint_delete(svc.memory(who.tenant), actor=actor, workflow=workflow)
    return {"deleted": n}


@router.delete(
    "/v1/actors/{actor_id}/checkpoints",
    tags=["thread"],
    operation_id="delete_checkpoints",
    response_model=CheckpointsDeleted,
    responses=errors(*KEYED, 403),
)
def delete_checkpoints(
    actor_id: str,
    who: Who,
    svc: Svc,
    prefix: Annotated[str, Query(min_length=1, max_length=200)],
) -> dict[str, Any]:
    """Delete every checkpoint of the actor whose workflow name starts with `prefix`."""
    actor = scope.allow(who, actor_id)
    n = api.checkpoint_delete(svc.memory(who.tenant), actor=actor, prefix=prefix)
    return {"deleted": n}
