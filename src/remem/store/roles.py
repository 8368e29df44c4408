"""The store interface: the one narrow door between remem and a database.

Everything above it (extraction, consolidation, recall, deletion) speaks in
the values of `remem.model`; everything below it is SQL. A store is a
composition root of role objects, each a protocol of its own, so a caller can
depend on only what it uses: `store.events` (`EventLog`), `store.jobs`
(`JobQueue`), `store.model_calls` (`ModelCallLog`), `store.ledger`
(`RequestLedger`), `store.records` (`RecordStore`), `store.backfill`
(`VectorCatchUp`), `store.erasure` (`Erasure`), `store.audit` (`AuditLog`),
`store.keys` (`KeyStore`), `store.actors` (`ActorListing`), `store.search`
(`Search`), with `ROLES` naming them; besides, `store.thread`, `store.documents`
and `store.reindexing`. `Store` is those attributes and the operator's `Operations`.
The conformance suite in `tests/conformance` runs on every backend, role by role; a
backend declares a role it lacks (`Store.lacks`).

Scope is an argument of every read, never a filter applied afterwards: each
method takes the tenant, and those that search take the actor (and optionally
a namespace prefix) too, so the database only ever sees one subject's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from remem.model import Event, HistoryEntry, Job, JobInfo, LLMCall, Record, Status
from remem.store.governance import ActorListing, AuditLog, Erasure, KeyStore
from remem.store.operations import Operations, refuse_rls_bypass
from remem.store.values import (
    ActorSummary,
    ApiKey,
    Asked,
    AuditEntry,
    Clock,
    EventKey,
    ForgetReport,
    Hit,
    JobGroup,
    PendingReindex,
    ReindexCount,
    RequestEntry,
    Scope,
    SourceGrowth,
    StatusChange,
    ThreadHost,
    VectorModel,
    Write,
    joined_sources,
    new_sources,
    refuse_foreign_records,
)

Key = tuple[datetime, str]  # a keyset page's position: a time and an id

if TYPE_CHECKING:
    from remem.store.flows.backfill import Unembedded
    from remem.store.flows.documents import DocumentIndex
    from remem.store.flows.reindex import VectorReindex

# the interface's values (`remem.store.values`) are re-exported with its roles
__all__ = [
    "ROLES",
    "ActorListing",
    "ActorSummary",
    "ApiKey",
    "Asked",
    "AuditEntry",
    "AuditLog",
    "Clock",
    "DocumentState",
    "Erasure",
    "EventKey",
    "EventLog",
    "ForgetReport",
    "Hit",
    "JobGroup",
    "JobQueue",
    "KeyStore",
    "ModelCallLog",
    "Near",
    "Operations",
    "PendingReindex",
    "RecordStore",
    "ReindexCount",
    "RequestEntry",
    "RequestLedger",
    "Scope",
    "Search",
    "SourceGrowth",
    "StatusChange",
    "Store",
    "ThreadHost",
    "ThreadState",
    "VectorCatchUp",
    "VectorModel",
    "VectorState",
    "Write",
    "joined_sources",
    "new_sources",
    "refuse_foreign_records",
    "refuse_rls_bypass",
]

Near = dict[str, list[tuple[int, Event]]]  # event id -> (distance, event) around it


class EventLog(Protocol):
    """The thread log of events and, written with them, the outbox of extraction jobs."""

    def add_events(self, events: Sequence[Event], strategies: Sequence[str]) -> list[bool]:
        """Append events and, in the same transaction, one job per strategy each.

        Returns, per event, whether it was new (a repeated client id is not a
        second event and enqueues nothing). A call's events may belong to several
        tenants: they are written in one transaction all the same, so an
        `EventIdTaken` anywhere writes nothing of the call.
        """
        ...

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]: ...

    def events_page(
        self,
        tenant: str,
        actor: str,
        session: str | None,
        after: EventKey | None,
        limit: int,
        max_bytes: int = ...,
    ) -> tuple[list[Event], EventKey | None]:
        """A page of `list_events` read by key: after `after`, and the key for the next;
        at most `limit` events, and no more once they hold `max_bytes` of text and
        metadata (`remem.store.flows.events.PAGE_BYTES` by default)."""
        ...

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]: ...

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of the same session before `event`, oldest first."""
        ...

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """For each of these events (one tenant's), the events of its session at most
        `reach` steps before or after it in time order, each with its distance (1 is
        next to it). One round trip for all of them."""
        ...


