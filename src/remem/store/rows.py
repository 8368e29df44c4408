"""Rows of either backend to remem's values.

The two stores return the same columns in their own types: SQLite gives ISO
text for times and JSON text for lists and objects, PostgreSQL gives
`datetime`s, arrays and decoded jsonb. Each store passes its own decoders;
the shape of an `Event` and a `Record` is written once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from remem.model import Authority, Event, Kind, Record, Role, Sensitivity, Source, Status
from remem.store.base import Near

Time = Callable[[Any], datetime]  # a time column to an aware UTC datetime
Items = Callable[[Any], Iterable[str]]  # a list column (JSON text or an array) to its items
Obj = Callable[[Any], dict[str, Any]]  # a JSON object column to a dict


def event_from(r: Mapping[str, Any], time: Time, obj: Obj) -> Event:
    """An `Event` from a row of the events table."""
    return Event(
        id=r["id"],
        tenant=r["tenant"],
        actor=r["actor"],
        session=r["session"],
        role=Role(r["role"]),
        text=r["text"],
        time=time(r["time"]),
        metadata=obj(r["metadata"]),
        received_at=time(r["received_at"]),
    )


def record_from(r: Mapping[str, Any], time: Time, items: Items) -> Record:
    """A `Record` from a row of the records table."""
    return Record(
        id=r["id"],
        tenant=r["tenant"],
        actor=r["actor"],
        namespace=r["namespace"],
        kind=Kind(r["kind"]),
        text=r["text"],
        field=r["field"],
        value=r["value"],
        source=Source(
            type=r["source_type"],
            event_ids=tuple(items(r["source_event_ids"])),
            strategy=r["strategy"],
            extractor=r["extractor"],
        ),
        authority=Authority(r["authority"]),
        sensitivity=Sensitivity(r["sensitivity"]),
        valid_from=time(r["valid_from"]),
        valid_until=time(r["valid_until"]) if r["valid_until"] else None,
        created_at=time(r["created_at"]),
        updated_at=time(r["updated_at"]),
        status=Status(r["status"]),
        supersedes=r["supersedes"],
        superseded_by=r["superseded_by"],
        flags=tuple(items(r["flags"])),
    )


def near_from(rows: Iterable[Any], event: Callable[[Any], Event]) -> Near:
    """`Store.events_near` from rows naming the event each is near (`near_of`) and its
    side (-1 before, 1 after), with `time` and `seq`: the distance is the rank on
    its side, nearest first."""
    sides: dict[tuple[str, int], list[Any]] = {}
    for r in rows:
        sides.setdefault((r["near_of"], r["side"]), []).append(r)
    found: Near = {}
    for (near_of, side), side_rows in sides.items():
        side_rows.sort(key=lambda r: (r["time"], r["seq"]), reverse=side < 0)
        found.setdefault(near_of, []).extend(
            (distance, event(r)) for distance, r in enumerate(side_rows, start=1)
        )
    return found
