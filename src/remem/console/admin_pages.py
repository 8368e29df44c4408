"""Jobs (the extraction queue, retry for admins) and Erasure (forget a record or a
subject with a typed confirmation, deletion jobs with their receipts, export)."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import re

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from remem.console import views
from remem.console.web import (
    HEADERS,
    PREFIX,
    At,
    Form,
    Seat,
    Short,
    back,
    confirmed,
    page,
    render,
    sessions,
    text_field,
)
from remem.pipeline.jobs import JOB_STATUSES
from remem.policy import scope
from remem.service.audit import REASON_MAX
from remem.service.routes import admin, operations, records

router = APIRouter(include_in_schema=False)


@router.get(PREFIX + "/jobs")
@page("Jobs")
def jobs(request: Request, at: At, status: Short = "", actor: Short = "") -> Response:
    """The extraction jobs of the key's scope by state, newest first, with last errors
    (GET /v1/jobs and /v1/jobs/list), each with its event's actor; `actor` narrows them
    to one actor the key may act on."""
    counts = operations.jobs(at.who, at.svc)
    if actor.strip():
        whose = scope.allow(at.who, actor.strip())
        found = at.svc.memory(at.who.tenant).jobs(status or None, 200, actor=whose)
        listed = [j.as_dict() for j in found]
    else:
        listed = operations.list_jobs(at.who, at.svc, status=status or None, limit=200)["jobs"]
    events = at.svc.store.events.get_events(at.who.tenant, [j["event_id"] for j in listed])
    actors = {e.id: e.actor for e in events}
    listed = [{**j, "actor": actors.get(j["event_id"], "")} for j in listed]
    context = {
        "title": "Jobs",
        "counts": counts,
        "jobs": listed,
        "status": status,
        "actor": actor.strip(),
        "statuses": JOB_STATUSES,
        "may_retry": at.who.actor is None and at.who.has_role("admin"),
    }
    return render(request, "jobs.html", context, at=at)


@router.post(PREFIX + "/jobs/retry")
@page("Jobs")
def retry(request: Request, at: At, fields: Form) -> Response:
    """Put the tenant's failed jobs back to run now (POST /v1/jobs/retry: admins)."""
    done = operations.retry_jobs(at.who, at.svc, failed_only=True)
    sessions(request).note(at.token, f"{done['retried']} failed job(s) put back to run now")
    return back("/jobs")


@router.get(PREFIX + "/erasure")
@page("Erasure")
def erasure(request: Request, at: At, job: Short = "") -> Response:
    """The erasure forms and the deletion jobs with their verification receipts (admins);
    `job` is the one just run, shown first as the receipt."""
    scope.need_role(at.who, "admin")
    found = views.deletions_for(at.svc.memory(at.who.tenant).deletions(100), at.who.actor)
    receipt = next((d for d in found if str(d["id"]) == job), None)
    context = {"title": "Erasure", "deletions": found, "receipt": receipt}
    return render(request, "erasure.html", context, at=at)


@router.post(PREFIX + "/erasure/record")
@page("Erasure")
def forget_record(request: Request, at: At, fields: Form) -> Response:
    """Forget one record everywhere and verify it (DELETE /v1/memories/{id}), once its id
    is typed again and a reason or ticket reference is given."""
    scope.need_role(at.who, "admin")
    record_id = text_field(fields, "record_id")
    confirmed(fields, record_id, "the record id")
    reason = text_field(fields, "reason", REASON_MAX)
    report = records.delete_memory(record_id, at.who, at.svc, reason=reason, via="console")
    return _receipt(request, at, f"record {record_id}", report)


@router.post(PREFIX + "/erasure/subject")
@page("Erasure")
def forget_subject(request: Request, at: At, fields: Form) -> Response:
    """Erase everything of one actor and verify it (POST /v1/subjects/{actor}/forget),
    once the actor's name is typed again and a reason or ticket reference is given."""
    scope.need_role(at.who, "admin")
    actor = text_field(fields, "actor")
    confirmed(fields, actor, "the actor's name")
    reason = text_field(fields, "reason", REASON_MAX)
    report = admin.forget_subject(actor, at.who, at.svc, reason=reason, via="console")
    return _receipt(request, at, f"subject {actor}", report)


@router.get(PREFIX + "/erasure/export")
@page("Erasure")
def export(request: Request, at: At, actor: Short = "") -> Response:
    """Everything held about one actor as a JSON download (GET /v1/subjects/{actor}/export)."""
    actor_id, body = admin.subject_export(actor.strip(), at.who, at.svc, "console")
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", actor_id)[:80]
    return StreamingResponse(
        body,
        media_type="application/json",
        headers={**HEADERS, "Content-Disposition": f'attachment; filename="remem-{name}.json"'},
    )


def _receipt(request: Request, at: Seat, what: str, report: dict[str, object]) -> Response:
    """After a forget: say whether it was verified, and show its deletion job's receipt."""
    verified = "verified: nothing of it remains" if report["verified"] else "NOT verified"
    sessions(request).note(at.token, f"forgot {what}: {verified}")
    job = report.get("job_id")
    return back("/erasure" + (f"?job={job}" if job is not None else ""))