class JobQueue(Protocol):
    """Extraction jobs: leased by workers across tenants, listed and retried per tenant."""

    def claim_jobs(
        self,
        now: datetime,
        limit: int,
        lease_seconds: float,
        strategies: Sequence[str] | None = None,
    ) -> list[Job]:
        """Lease up to `limit` jobs, oldest first: pending ones whose `run_after` has
        come, and running ones whose lease ran out (their worker died). Only jobs
        of `strategies` when given. Runs across tenants: workers serve them all."""
        ...

    def actor_backlog(self, tenant: str, actor: str, now: datetime) -> tuple[int, int]:
        """How many jobs of `actor`'s events wait: (ready now, pending or running in all).
        Read by the tenant's waiting jobs (an index), so it costs next to nothing when
        none waits, however many events the actor has."""
        ...

    def claim_actor_jobs(
        self, tenant: str, actor: str, now: datetime, limit: int, lease_seconds: float
    ) -> list[Job]:
        """`claim_jobs` narrowed to the jobs of one actor's events in one tenant."""
        ...

    def heartbeat(self, job_ids: Sequence[int], now: datetime, lease_seconds: float) -> int:
        """Extend the lease of running jobs; return how many were still running."""
        ...

    def fail_job(
        self,
        job_id: int,
        error: str,
        now: datetime,
        retry_at: datetime | None = None,
        max_attempts: int = 3,
    ) -> str:
        """Record a failed attempt: the job waits until `retry_at` (None: at once) and is
        taken again, or is 'failed' once it has had `max_attempts`. Return its status."""
        ...

    def pending_jobs(self, tenant: str | None = None) -> int: ...

    def list_jobs(
        self, tenant: str, status: str | None = None, limit: int = 100,
        actor: str | None = None, before: int | None = None,
    ) -> list[JobInfo]:  # fmt: skip
        """A tenant's extraction jobs, newest first, optionally of one status; with `actor`,
        only the jobs of that actor's events; with `before`, those numbered below it."""
        ...

    def job_counts(self, tenant: str, actor: str | None = None) -> dict[str, int]:
        """A tenant's extraction jobs by status: pending, running, done, failed; with
        `actor`, only the jobs of that actor's events."""
        ...

    def job_groups(self, tenant: str | None) -> list[JobGroup]:
        """Extraction jobs by strategy and status, each group with its oldest job's
        creation, of one tenant or (None) of all."""
        ...

    def retry_jobs(self, tenant: str, statuses: Sequence[str] = ("failed",)) -> int:
        """Put a tenant's jobs of these statuses back to pending with fresh attempts;
        return how many."""
        ...

    def requeue_job(self, tenant: str, event_id: str, strategy: str) -> bool:
        """Put the job of (event, strategy) back to pending with fresh attempts (a summary
        to regenerate); False when there is no such job or it is running."""
        ...


class ModelCallLog(Protocol):
    """The log of language-model calls (never a prompt, an answer or a key)."""

    def record_llm_calls(self, tenant: str, calls: Sequence[LLMCall]) -> None:
        """Log language-model calls: model, prompt version, tokens, time, outcome."""
        ...

    def llm_usage(self, tenant: str) -> dict[str, float]:
        """Totals of a tenant's logged model calls: calls, errors, tokens, seconds, and
        `calls_with_dropped_items` (usable answers with items dropped for naming an event
        they were not shown; the row's `error` says which)."""
        ...


class RequestLedger(Protocol):
    """The request-id ledger of idempotent batch writes, keyed by (tenant, actor, request_id)."""

    def claim_request(
        self,
        tenant: str,
        actor: str,
        request_id: str,
        operation: str,
        target: str | None,
        digest: str | None,
        token: str,
        lease_seconds: float,
    ) -> RequestEntry:
        """Claim a request id (for an `operation` asking what `digest` digests) for `token`
        in one transaction, exclusive across connections: a new one is inserted, or one
        without an outcome past its lease taken over. The entry as it stands: the caller's
        if its token is `token`, else another's, final (`outcome`) or still running."""
        ...

    def finish_request(
        self, tenant: str, actor: str, request_id: str, token: str, outcome: dict[str, Any]
    ) -> bool:
        """Record the outcome (ids, statuses: no content) of `token`'s claim; False if lost."""
        ...

    def release_request(self, tenant: str, actor: str, request_id: str, token: str) -> None:
        """Drop a claim `token` holds without an outcome (the write failed: a retry runs it)."""
        ...

    def request_for_target(self, tenant: str, request_id: str, target: str) -> RequestEntry | None:
        """The final entry of a request id that named record `target` (a delete retried
        once its record is gone), or None."""
        ...


