"""The values that travel along the path of a memory.

    Event ──► Job ──► Candidate ──► (consolidation) ──► Record ──► Packet

All of them are frozen dataclasses: they are values, they never talk to the
database. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    """Who produced an event."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class Kind(StrEnum):
    """What kind of long-term memory a record is."""

    SEMANTIC = "semantic"
    PREFERENCE = "preference"
    SUMMARY = "summary"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class Status(StrEnum):
    """Where a record is in its lifecycle."""

    ACTIVE = "active"
    INVALID = "invalid"  # superseded or invalidated; kept as history
    PROPOSED = "proposed"  # waits for review; never recalled
    DELETED = "deleted"


class Authority(StrEnum):
    """How much a record is to be trusted; see `remem.policy.precedence`."""

    SYSTEM_OF_RECORD = "system_of_record"
    CONFIRMED = "confirmed"  # an explicit, current statement of the user
    APPROVED = "approved"  # an approved organisation or project record
    VERIFIED_OUTCOME = "verified_outcome"
    INFERRED = "inferred"  # a candidate accepted through consolidation
    SUMMARY = "summary"


class Sensitivity(StrEnum):
    """How a record may be used."""

    NORMAL = "normal"
    PERSONAL = "personal"
    SENSITIVE = "sensitive"


class Action(StrEnum):
    """What consolidation decided for a candidate."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    NOOP = "NOOP"
    INVALIDATE = "INVALIDATE"


@dataclass(frozen=True, slots=True)
class Event:
    """One turn or observation in a thread (short-term memory)."""

    id: str
    tenant: str
    actor: str
    session: str
    role: Role
    text: str
    time: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    # when remem stored it (set by the store on reading; None on a new event): an
    # event is known from then on (see `remem.policy.validity`)
    received_at: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a record or candidate came from."""

    type: str  # "event" | "explicit" | "outcome"
    event_ids: tuple[str, ...] = ()
    strategy: str = ""
    extractor: str = ""  # extractor name and version, e.g. "offline-rules/1"

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "event_ids": list(self.event_ids),
            "strategy": self.strategy,
            "extractor": self.extractor,
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    """What an extractor proposes: never a fact until consolidation accepts it.

    `field` names the thing the statement is about ("home city", "budget:trip",
    "diet"); two candidates with the same field and different values describe
    the same thing at different times. `observed_at` is the source event's own
    time, which decides recency.
    """

    text: str
    kind: Kind
    source: Source
    observed_at: datetime
    field: str | None = None
    value: str | None = None
    authority: Authority = Authority.INFERRED
    sensitivity: Sensitivity = Sensitivity.NORMAL
    is_correction: bool = False
    # the application's JSON object kept beside the record (`remem.policy.metadata`)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Record:
    """A durable, governed memory record: the source of truth for recall."""

    id: str
    tenant: str
    actor: str
    namespace: str
    kind: Kind
    text: str
    source: Source
    authority: Authority
    sensitivity: Sensitivity
    valid_from: datetime
    created_at: datetime
    updated_at: datetime
    status: Status = Status.ACTIVE
    field: str | None = None
    value: str | None = None
    valid_until: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    flags: tuple[str, ...] = ()
    # the application's JSON object kept beside the record (`remem.policy.metadata`)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, as the CLI and HTTP service print it."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "actor": self.actor,
            "namespace": self.namespace,
            "kind": self.kind.value,
            "text": self.text,
            "field": self.field,
            "value": self.value,
            "authority": self.authority.value,
            "sensitivity": self.sensitivity.value,
            "status": self.status.value,
            "valid_from": iso(self.valid_from),
            "valid_until": iso(self.valid_until),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "flags": list(self.flags),
            "source": self.source.as_dict(),
            "metadata": self.metadata,
        }


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One row of a record's append-only history."""

    record_id: str
    action: str  # ADD, UPDATE, SUPERSEDED, INVALIDATE, DELETE, ...
    at: datetime
    text: str | None
    status: Status
    related_id: str | None = None
    reason: str = ""
    by: str = ""  # who made the change: an extractor, "user", a reviewer's name

    def as_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "action": self.action,
            "at": iso(self.at),
            "text": self.text,
            "status": self.status.value,
            "related_id": self.related_id,
            "reason": self.reason,
            "by": self.by,
        }


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of extraction work from the outbox."""

    id: int
    tenant: str
    event_id: str
    strategy: str
    attempts: int


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What `remem jobs list` shows of one extraction job."""

    id: int
    event_id: str
    strategy: str
    status: str  # pending | running | done | failed
    attempts: int
    last_error: str | None
    run_after: datetime | None
    updated_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "event_id": self.event_id,
            "strategy": self.strategy,
            "status": self.status,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "run_after": self.run_after.isoformat() if self.run_after else None,
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One call to a language model, as logged: never its prompt, its answer or a key."""

    strategy: str
    model: str
    prompt_version: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    ok: bool
    error: str = ""  # why the call failed, or, on a usable answer, what of it was dropped
    job_id: int | None = None
    # items of the answer dropped for naming an event the prompt did not list (never
    # re-attributed to another event); kept in the log row's `error` as a note
    dropped: int = 0


@dataclass(frozen=True, slots=True)
class PacketItem:
    """One memory handed back by recall, with its provenance."""

    id: str
    text: str
    kind: str  # a Kind, or "event" for a raw event from the thread log
    namespace: str
    status: str
    source_date: datetime
    source: dict[str, Any]
    score: float
    tokens: int
    flags: tuple[str, ...] = ()
    # a record's metadata (`Record.metadata`); not counted in `tokens`: it is the
    # application's, not text for the model
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    @property
    def turns(self) -> tuple[str, ...]:
        """The events it was made from (`source["event_ids"]`)."""
        return tuple(self.source.get("event_ids", ()))

    def as_dict(self) -> dict[str, Any]:
        """The item as JSON-ready data; `metadata` only when the record has some."""
        out = {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "namespace": self.namespace,
            "status": self.status,
            "source_date": iso(self.source_date),
            "source": self.source,
            "score": round(self.score, 6),
            "tokens": self.tokens,
            "flags": list(self.flags),
        }
        if self.metadata:
            out["metadata"] = self.metadata
        return out


@dataclass(frozen=True, slots=True)
class DocumentItem:
    """One chunk of a document handed back by recall: what it says and where it stands.

    `position` is the page (`{"page": n}`) or heading path (`{"headings": [...]}`) of
    the chunk; `span` its character offsets into the document's normalised text
    (`remem.documents.parse.normalise`). A document is a source, never a memory.
    """

    id: str
    document_id: str
    title: str
    source_uri: str | None
    version: int
    position: dict[str, Any]
    span: tuple[int, int]
    text: str
    score: float
    tokens: int
    flags: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "document_chunk",
            "document_id": self.document_id,
            "title": self.title,
            "source_uri": self.source_uri,
            "version": self.version,
            "position": self.position,
            "span": list(self.span),
            "text": self.text,
            "score": round(self.score, 6),
            "tokens": self.tokens,
            "flags": list(self.flags),
        }


@dataclass(frozen=True, slots=True)
class Packet:
    """The answer to a recall: a few memories inside a token budget."""

    records: tuple[PacketItem, ...]
    conflicts: tuple[dict[str, Any], ...]
    tokens: int
    budget: int
    notes: tuple[str, ...] = ()
    explain: dict[str, Any] | None = None
    # exact facts asked for by field (`pin`), looked up, never ranked; inside `tokens`
    pinned: tuple[PacketItem, ...] = ()
    # document chunks, when the recall asked for documents (`sources`); None: it did not
    documents: tuple[DocumentItem, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pinned": [r.as_dict() for r in self.pinned],
            "records": [r.as_dict() for r in self.records],
            "conflicts": list(self.conflicts),
            "tokens": self.tokens,
            "budget": self.budget,
            "notes": list(self.notes),
        }
        if self.documents is not None:
            out["documents"] = [d.as_dict() for d in self.documents]
        if self.explain is not None:
            out["explain"] = self.explain
        return out

    def as_prompt(self) -> str:
        """The packet as compact prompt text for a model: one line per memory with its
        kind, date and id, conflicts to ask about, documents, notes; flagged items quoted
        as untrusted data (`remem.prompt`). An empty packet says nothing matched."""
        from remem.prompt import render

        return render(self)


def iso(t: datetime | None) -> str | None:
    """An ISO 8601 string for a time, or None."""
    return None if t is None else t.isoformat()
