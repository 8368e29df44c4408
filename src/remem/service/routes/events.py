"""Events: append (one or a batch) and list an actor's, a page at a time."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import base64
import binascii
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from remem.errors import InvalidCursor
from remem.ids import new_id
from remem.policy import scope
from remem.policy.scope import check_name
from remem.service import audit
from remem.service.answers import KEYED, EventsCreated, EventsPage, ImportDigests, errors
from remem.service.onehop import OneHop
from remem.service.routes.deps import Svc, Via, Who
from remem.service.schemas import EventBatchIn, EventIn, ImportBatchIn
from remem.writes.events import import_digests

router = APIRouter()
# what `_cursor` hands out, matched whole: the last event's UTC time and its seq
_CURSOR = re.compile(
    r"k:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00)\|([0-9]{1,19})"
)
_MAX_SEQ = 2**63 - 1  # a bigint


def create_events(body: EventBatchIn | EventIn, who: Who, svc: Svc) -> JSONResponse:
    """Append one event, or a batch in one transaction (CreateEvent)."""
    # served in one thread hop (`remem.service.onehop`): the answer is built to
    # `EventsCreated`'s fields and sent as it is (test_openapi.py holds it to the model)
    items = body.events if isinstance(body, EventBatchIn) else [body]
    for item in items:
        scope.allow(who, item.actor_id)
    rows = [
        {
            "actor": e.actor_id,
            "session": e.session_id,
            "role": e.role,
            "text": e.text,
            "time": e.time,
            "event_id": e.event_id or new_id("evt"),
            "metadata": e.metadata,
        }
        for e in items
    ]
    mem = svc.memory(who.tenant)
    created = mem.add_events(rows)
    svc.written()
    # an erased actor's new events start a new memory: say so beside each of them
    fresh = {a: mem.fresh_start(a) for a in {e.actor_id for e in items}}
    out = []
    for e, r, c in zip(items, rows, created, strict=True):
        answer: dict[str, Any] = {"event_id": r["event_id"], "created": c}
        if fresh[e.actor_id] is not None:
            answer["fresh_start"] = fresh[e.actor_id]
        out.append(answer)
    return JSONResponse({"events": out}, status_code=201)


router.add_api_route(
    "/v1/events",
    create_events,
    methods=["POST"],
    status_code=201,
    tags=["events"],
    operation_id="create_events",
    response_model=EventsCreated,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403, 409),
    route_class_override=OneHop,  # the key, the body and the append in one hop
)


@router.post(
    "/v1/events/import-ids",
    tags=["events"],
    operation_id="import_event_ids",
    response_model=ImportDigests,
    response_model_exclude_none=True,
    responses=errors(*KEYED, 403),
)
def import_event_ids(body: ImportBatchIn, who: Who, svc: Svc) -> dict[str, Any]:
    """The content digests an import makes ids from, for rows without an `event_id`
    (`Memory.import_events`; nothing is written). `Client.import_events` numbers
    identical rows across its batches and appends them with those ids, so an import
    over HTTP is re-runnable and gives the ids the library's import gives."""
    rows = [_library_row(r) for r in body.events]
    for r in rows:
        if isinstance(r.get("actor"), str):
            scope.allow(who, r["actor"])
    mem = svc.memory(who.tenant)
    digests, bad = import_digests(mem.deps, rows, mem.max_clock_skew)
    if bad is None:
        return {"digests": digests}
    index, exc = bad
    return {"digests": digests, "index": index, "error": {"code": exc.code, "message": str(exc)}}


def _library_row(row: dict[str, Any]) -> dict[str, Any]:
    """An event in the HTTP names (`actor_id`, `session_id`) in the library's."""
    names = {"actor_id": "actor", "session_id": "session"}
    return {names.get(k, k): v for k, v in row.items()}


@router.get(
    "/v1/events",
    tags=["events"],
    operation_id="list_events",
    response_model=EventsPage,
    responses=errors(*KEYED, 400, 403),
)
def list_events(
    who: Who,
    svc: Svc,
    actor_id: Annotated[str | None, Query(max_length=200)] = None,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
    via: Via = "api",
) -> dict[str, Any]:
    """An actor's events in the order they happened, a page at a time (ListEvents)."""
    actor = scope.actor_for(who, actor_id)
    if session_id is not None:
        check_name("session", session_id)
    mem = svc.memory(who.tenant)
    rows, key = mem.events_page(actor=actor, session=session_id, after=_key(cursor), limit=limit)
    audit.note(svc.store.audit, who, "read", via, actor=actor, target=session_id, events=len(rows))
    return {
        "events": [
            {
                "event_id": e.id,
                "actor_id": e.actor,
                "session_id": e.session,
                "role": e.role.value,
                "text": e.text,
                "time": e.time.isoformat(),
                "metadata": e.metadata,
            }
            for e in rows
        ],
        "next_cursor": _cursor(key) if key is not None else None,
    }


def _cursor(key: tuple[datetime, int]) -> str:
    """The page's end as an opaque cursor: the last event's UTC time and arrival number."""
    when, seq = key
    text = f"k:{when.astimezone(UTC).isoformat(timespec='microseconds')}|{seq}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _key(cursor: str | None) -> tuple[datetime, int] | None:
    """The key a cursor of `_cursor` holds (None: the first page); anything else is
    InvalidCursor (400), never echoed."""
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if (m := _CURSOR.fullmatch(text)) is not None and int(m[2]) <= _MAX_SEQ:
            return datetime.fromisoformat(m[1]), int(m[2])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidCursor("cursor is not one this service handed out; omit it to start over")
