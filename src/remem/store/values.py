"""The values the store interface passes (`remem.store.roles`): scopes, writes, hits,
reports, ledger entries, key rows and the like. Frozen dataclasses, no I/O;
`remem.store.roles` re-exports each, so callers import them from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.errors import StoreError
from remem.model import HistoryEntry, Record, Status

EventKey = tuple[datetime, int]
"""Where a page of events ends (`EventLog.events_page`): the last one's time and `seq`."""

# the time source a store stamps what it writes with (arrival, updated_at, job completion);
# `Memory` hands the stores its own, so an injected clock reaches the database too
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memories a read may see: always one tenant, one actor; optionally only the
    records under a namespace prefix, and only those whose metadata has each of
    `metadata`'s (key, value) pairs (`remem.policy.metadata.check_filter`)."""

    tenant: str
    actor: str
    namespace_prefix: str | None = None
    metadata: tuple[tuple[str, str | int | float | bool | None], ...] = ()

    @property
    def narrowed(self) -> bool:
        """Whether the scope is narrower than the actor's records (a prefix or a filter)."""
        return bool(self.namespace_prefix or self.metadata)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One row of the audit log (`remem.store.flows.audit`): the key that acted (None: not
    a key), the action, whose memory (None: none), an id, and counts; never content."""

    key_id: str | None
    action: str
    actor: str | None = None
    target: str | None = None
    detail: Mapping[str, str | int | bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Asked:
    """Who asked for an erasure and why: the key's id (None: not a key, e.g. the CLI), a
    name for who asked, and the reason or ticket reference given."""

    requested_by: str | None
    requester: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class StatusChange:
    """Close a record: it becomes `status`, valid until `valid_until`."""

    record_id: str
    status: Status
    valid_until: datetime | None
    superseded_by: str | None
    action: str  # the history action, e.g. "SUPERSEDED", "INVALIDATE"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class SourceGrowth:
    """A stored record said again: these events join its source (`Record.source.event_ids`).

    Nothing else of the record changes but `updated_at`; the record's history
    row saying so comes with the same `Write`.
    """

    record_id: str
    actor: str
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContextRead:
    """The events an extraction read beside the batch it extracted from: the earlier turns
    of the session its model was shown (`Write.context`). What the model answered may
    restate any of them, so an erasure of one since voids the answer (`ErasedMeanwhile`)."""

    actor: str
    event_ids: tuple[str, ...]


def joined_sources(stored: Sequence[str], added: Sequence[str]) -> tuple[str, ...]:
    """A record's source events after `added` joined them: the stored ones first, each
    event once (joining an event already there changes nothing)."""
    return tuple(dict.fromkeys([*stored, *added]))


def new_sources(stored: Sequence[str], added: Sequence[str]) -> tuple[str, ...]:
    """The events of `added` a record's `stored` source does not name yet, each once: what
    a `SourceGrowth` really adds (nothing, when the same restating event comes again)."""
    have = set(stored)
    return tuple(e for e in dict.fromkeys(added) if e not in have)


@dataclass(frozen=True, slots=True)
class VectorModel:
    """A model whose vectors a tenant holds: its name (stored beside each vector), their
    dimension, and the embedder's fingerprint where one was noted (None: none)."""

    model: str
    dim: int
    fingerprint: str | None


@dataclass(frozen=True, slots=True)
class PendingReindex:
    """A tenant's reindex begun and not yet switched (`remem.store.flows.reindex`): the
    embedder its new index is made by, and when it began and last stored a batch."""

    model: str
    dim: int
    fingerprint: str | None
    started_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ReindexCount:
    """One kind of vector of a tenant ("records", "events", "chunks") against a model:
    `todo` held by another model with no new vector yet, `done` new vectors stored and
    waiting for the switch, `current` already the model's own."""

    kind: str
    todo: int
    done: int
    current: int


@dataclass(frozen=True, slots=True)
class Write:
    """What one consolidation step writes, applied in one transaction.

    `done_jobs` marks the jobs that produced it finished in the same
    transaction, which is what makes extraction idempotent per
    (event, strategy): a job is either done with all it wrote, or not done
    and has written nothing. `sources` are the stored records a NO-OP restated:
    their sources grow by the restating events (links included).
    """

    tenant: str
    inserts: tuple[Record, ...] = ()
    vectors: tuple[npt.NDArray[np.float32] | None, ...] = ()
    vector_model: str = ""
    changes: tuple[StatusChange, ...] = ()
    history: tuple[HistoryEntry, ...] = ()
    done_jobs: tuple[int, ...] = ()
    sources: tuple[SourceGrowth, ...] = ()
    # a statement's write (`remem.writes.records.remember`): see `AlreadyStated`
    fresh_since: datetime | None = None
    # an extraction's write: the turns its model was shown; see `ErasedMeanwhile`
    context: ContextRead | None = None


