"""Act where you read: forget or correct a record from its page, and download an
erasure's receipt.

Forget is the Erasure page's verified erasure (DELETE /v1/memories/{id}: admins),
once the record's id is typed again and a reason or ticket reference is given; the
deletion job keeps the key, the record's actor and the reason for its receipt.
Correct writes the person's text as a new version that supersedes the record
(`Memory.update`, as POST /v1/memories/batch-update does): authority `confirmed`
(the user's explicit statement, relayed by the operator), the old record INVALID
and linked both ways, its history naming the console key that corrected it. It
needs a reviewer key (reviewers and admins: the people who answer for the memory).
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import json

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.console.web import (
    HEADERS,
    PREFIX,
    At,
    Form,
    Seat,
    back,
    confirmed,
    page,
    sessions,
    text_field,
)
from remem.policy import scope
from remem.service.audit import REASON_MAX
from remem.service.routes import admin, records
from remem.service.routes.deps import record

router = APIRouter(include_in_schema=False)

MAX_TEXT = 10_000  # the characters of a correction


def corrector(at: Seat) -> str:
    """How a correction's history names who made it: the console key."""
    return f"console key {at.who.key_id}"


@router.post(PREFIX + "/records/{record_id}/forget")
@page("Record")
def forget(request: Request, record_id: str, at: At, fields: Form) -> Response:
    """Forget this record everywhere and verify it (admins), once its id is typed again
    and a reason or ticket reference is given; then its receipt on the Erasure page."""
    scope.need_role(at.who, "admin")
    confirmed(fields, record_id, "the record id")
    reason = text_field(fields, "reason", REASON_MAX)
    report = records.delete_memory(record_id, at.who, at.svc, reason=reason, via="console")
    verified = "verified: nothing of it remains" if report["verified"] else "NOT verified"
    sessions(request).note(at.token, f"forgot record {record_id}: {verified}")
    job = report.get("job_id")
    return back("/erasure" + (f"?job={job}" if job is not None else ""))


@router.post(PREFIX + "/records/{record_id}/correct")
@page("Record")
def correct(request: Request, record_id: str, at: At, fields: Form) -> Response:
    """Write the corrected text as a new version superseding this record (reviewers)."""
    scope.need_role(at.who, "reviewer")
    text = text_field(fields, "text", MAX_TEXT)
    record(at.svc, at.who, record_id, write=True)
    new = at.svc.memory(at.who.tenant).update(record_id, text=text, by=corrector(at))
    sessions(request).note(at.token, f"corrected: {new.id} supersedes {record_id}")
    return back(f"/records/{new.id}")


@router.get(PREFIX + "/erasure/receipts/{deletion_id}")
@page("Erasure")
def receipt(request: Request, deletion_id: int, at: At) -> Response:
    """An erasure's receipt as a JSON download (GET /v1/deletions/{id}/receipt)."""
    body = admin.deletion_receipt(deletion_id, at.who, at.svc)
    return Response(
        json.dumps(body, ensure_ascii=False, indent=2),
        media_type="application/json",
        headers={
            **HEADERS,
            "Content-Disposition": f'attachment; filename="remem-erasure-{deletion_id}.json"',
        },
    )
