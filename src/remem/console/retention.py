"""Retention and sensitivity across the tenant's actors: what expires soon, and where
records marked `sensitive` are (admins and reviewers).

Expiring: the active records whose valid-until falls within the next 7 or 30 days,
soonest first. Sensitive: per actor, the fields of its active `sensitive` records
and how many there are; their text is shown only to a key that may read them one by
one as well (`Principal.may_see`) and holds the admin role. A page reads the active
records of at most `MAX_ACTORS` actors (the most recently active), `PER_ACTOR` each,
and says so when it stopped there.
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from collections import Counter
from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from remem.console.web import PREFIX, At, page, render
from remem.policy import scope
from remem.timeutil import parse_time, utcnow

router = APIRouter(include_in_schema=False)

WINDOWS = (7, 30)  # the days ahead the page looks, as offered
MAX_ACTORS = 200
PER_ACTOR = 2000


@router.get(PREFIX + "/retention")
@page("Retention")
def retention(request: Request, at: At, days: Annotated[int, Query(ge=1, le=30)] = 7) -> Response:
    """What expires in the next `days` days, and the sensitive records by actor."""
    scope.need_role(at.who, "reviewer")
    now = utcnow()
    horizon = now + timedelta(days=days)
    mem = at.svc.memory(at.who.tenant)
    actors = at.svc.store.actors.summaries(at.who.tenant, only=at.who.actor, limit=MAX_ACTORS)
    expiring: list[dict[str, Any]] = []
    sensitive: list[dict[str, Any]] = []
    show_text = at.who.has_role("admin")
    capped = len(actors) >= MAX_ACTORS
    for a in actors:
        recs = mem.records(actor=a.actor, limit=PER_ACTOR)
        capped = capped or len(recs) >= PER_ACTOR
        for r in recs:
            if not at.who.may_see(r):
                continue
            until = r.valid_until
            if until is not None and now < until <= horizon:
                expiring.append({**r.as_dict(), "expires": until.isoformat(timespec="minutes")})
        marked = [r for r in recs if r.sensitivity.value == "sensitive" and at.who.may_see(r)]
        if marked:
            fields = Counter(r.field or "(no field)" for r in marked)
            sensitive.append(
                {
                    "actor": a.actor,
                    "count": len(marked),
                    "fields": sorted(fields.items()),
                    "records": [{"id": r.id, "text": r.text} for r in marked] if show_text else [],
                }
            )
    expiring.sort(key=lambda r: parse_time(r["valid_until"]))
    context = {
        "title": "Retention",
        "days": days,
        "windows": WINDOWS,
        "expiring": expiring,
        "sensitive": sensitive,
        "show_text": show_text,
        "capped": capped,
    }
    return render(request, "retention.html", context, at=at)
