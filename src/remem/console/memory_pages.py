"""The tenant's actors, one actor's memory, and one record with its provenance,
history, supersession timeline and conflicts."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from remem.console import browse, views
from remem.console.web import PREFIX, At, Seat, page, render
from remem.errors import RememError
from remem.model import Kind
from remem.policy import scope
from remem.service import paging
from remem.service.routes import facts, records
from remem.timeutil import utcnow

router = APIRouter(include_in_schema=False)

Text = Annotated[str, Query(max_length=200)]
MAX_CHAIN = 50  # the longest supersession chain a record page walks
PAGE = 100  # the records of one page of an actor's memory


@router.get(PREFIX + "/actors")
@page("Actors")
def actors(request: Request, at: At, q: Text = "") -> Response:
    """The tenant's actors (a key for one actor: that one) with their counts."""
    found = at.svc.store.actors.summaries(at.who.tenant, only=at.who.actor, contains=q.strip())
    return render(request, "actors.html", {"title": "Actors", "actors": found, "q": q}, at=at)


@router.get(PREFIX + "/actors/{actor}")
@page("Memory")
def memory(
    request: Request,
    actor: str,
    at: At,
    kind: Text = "",
    status: Text = "active",
    namespace: Annotated[str, Query(max_length=1000)] = "",
    q: Annotated[str, Query(max_length=1000)] = "",
    cursor: paging.Cursor = None,
) -> Response:
    """One actor's records by kind, `PAGE` at a time (a cursor for the next page),
    filtered by kind, status and namespace; with `q`, the records and events the
    full-text index finds for it instead (`browse.search`), under the same filters.
    The fields whose values conflict are shown as such."""
    if status not in views.STATUS_FILTERS:
        status = "active"
    filters = {"kind": kind, "status": status, "namespace": namespace.strip()}
    found_events: list[dict[str, Any]] = []
    after = None
    if q.strip():
        shown, found_events = browse.search(at, actor, q.strip(), filters)
        listed: list[dict[str, Any]] = shown
    else:
        page_of = records.list_memories(
            at.who, at.svc, actor_id=actor, all=True, limit=PAGE, cursor=cursor,
            namespace=namespace.strip() or None, via="console",
        )  # fmt: skip
        listed, after = page_of["records"], page_of["next_cursor"]
        shown = views.filter_records(listed, utcnow(), **filters)
    profile = facts.get_profile(actor, at.who, at.svc, via=None)
    context = {
        "title": f"Memory of {actor}",
        "actor": actor,
        "groups": views.by_kind(shown),
        "shown": len(shown),
        "total": len(listed),
        "events": found_events,
        "q": q.strip(),
        "next_cursor": after,
        "paged": cursor is not None,
        "conflicts": views.conflicted(profile),
        "kinds": [k.value for k in Kind],
        "statuses": views.STATUS_FILTERS,
        "namespaces": sorted({r["namespace"] for r in listed} | ({filters["namespace"]} - {""})),
        "filters": {"kind": kind, "status": status, "namespace": namespace},
    }
    return render(request, "memory.html", context, at=at)


@router.get(PREFIX + "/records/{record_id}")
@page("Record")
def record(request: Request, record_id: str, at: At) -> Response:
    """One record: its fields, the events it came from (quoted), its history, its
    supersession chain as a timeline, and the conflict it is part of."""
    rec = records.get_memory(record_id, at.who, at.svc, via="console")
    history = records.memory_history(record_id, at.who, at.svc, via=None)["history"]
    chain = _chain(at, rec)
    sources = at.svc.store.events.get_events(at.who.tenant, rec["source"]["event_ids"])
    conflict: list[dict[str, Any]] = []
    if rec["field"] and rec["actor"] != scope.SHARED_ACTOR and rec["status"] == "active":
        profile = facts.get_profile(rec["actor"], at.who, at.svc, via=None)
        conflict = views.conflicted(profile).get(rec["field"], [])
    stored = at.svc.store.records.get_record(at.who.tenant, record_id)
    writable = at.who.may_see(stored, write=True)
    context = {
        "title": f"Record {record_id}",
        "rec": rec,
        "may_forget": writable and at.who.has_role("admin"),
        "may_correct": writable
        and at.who.has_role("reviewer")
        and rec["status"] == "active"
        and rec["kind"] not in ("procedural", "summary"),
        "history": history,
        "timeline": views.timeline(chain, rec["id"]),
        "events": [e for e in sources if e.actor == rec["actor"]],
        "conflict": conflict,
    }
    return render(request, "record.html", context, at=at)


def _chain(at: Seat, rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The records `rec` supersedes and that supersede it, oldest first, as far as the
    key may see them (through the same read the API's GET /v1/memories/{id} is)."""
    older: list[dict[str, Any]] = []
    newer: list[dict[str, Any]] = []
    seen = {rec["id"]}
    for link, into in (("supersedes", older), ("superseded_by", newer)):
        step = rec
        while step.get(link) and step[link] not in seen and len(seen) < MAX_CHAIN:
            seen.add(step[link])
            try:
                step = records.get_memory(step[link], at.who, at.svc, via=None)
            except RememError:  # erased since, or outside the key's scope
                break
            into.append(step)
    return [*reversed(older), rec, *newer]