# A read of records by field prefix (`RecordStore.records_by_field_prefix`) returns at most
# this many, newest first: a family of fields ("allergy:*") or a person's standing
# instructions on how to answer (`remem.recall.instructions` pins at most 6) stays far
# below it, so what it leaves out is older than a hundred of the same kind.
FIELD_PREFIX_MOST = 100
# The reads of one field (`RecordStore.records_by_field`, docs/decisions/field-history.md)
# return at most this many, newest first: its current records (active ones and those
# naming a candidate's events) and those held at a time. Consolidation keeps a field's
# active records to one per authority that conflicts, and a time holds as few, so a
# read that reaches the limit is a field no writer of remem made; its oldest are left out.
FIELD_CURRENT_MOST = 100
FIELD_HELD_MOST = 100
FieldRead = Literal["listed", "current", "restating", "held"]  # `records_by_field` reads


class RecordStore(Protocol):
    """Memory records: written one consolidation step at a time, read by id or scope."""

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically (records, indexes, history, job).

        A step that an erasure overtook is dropped whole: one whose jobs the erasure
        deleted, or one adding a record from events a tombstone covers.
        """
        ...

    def get_record(self, tenant: str, record_id: str) -> Record | None: ...

    def list_records(
        self,
        scope: Scope,
        statuses: Iterable[Status] | None = None,
        limit: int = 10_000,
        *,
        fielded: bool = False,
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only, at most
        `limit`; `fielded`: only those about a field."""
        ...

    def records_page(
        self, scope: Scope, statuses: Iterable[Status] | None, after: Key | None, limit: int
    ) -> list[Record]:
        """A keyset page: by (valid_from, id), newest first, after `after`."""
        ...

    def records_by_field(
        self,
        scope: Scope,
        field: str,
        *,
        limit: int = 10_000,
        events: Sequence[str] = (),
        current: bool = False,
        held_at: tuple[datetime, datetime, bool] | None = None,
    ) -> list[Record]:
        """Records of one scope (its namespace prefix and metadata filter too) about
        `field`, newest first (by valid_from), at most `limit`, each read a seek of the
        field's index whatever its history: active and invalid ones; `current`: the active
        ones, and with `events` those whose source names one of them (the same event
        consolidated again); `held_at` (known at, valid at, closings: known at is before
        now): those `remem.policy.validity.held` may hold then."""
        ...

    def records_by_field_prefix(
        self,
        scope: Scope,
        prefix: str,
        *,
        current_at: datetime | None = None,
        held_at: tuple[datetime, datetime] | None = None,
        limit: int = FIELD_PREFIX_MOST,
    ) -> list[Record]:
        """Active and invalid records of one scope (its namespace prefix too; not its
        metadata filter) whose field starts with `prefix`, newest first (by valid_from),
        at most `limit`. `current_at`: only those a recall of that time may return (active,
        valid then); `held_at` (known at, valid at): only those an as-of recall may (written
        by known at, valid from valid at or before; `remem.policy.validity` decides)."""
        ...

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]: ...

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]: ...

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the status of each such record.

        Summaries are left out: a summary is an index over its events, not made
        from one of them, and its older versions must not mark the events old.
        """
        ...

    def records_of_events(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: those records' ids."""
        ...

    def vector_models(self, tenant: str) -> list[VectorModel]:
        """The models whose vectors (records', events', document chunks') this tenant
        holds, noted with every vector write (`remem.memory.embedder` checks them)."""
        ...

    def note_fingerprint(self, tenant: str, model: str, fingerprint: str) -> None:
        """Note the embedder's fingerprint for `model`'s vectors where none is noted yet."""
        ...


class VectorCatchUp(Protocol):
    """Vectors written late (`remem.store.flows.backfill`): the records and events an
    embedder could not embed when they were written (it was down)."""

    def unembedded(self, tenant: str, limit: int, after: tuple[int, int] = (0, 0)) -> Unembedded:
        """Up to `limit` records and events without the vector they should have, oldest
        first, after the cursor `after` (`Unembedded.after` of the last read)."""
        ...

    def count_unembedded(self, tenant: str, actor: str) -> int: ...

    def add_record_vectors(
        self,
        tenant: str,
        vectors: Sequence[tuple[Any, Record, npt.NDArray[np.float32]]],
        model: str,
    ) -> int:
        """Store stored records' late vectors (key, record, vector); how many were stored."""
        ...