class AlreadyStated(Exception):
    """Raised by a write with `fresh_since` instead of inserting a record that an active
    record of the same actor already says (the same text, kind, field and namespace),
    stored at or after `fresh_since` by another writer whose decision ran beside this
    one's; nothing is written. The check runs in the write's transaction, one writer of
    the actor's records at a time (SQLite's write lock; on PostgreSQL an advisory lock
    of the scope), so of identical statements sent at once one is inserted and the
    others decide again, against it."""

    def __init__(self, record_id: str) -> None:
        super().__init__(record_id)
        self.record_id = record_id


class ErasedMeanwhile(Exception):
    """Raised by an extraction's write (one with `Write.context`) when an erasure covered
    one of the events its work read since it read them: a source of a record it adds or
    restates, or a turn of its context. Nothing is written; the work is done again from
    what remains (`remem.pipeline.step`). The check runs in the write's transaction after
    locking those events (PostgreSQL: FOR SHARE, which an erasure emptying their texts
    waits for, and which waits for it; SQLite: the write lock): an erasure that empties
    them commits either before the check, which sees it, or after the write commits."""


def refuse_foreign_records(write: Write) -> None:
    """Raise `StoreError` when a record of `write` belongs to another tenant than the
    write's: one write is one tenant's, on every backend (its changes and jobs are
    looked up in the write's tenant only, so another tenant's are simply not found)."""
    for rec in write.inserts:
        if rec.tenant != write.tenant:
            raise StoreError(
                f"record {rec.id} belongs to tenant {rec.tenant!r}, not to the write's "
                f"tenant {write.tenant!r}; one write is one tenant's"
            )


@dataclass(frozen=True, slots=True)
class ThreadHost:
    """The role a store offers thread state (checkpoints and tool calls, `remem.thread`).

    Thread state keeps its tables in the store's database and its flows in
    `remem.store.flows.thread`; the store lends it what they run on: which dialect of
    named SQL the database speaks, a write transaction bound to a tenant (None:
    every tenant, for retention), a read in its own transaction, and how the
    driver takes a time. The store itself erases and counts an actor's thread
    state inside `forget_actor`.
    """

    dialect: str  # "sqlite" or "postgres": the named SQL of `remem.thread` to speak
    tx: Callable[[str | None], AbstractContextManager[Any]]
    rows: Callable[[str, str, Mapping[str, Any]], Sequence[Any]]  # tenant, sql, named params
    at: Callable[[datetime | None], object]
    clock: Clock  # the store's time source, for a write that names no time
    path: str | None = None  # the database file, where there is one


@dataclass(frozen=True, slots=True)
class Hit:
    """A lexical search hit: an id and its rank score (higher is better)."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class JobGroup:
    """The extraction jobs of one strategy in one status, and when the oldest was queued."""

    strategy: str
    status: str
    count: int
    oldest: datetime


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A content-free mark an erasure left: of an actor, record, event or document."""

    tenant: str
    kind: str
    key: str
    created_at: datetime

    def as_dict(self) -> dict[str, str]:
        """The mark as JSON-ready data (a line of `remem erasures export`)."""
        return {
            "tenant": self.tenant,
            "kind": self.kind,
            "key": self.key,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What a deletion removed, and whether reading every surface confirmed it."""

    deleted: dict[str, int] = field(default_factory=dict)
    verified: bool = False
    remaining: dict[str, int] = field(default_factory=dict)
    job_id: int | None = None
    attempts: int = 1

    def outcome(self) -> dict[str, Any]:
        """What a deletion log keeps of this report: counts and the verification."""
        return {"deleted": self.deleted, "remaining": self.remaining, "verified": self.verified}


@dataclass(frozen=True, slots=True)
class RequestEntry:
    """One request id of one actor in the ledger of idempotent batch writes.

    `outcome` is None while the request is claimed and running; `token` is the
    claimant's (a caller holds the claim when it is the token it passed).
    """

    actor: str
    request_id: str
    operation: str
    target: str | None  # the record an update or delete named
    outcome: dict[str, Any] | None
    token: str | None
    digest: str | None = None  # what the request asked (`remem.writes.ledger.digest`); None before


@dataclass(frozen=True, slots=True)
class ActorSummary:
    """One actor of a tenant as the console lists it (`Store.actors`)."""

    actor: str
    events: int
    records: int  # active ones
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored API key of the HTTP service and the MCP server, without its secret.

    Times are the fixed ISO form both backends return (`remem.timeutil.to_db`).
    """

    id: str
    tenant: str
    actor: str | None  # None: every actor of the tenant
    role: str
    created_at: str
    revoked_at: str | None
    name: str | None = None  # whose key it is, for people (None: none given)

    def as_dict(self) -> dict[str, Any]:
        """The key as JSON: every field, never a secret (the store has none)."""
        return {
            "id": self.id,
            "name": self.name,
            "tenant": self.tenant,
            "actor": self.actor,
            "role": self.role,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }
