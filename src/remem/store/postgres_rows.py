"""Rows of the PostgreSQL store to remem's values and back.

`remem.store.postgres` runs the queries; this module only converts: a row
(a psycopg `DictRow`) to an `Event`, a `Record`, a `HistoryEntry` or a
`JobInfo`; values to the parameters of the INSERT statements; vectors to
pgvector's binary form and from its text form.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from remem.model import (
    Event,
    HistoryEntry,
    JobInfo,
    LLMCall,
    Record,
    Status,
)
from remem.store.rows import event_from, record_from
from remem.timeutil import to_db

ALL_TENANTS = None  # `_tx(ALL_TENANTS)`: a transaction that spans tenants by design


def value(rows: Sequence[DictRow]) -> Any:
    """The single value of a one-row, one-column result."""
    return next(iter(rows[0].values()))


class VectorDumper(Dumper):
    """numpy vectors sent in pgvector's binary form: the dimension, a zero, then the
    values as big-endian float4 (about 1 µs a vector, where text takes hundreds).
    Registered on each pooled connection with the database's oid of `vector`."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        v = np.asarray(obj, dtype=">f4")
        return struct.pack(">HH", v.shape[0], 0) + v.tobytes()


def vector_dumper(oid: int) -> type[VectorDumper]:
    """`VectorDumper` for a database whose `vector` type has this oid."""
    return type("VectorDumper", (VectorDumper,), {"oid": oid})


def vector_text(v: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(v, np.float32)) + "]"


def parse_vector(text: str) -> npt.NDArray[np.float32]:
    """A vector from pgvector's text form."""
    return np.array(text.strip("[]").split(","), dtype=np.float32)


def utc(t: datetime) -> datetime:
    """A timestamptz as psycopg returns it (in the session's zone), in UTC."""
    return t.astimezone(UTC)


def iso(t: datetime) -> str:
    """A time in the fixed ISO form the SQLite backend also returns."""
    return str(to_db(t))


def json_value(value: Any) -> Any:
    """A jsonb column's value (psycopg decodes jsonb; a text column would need parsing)."""
    return value if isinstance(value, dict | list) else json.loads(value)


def event_from_row(r: DictRow) -> Event:
    """An `Event` from a row of `EVENT_COLUMNS`."""
    return event_from(r, utc, json_value)


def record_from_row(r: DictRow) -> Record:
    """A `Record` from a row of `RECORD_COLUMNS`."""
    return record_from(r, utc, _array)


def _array(v: Any) -> list[str]:
    return list(v)


def history_from_row(r: DictRow) -> HistoryEntry:
    """A `HistoryEntry` from a row of `HISTORY`."""
    return HistoryEntry(
        record_id=r["record_id"],
        action=r["action"],
        at=utc(r["at"]),
        text=r["text"],
        status=Status(r["status"]),
        related_id=r["related_id"],
        reason=r["reason"],
        by=r["by_whom"],
    )


def job_info_from_row(r: DictRow) -> JobInfo:
    """A `JobInfo` from a row of `JOB_INFO_COLUMNS`."""
    return JobInfo(
        id=r["id"],
        event_id=r["event_id"],
        strategy=r["strategy"],
        status=r["status"],
        attempts=r["attempts"],
        last_error=r["last_error"],
        run_after=utc(r["run_after"]) if r["run_after"] else None,
        updated_at=utc(r["updated_at"]),
    )


def record_params(rec: Record) -> tuple[Any, ...]:
    """The parameters of `INSERT_RECORD` for one record, in `RECORD_COLUMNS` order."""
    return (
        rec.id,
        rec.tenant,
        rec.actor,
        rec.namespace,
        rec.kind.value,
        rec.text,
        rec.field,
        rec.value,
        rec.source.type,
        list(rec.source.event_ids),
        rec.source.strategy,
        rec.source.extractor,
        rec.authority.value,
        rec.sensitivity.value,
        rec.valid_from,
        rec.valid_until,
        rec.created_at,
        rec.updated_at,
        rec.status.value,
        rec.supersedes,
        rec.superseded_by,
        list(rec.flags),
    )


def event_params(e: Event, received_at: datetime) -> tuple[Any, ...]:
    """The parameters of `INSERT_EVENT` for one event."""
    return (
        e.tenant,
        e.id,
        e.actor,
        e.session,
        e.role.value,
        e.text,
        e.time,
        Jsonb(e.metadata),
        received_at,
    )


def history_params(tenant: str, h: HistoryEntry) -> tuple[Any, ...]:
    """The parameters of `INSERT_HISTORY` for one history entry."""
    return (tenant, h.record_id, h.action, h.at, h.text, h.status.value, h.related_id, h.reason,
            h.by)  # fmt: skip


def llm_call_params(tenant: str, c: LLMCall, at: datetime) -> tuple[Any, ...]:
    """The parameters of `INSERT_LLM_CALL` for one logged model call (its error cut short)."""
    return (
        tenant,
        c.job_id,
        c.strategy,
        c.model,
        c.prompt_version,
        c.prompt_tokens,
        c.completion_tokens,
        c.seconds,
        c.ok,
        c.error[:500] or None,
        at,
    )