class Search(Protocol):
    """Lexical and vector search, always inside one scope, and the event vectors it reads."""

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        ...

    def vector_search_events(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the scope's events (embedded by `model`) nearest to `query`,
        among those that happened by `at`."""
        ...

    def search_records(self, scope: Scope, query: str, limit: int) -> list[Hit]: ...

    def search_events(self, scope: Scope, query: str, limit: int) -> list[Hit]: ...

    def vector_search(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the scope's records (embedded by `model`) nearest to `query`.

        Only records valid at `at`; superseded ones too when `include_invalid`
        (for as-of recall). Never deleted or proposed ones.
        """
        ...

    def vector_search_many(
        self,
        scope: Scope,
        model: str,
        queries: Sequence[npt.NDArray[np.float32]],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[list[tuple[str, float]]]:
        """`vector_search` for each of `queries`, in order: one pass over the scope
        where the backend scans it (several fixed directions of one recall)."""
        ...

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        ...

    def scope_version(self, scope: Scope) -> int | None:
        """A number that changes whenever the scope's records or vectors change (read
        before what it stamps), or None when the backend keeps none: what a cache
        of the scope's searches may be keyed on."""
        ...

    reads_ahead: bool  # whether `ahead` and `last_read` save round trips (PostgreSQL)

    def ahead(
        self, scope: Scope, shared: Sequence[Scope], words: str, events: int, records: int
    ) -> None:
        """Begin a recall's first reads in `reading` (`shared` scopes' versions, word searches
        of `events`, `records`): PostgreSQL's `remem.store.postgres.span`; SQLite: none."""
        ...

    def last_read(self, tenant: str) -> None:
        """In `reading`, the next read is a recall's last (PostgreSQL's COMMIT rides with it)."""
        ...

    def reading(self, tenant: str) -> AbstractContextManager[None]:
        """This thread's reads of `tenant` inside (a recall's): one transaction on PostgreSQL
        (`remem.store.postgres.span`), each still seeing what was committed before it."""


class ThreadState(Protocol):
    """Thread state (checkpoints, tool calls) on this database (`remem.thread`)."""

    @property
    def thread(self) -> ThreadHost | None: ...


class DocumentState(Protocol):
    """Documents and their chunk indexes on this database (`remem.store.flows.documents`)."""

    @property
    def documents(self) -> DocumentIndex: ...


class VectorState(Protocol):
    """Re-embedding the vectors with another embedder (`remem.store.flows.reindex`)."""

    @property
    def reindexing(self) -> VectorReindex: ...


class Store(
    Operations,
    ThreadState,
    DocumentState,
    VectorState,
    Protocol,
):
    """A remem database: a composition root holding each role as an attribute.
    Implementations: `SQLiteStore` and `PostgresStore`. A caller that needs only some
    roles takes those (e.g. a `JobQueue`), so it says what it uses and a fake of it
    stays small."""

    @property
    def lacks(self) -> frozenset[str]:
        """The roles (names of `ROLES`) this backend does not offer: their conformance
        tests skip it (`tests/conformance/conftest.py`). Empty on both today."""
        ...

    @property
    def keys(self) -> KeyStore:
        """API keys (`remem.store.flows.keys.ApiKeys`)."""
        ...

    @property
    def actors(self) -> ActorListing:
        """The tenant's actors with their counts (`remem.store.flows.actors.ActorIndex`)."""
        ...

    @property
    def audit(self) -> AuditLog:
        """The audit log (`remem.store.flows.audit.AuditTrail`)."""
        ...

    @property
    def events(self) -> EventLog:
        """The event log and its outbox of jobs (`remem.store.flows.events.Events`)."""
        ...

    @property
    def records(self) -> RecordStore:
        """Memory records, read and written (`remem.store.flows.records.Records`)."""
        ...

    @property
    def backfill(self) -> VectorCatchUp:
        """Vectors written late (`remem.store.flows.backfill.Backfill`)."""
        ...

    @property
    def erasure(self) -> Erasure:
        """Deletion and its log (`remem.store.flows.erasure.Erasures`)."""
        ...

    @property
    def search(self) -> Search:
        """Lexical and vector search and the event vectors (`remem.store.sqlite.search`,
        `remem.store.postgres.search`)."""
        ...

    @property
    def jobs(self) -> JobQueue:
        """Extraction jobs (`remem.store.flows.jobs.Jobs`)."""
        ...

    @property
    def ledger(self) -> RequestLedger:
        """The request-id ledger of idempotent writes (`remem.store.flows.jobs.Ledger`)."""
        ...

    @property
    def model_calls(self) -> ModelCallLog:
        """The log of language-model calls (`remem.store.flows.jobs.ModelCalls`)."""
        ...


# each role a store offers: its attribute (`store.jobs`) and the protocol its object keeps
ROLES: dict[str, type] = {
    "events": EventLog,
    "jobs": JobQueue,
    "ledger": RequestLedger,
    "model_calls": ModelCallLog,
    "records": RecordStore,
    "backfill": VectorCatchUp,
    "erasure": Erasure,
    "audit": AuditLog,
    "keys": KeyStore,
    "actors": ActorListing,
    "search": Search,
}
