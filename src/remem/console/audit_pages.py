"""The audit log in the console: who read, exported, erased or decided what, filterable
by actor, key and action, a page at a time, and exportable as JSON (admins).

A key for one actor sees that actor's rows only. The rows hold ids and counts,
never memory content (`remem.service.audit`).
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.console.web import HEADERS, PREFIX, At, Seat, Short, page, render
from remem.errors import InvalidInput
from remem.policy import scope
from remem.service import audit

router = APIRouter(include_in_schema=False)

PAGE = 100  # the rows of one page
EXPORT_MAX = 10_000  # the rows of one export (narrow it by actor, key or action)


def _rows(
    at: Seat, actor: str, key: str, action: str, before: str, limit: int
) -> list[dict[str, Any]]:
    """The rows the key may see under the filters, newest first, below row id `before`."""
    scope.need_role(at.who, "admin")
    if action and action not in audit.ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(audit.ACTIONS)}")
    if before and not (before.isascii() and before.isdigit()):  # "²" is a digit, no number
        raise InvalidInput("before must be a row id this page handed out")
    if at.who.actor is not None:  # a key for one actor: its rows only
        actor = scope.allow(at.who, actor) if actor else at.who.actor
    return at.svc.store.audit.audit_log(
        at.who.tenant,
        actor=actor or None,
        key_id=key or None,
        action=action or None,
        before=int(before) if before else None,
        limit=limit,
    )


@router.get(PREFIX + "/audit")
@page("Audit")
def audit_log(
    request: Request, at: At, actor: Short = "", key: Short = "", action: Short = "",
    before: Short = "",
) -> Response:  # fmt: skip
    """The audit log, `PAGE` rows at a time, newest first."""
    rows = _rows(at, actor.strip(), key.strip(), action.strip(), before.strip(), PAGE + 1)
    context = {
        "title": "Audit",
        "rows": rows[:PAGE],
        "older": rows[PAGE - 1]["id"] if len(rows) > PAGE else None,
        "filters": {"actor": actor.strip(), "key": key.strip(), "action": action.strip()},
        "actions": audit.ACTIONS,
        "retention": audit.retention_days(),
    }
    return render(request, "audit.html", context, at=at)


@router.get(PREFIX + "/audit/export")
@page("Audit")
def export(
    request: Request, at: At, actor: Short = "", key: Short = "", action: Short = ""
) -> Response:
    """The filtered audit log as a JSON download (at most `EXPORT_MAX` rows, newest first)."""
    rows = _rows(at, actor.strip(), key.strip(), action.strip(), "", EXPORT_MAX)
    body = {"tenant": at.who.tenant, "rows": rows}
    return Response(
        json.dumps(body, ensure_ascii=False, indent=1),
        media_type="application/json",
        headers={**HEADERS, "Content-Disposition": 'attachment; filename="remem-audit.json"'},
    )
