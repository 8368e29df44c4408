"""Review: proposed procedures with their diff against the active version, approve or
reject with a reason (reviewers), and records flagged as untrusted."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.console import views
from remem.console.web import PREFIX, At, Form, back, page, render, sessions
from remem.model import Status
from remem.policy.scope import SHARED_ACTOR
from remem.service.routes import procedures, records
from remem.service.schemas import RejectIn

router = APIRouter(include_in_schema=False)

MAX_ACTORS = 200  # the actors whose proposals and flagged records one page gathers


@router.get(PREFIX + "/review")
@page("Review")
def review(request: Request, at: At) -> Response:
    """Every proposal the key may see (its actors' and the tenant's shared ones), each with
    its diff against the active version of the same name, and the flagged records."""
    mem = at.svc.memory(at.who.tenant)
    names = [a.actor for a in at.svc.store.actors.summaries(at.who.tenant, only=at.who.actor)]
    proposals: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] = []
    shared = [r.as_dict() for r in mem.procedures(actor=None, all=True)]
    proposals += _proposals(shared)
    for actor in names[:MAX_ACTORS]:
        recs = records.list_memories(at.who, at.svc, actor_id=actor, all=True, via=None)["records"]
        proposals += _proposals([r for r in recs if r["kind"] == "procedural"])
        flagged += [r for r in recs if r["flags"] and r["status"] in ("active", "proposed")]
    context = {
        "title": "Review",
        "proposals": proposals,
        "flagged": flagged,
        "reviewer": at.who.has_role("reviewer"),
        "shared": SHARED_ACTOR,
    }
    return render(request, "review.html", context, at=at)


@router.post(PREFIX + "/review/{record_id}/approve")
@page("Review")
def approve(request: Request, record_id: str, at: At, fields: Form) -> Response:
    """Approve a proposal (POST /v1/memories/{id}/approve: reviewers)."""
    done = procedures.approve(record_id, at.who, at.svc, via="console")
    sessions(request).note(at.token, f"approved {done['id']}: it is now {done['status']}")
    return back("/review")


@router.post(PREFIX + "/review/{record_id}/reject")
@page("Review")
def reject(request: Request, record_id: str, at: At, fields: Form) -> Response:
    """Reject a proposal with a reason (POST /v1/memories/{id}/reject: reviewers)."""
    body = RejectIn(reason=fields.get("reason", "").strip())
    done = procedures.reject(record_id, at.who, at.svc, body, via="console")
    sessions(request).note(at.token, f"rejected {done['id']}: it is now {done['status']}")
    return back("/review")


def _proposals(procs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The proposed procedures among `procs`, each with the active version of its name
    (if any) and the line diff from it."""
    active = {p["field"]: p for p in procs if p["status"] == Status.ACTIVE and p["field"]}
    out = []
    for p in procs:
        if p["status"] != Status.PROPOSED:
            continue
        current = active.get(p["field"]) if p["field"] else None
        was = current["text"] if current else ""
        out.append({**p, "current": current, "diff": views.diff(was, p["text"])})
    return out
