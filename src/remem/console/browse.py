"""Search one actor's memory and read a session's transcript.

Search runs the full-text index recall runs (`Store.search_records` and
`Store.search_events`, BM25 scoped to one tenant and one actor inside the index),
through the same scope check as every API read (`scope.actor_for`): a key for one
actor is refused another's before anything is read. A transcript is a session's
turns in the order they happened (GET /v1/events), each with the records made
from it; an erased turn (its text emptied by a record's erasure) is shown as erased.
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from remem.console import views
from remem.console.web import PREFIX, At, Seat, page, render
from remem.errors import InvalidInput
from remem.policy import scope
from remem.service import audit
from remem.service.routes import events
from remem.store.values import Scope
from remem.timeutil import utcnow

router = APIRouter(include_in_schema=False)

Text = Annotated[str, Query(max_length=200)]
SEARCH_HITS = 50  # the best records and the best events a search shows
TURNS = 100  # the turns of a transcript page


def search(
    at: Seat, actor: str, query: str, filters: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The actor's records (best first, passing the memory page's `filters`) and raw
    events matching `query`, at most `SEARCH_HITS` of each, as far as the key may see."""
    owner = scope.actor_for(at.who, actor)
    store, tenant = at.svc.store, at.who.tenant
    where = Scope(tenant, owner)
    hits = store.search.search_records(where, query, SEARCH_HITS)
    found = {r.id: r for r in store.records.get_records(tenant, [h.id for h in hits])}
    ranked = [
        found[h.id].as_dict()
        for h in hits
        if h.id in found and found[h.id].actor == owner and at.who.may_see(found[h.id])
    ]
    shown = views.filter_records(ranked, utcnow(), **filters)
    said = store.search.search_events(where, query, SEARCH_HITS)
    by_id = {e.id: e for e in store.events.get_events(tenant, [h.id for h in said])}
    turns = [_turn(by_id[h.id]) for h in said if h.id in by_id and by_id[h.id].actor == owner]
    kept = [t for t in turns if not t["erased"]]
    audit.note(store.audit, at.who, "search", "console", actor=owner, records=len(shown),
               events=len(kept))  # fmt: skip
    return shown, kept


@router.get(PREFIX + "/actors/{actor}/transcript")
@page("Transcript")
def transcript(
    request: Request,
    actor: str,
    at: At,
    session: Text = "",
    cursor: Annotated[str, Query(max_length=100)] = "",
) -> Response:
    """One session of an actor, turn by turn in order, `TURNS` a page, each turn linked
    to the records made from it; an erased turn says so and shows nothing of it."""
    if not session.strip():
        raise InvalidInput("session is required: the id of one of the actor's sessions")
    listed = events.list_events(
        at.who, at.svc, actor_id=actor, session_id=session.strip(), limit=TURNS,
        cursor=cursor or None, via="console",
    )  # fmt: skip
    rows = listed["events"]
    made = at.svc.store.records.records_of_events(at.who.tenant, [e["event_id"] for e in rows])
    ids = sorted({rid for found in made.values() for rid in found})
    seen = {
        r.id: r for r in at.svc.store.records.get_records(at.who.tenant, ids) if at.who.may_see(r)
    }
    turns = []
    for e in rows:
        recs = [seen[rid] for rid in made.get(e["event_id"], []) if rid in seen]
        turns.append(
            {
                "id": e["event_id"],
                "role": e["role"],
                "time": e["time"][:19],
                "text": e["text"],
                "erased": not e["text"],
                "records": [{"id": r.id, "text": r.text, "status": r.status.value} for r in recs],
            }
        )
    context = {
        "title": f"Session {session} of {actor}",
        "actor": actor,
        "session": session.strip(),
        "turns": turns,
        "next_cursor": listed["next_cursor"],
    }
    return render(request, "transcript.html", context, at=at)


def _turn(e: Any) -> dict[str, Any]:
    return {
        "id": e.id,
        "session": e.session,
        "role": e.role.value,
        "time": e.time.isoformat(timespec="seconds"),
        "text": e.text,
        "erased": not e.text,
    }
