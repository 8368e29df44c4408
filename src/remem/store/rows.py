"""Rows of either backend to remem's values, and values to named parameters.

The two stores return the same columns in their own types: SQLite gives ISO
text for times and JSON text for lists and objects, PostgreSQL gives
`datetime`s, arrays and decoded jsonb. Each store passes its own decoders;
the shape of an `Event` and a `Record` is written once, here. The other way,
`record_params` and friends give the named parameters of the INSERT statements
(`:id` / `%(id)s`), each value passed through the backend's encoders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from remem.model import (
    Authority,
    Event,
    HistoryEntry,
    JobInfo,
    Kind,
    LLMCall,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)
from remem.store.roles import Near

Time = Callable[[Any], datetime]  # a time column to an aware UTC datetime
Items = Callable[[Any], Iterable[str]]  # a list column (JSON text or an array) to its items
Obj = Callable[[Any], dict[str, Any]]  # a JSON object column to a dict
At = Callable[[datetime | None], Any]  # a time to the driver's parameter (None stays None)
Encode = Callable[[Any], object]  # a list or a JSON value to the driver's parameter


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
        metadata=metadata_from(r["metadata"]),
    )


def metadata_from(stored: str | None) -> dict[str, Any]:
    """A record's metadata from its column: JSON text on both backends, NULL for none."""
    if not stored:
        return {}
    found = json.loads(stored)
    return found if isinstance(found, dict) else {}


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


def job_info_from(r: Any, time: Time) -> JobInfo:
    """A `JobInfo` from a row of the jobs table."""
    return JobInfo(
        id=r["id"],
        event_id=r["event_id"],
        strategy=r["strategy"],
        status=r["status"],
        attempts=r["attempts"],
        last_error=r["last_error"],
        run_after=time(r["run_after"]) if r["run_after"] else None,
        updated_at=time(r["updated_at"]),
    )


def record_params(rec: Record, at: At, items: Encode) -> dict[str, Any]:
    """The named parameters of `INSERT_RECORD` for one record (one per column)."""
    return {
        "id": rec.id,
        "tenant": rec.tenant,
        "actor": rec.actor,
        "namespace": rec.namespace,
        "kind": rec.kind.value,
        "text": rec.text,
        "field": rec.field,
        "value": rec.value,
        "source_type": rec.source.type,
        "source_event_ids": items(list(rec.source.event_ids)),
        "strategy": rec.source.strategy,
        "extractor": rec.source.extractor,
        "authority": rec.authority.value,
        "sensitivity": rec.sensitivity.value,
        "valid_from": at(rec.valid_from),
        "valid_until": at(rec.valid_until),
        "created_at": at(rec.created_at),
        "updated_at": at(rec.updated_at),
        "status": rec.status.value,
        "supersedes": rec.supersedes,
        "superseded_by": rec.superseded_by,
        "flags": items(list(rec.flags)),
        "metadata": json_text(rec.metadata) if rec.metadata else None,
    }


def json_text(value: Any) -> str:
    """The JSON text an event's (and a record's) metadata is stored as on both backends: compact, in
    the caller's key order, numbers as Python writes them (`1e+308`), so it reads
    back as it was sent (PostgreSQL's jsonb wrote 1e308 out in 309 digits)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event_params(e: Event, received_at: Any, at: At, obj: Encode) -> dict[str, Any]:
    """The named parameters of `INSERT_EVENT` for one event arriving at `received_at`."""
    return {
        "tenant": e.tenant,
        "id": e.id,
        "actor": e.actor,
        "session": e.session,
        "role": e.role.value,
        "text": e.text,
        "time": at(e.time),
        "metadata": obj(e.metadata),
        "received_at": received_at,
    }


def history_params(tenant: str, h: HistoryEntry, at: At) -> dict[str, Any]:
    """The named parameters of `INSERT_HISTORY` for one history entry."""
    return {
        "tenant": tenant, "record_id": h.record_id, "action": h.action, "at": at(h.at),
        "text": h.text, "status": h.status.value, "related_id": h.related_id,
        "reason": h.reason, "by_whom": h.by,
    }  # fmt: skip


def llm_call_params(tenant: str, c: LLMCall, at: Any) -> dict[str, Any]:
    """The named parameters of `INSERT_LLM_CALL` for one model call (its error cut short)."""
    return {
        "tenant": tenant, "job_id": c.job_id, "strategy": c.strategy, "model": c.model,
        "prompt_version": c.prompt_version, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "seconds": c.seconds, "ok": c.ok,
        "error": c.error[:500] or None, "at": at,
    }  # fmt: skip
