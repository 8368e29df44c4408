"""Procedures: propose, list, then a reviewer approves or rejects."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from remem.model import Record
from remem.policy import scope
from remem.policy.scope import SHARED_ACTOR, check_name
from remem.service import audit, paging
from remem.service.answers import KEYED, RecordList, RecordOut, errors
from remem.service.routes.deps import Svc, Via, Who, record, refuses_body
from remem.service.schemas import ProposeIn, RejectIn

router = APIRouter()


@router.post(
    "/v1/procedures",
    status_code=201,
    tags=["procedures"],
    operation_id="propose_procedure",
    response_model=RecordOut,
    responses=errors(*KEYED, 403),
)
def propose(body: ProposeIn, who: Who, svc: Svc) -> dict[str, Any]:
    """Propose a procedure; it stays inactive until a reviewer approves it. Without
    `actor_id` it is shared by the whole tenant, which needs a key for the whole tenant."""
    if body.actor_id is not None:
        check_name("actor_id", body.actor_id)
    scope.authorize(who, "propose", body.actor_id or SHARED_ACTOR)
    rec = svc.memory(who.tenant).propose_procedure(
        text=body.text, name=body.name, actor=body.actor_id, proposed_by=who.key_id
    )
    return rec.as_dict()


@router.get(
    "/v1/procedures",
    tags=["procedures"],
    operation_id="list_procedures",
    response_model=RecordList,
    responses=errors(*KEYED, 400, 403),
)
def list_procedures(
    who: Who,
    svc: Svc,
    actor_id: Annotated[
        str | None, Query(max_length=200, description="omit: the tenant's shared ones")
    ] = None,
    all: Annotated[bool, Query(description="also proposed and rejected (reviewers)")] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: paging.Cursor = None,
) -> dict[str, Any]:
    """The approved procedures shared by the tenant (every key may read them), or one
    actor's; with `all`, proposals and rejected ones too, which needs a reviewer key."""
    if all:
        scope.need_role(who, "reviewer")
    actor = None if actor_id is None else scope.actor_for(who, actor_id)
    query = (who.tenant, actor, all)
    after = paging.read("procedures", query, cursor, (paging.TIME, paging.TEXT))
    # the procedures are read whole (a tenant has tens, each a versioned text), newest
    # first by (valid_from, id), and cut after the cursor's key
    found = svc.memory(who.tenant).procedures(actor=actor, all=all)
    rest = paging.after(found, after, _key)[: limit + 1]
    recs, next_cursor = paging.page(rest, limit, _key, "procedures", query)
    return {"records": [r.as_dict() for r in recs], "next_cursor": next_cursor}


def _key(r: Record) -> tuple[Any, ...]:
    return (r.valid_from, r.id)


@router.post(
    "/v1/memories/{record_id}/approve",
    tags=["procedures"],
    dependencies=[refuses_body()],
    operation_id="approve_procedure",
    response_model=RecordOut,
    responses=errors(*KEYED, 403, 404, 409),
)
def approve(record_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Approve a proposed procedure (reviewers and admins; a shared one: of the whole
    tenant)."""
    scope.need_role(who, "reviewer")
    owner = record(svc, who, record_id).actor
    scope.authorize(who, "review", owner)
    done = svc.memory(who.tenant).approve(record_id, reviewer=who.key_id).as_dict()
    audit.note(svc.store.audit, who, "approve", via, actor=owner, target=record_id)
    return done


@router.post(
    "/v1/memories/{record_id}/reject",
    tags=["procedures"],
    operation_id="reject_procedure",
    response_model=RecordOut,
    responses=errors(*KEYED, 403, 404, 409),
)
def reject(
    record_id: str, who: Who, svc: Svc, body: RejectIn | None = None, via: Via = "api"
) -> dict[str, Any]:
    """Reject a proposed procedure with a reason (reviewers and admins; a shared one:
    of the whole tenant)."""
    scope.need_role(who, "reviewer")
    owner = record(svc, who, record_id).actor
    scope.authorize(who, "review", owner)
    reason = body.reason if body is not None else ""
    done = svc.memory(who.tenant).reject(record_id, reviewer=who.key_id, reason=reason)
    audit.note(svc.store.audit, who, "reject", via, actor=owner, target=record_id)
    return done.as_dict()
