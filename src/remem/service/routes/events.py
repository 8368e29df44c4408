"""Events: append (one or a batch) and list an actor's, a page at a time."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import base64
import binascii
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from remem.errors import InvalidInput
from remem.ids import new_id
from remem.policy import scope
from remem.policy.scope import check_name
from remem.service import audit
from remem.service.answers import KEYED, EventsCreated, EventsPage, errors
from remem.service.routes.deps import Svc, Via, Who
from remem.service.schemas import EventBatchIn, EventIn

router = APIRouter()
# what `_cursor` hands out, matched whole: the last event's UTC time and its seq
_CURSOR = re.compile(
    r"k:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00)\|([0-9]{1,19})"
)
_MAX_SEQ = 2**63 - 1  # a bigint


@router.post(
    "/v1/events",
    status_code=201,
    tags=["events"],
    operation_id="create_events",
    response_model=EventsCreated,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403, 409),
)
def create_events(body: EventBatchIn | EventIn, who: Who, svc: Svc) -> dict[str, Any]:
    """Append one event, or a batch in one transaction (CreateEvent)."""
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
    return {"events": out}


@router.get(
    "/v1/events",
    tags=["events"],
    operation_id="list_events",
    response_model=EventsPage,
    responses=errors(*KEYED, 403),
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
    audit.note(svc.store, who, "read", via, actor=actor, target=session_id, events=len(rows))
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
    InvalidInput, never echoed."""
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if (m := _CURSOR.fullmatch(text)) is not None and int(m[2]) <= _MAX_SEQ:
            return datetime.fromisoformat(m[1]), int(m[2])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput("cursor is not one this service handed out; omit it to start over")
