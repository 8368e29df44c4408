"""Procedures: propose, then a reviewer approves or rejects."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Any

from fastapi import APIRouter

from remem.policy import scope
from remem.policy.scope import SHARED_ACTOR, check_name
from remem.service.routes.deps import Svc, Who, record, refuses_body
from remem.service.schemas import ProposeIn, RejectIn

router = APIRouter()


@router.post("/v1/procedures", status_code=201, tags=["procedures"])
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


@router.post("/v1/memories/{record_id}/approve", tags=["procedures"], dependencies=[refuses_body()])
def approve(record_id: str, who: Who, svc: Svc) -> dict[str, Any]:
    """Approve a proposed procedure (reviewers and admins; a shared one: of the whole
    tenant)."""
    scope.need_role(who, "reviewer")
    scope.authorize(who, "review", record(svc, who, record_id).actor)
    return svc.memory(who.tenant).approve(record_id, reviewer=who.key_id).as_dict()


@router.post("/v1/memories/{record_id}/reject", tags=["procedures"])
def reject(record_id: str, who: Who, svc: Svc, body: RejectIn | None = None) -> dict[str, Any]:
    """Reject a proposed procedure with a reason (reviewers and admins; a shared one:
    of the whole tenant)."""
    scope.need_role(who, "reviewer")
    scope.authorize(who, "review", record(svc, who, record_id).actor)
    reason = body.reason if body is not None else ""
    return svc.memory(who.tenant).reject(record_id, reviewer=who.key_id, reason=reason).as_dict()
