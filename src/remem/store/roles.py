"""The store interface: the one narrow door between remem and a database.

Everything above it (extraction, consolidation, recall, deletion) speaks in
the values of `remem.model`; everything below it is SQL. A backend implements
`Store`; the conformance suite in `tests/conformance` runs on every backend.

`Store` is the union of roles, each a protocol of its own, so a caller can
depend on only what it uses: `EventLog`, `JobQueue`, `ModelCallLog`,
`RequestLedger`, `RecordStore`, `Search`, `Erasure`, `KeyStore`, `Operations`
and `ThreadState` (a backend declares the thread state it offers as
`thread`, a `ThreadHost`, or None).

Scope is an argument of every read, never a filter applied afterwards: each
method takes the tenant, and those that search take the actor (and optionally
a namespace prefix) too, so the database only ever sees one subject's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from remem.model import Event, HistoryEntry, Job, JobInfo, LLMCall, Record, Status
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
    Tombstone,
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
        metadata (`remem.store.flows.lookups.PAGE_BYTES` by default)."""
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
        token: str,
        lease_seconds: float,
    ) -> RequestEntry:
        """Claim a request id for `token` in one transaction, exclusive across connections:
        a new one is inserted; one claimed without an outcome past its lease is taken
        over. Return the entry as it stands: the caller holds it when its token is
        `token`; otherwise it is another's, final (`outcome`) or still running."""
        ...

    def finish_request(
        self, tenant: str, actor: str, request_id: str, token: str, outcome: dict[str, Any]
    ) -> bool:
        """Record the final outcome (ids and statuses, never content) of a claim `token`
        holds; False when it no longer holds it."""
        ...

    def release_request(self, tenant: str, actor: str, request_id: str, token: str) -> None:
        """Drop a claim `token` holds without an outcome (the write failed: a retry runs it)."""
        ...

    def request_for_target(self, tenant: str, request_id: str, target: str) -> RequestEntry | None:
        """The final entry of a request id that named record `target` (a delete retried
        once its record is gone), or None."""
        ...


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
        self, scope: Scope, statuses: Iterable[Status] | None = None, limit: int = 10_000
    ) -> list[Record]: ...

    def records_page(
        self, scope: Scope, statuses: Iterable[Status] | None, after: Key | None, limit: int
    ) -> list[Record]:
        """A keyset page: by (valid_from, id), newest first, after `after`."""
        ...

    def records_by_field(self, scope: Scope, field: str) -> list[Record]:
        """Non-deleted records of one scope about the same field."""
        ...

    def records_by_field_prefix(self, scope: Scope, prefix: str) -> list[Record]:
        """Non-deleted records of one scope whose field starts with `prefix`."""
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

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        ...

    def vector_models(self, tenant: str) -> list[VectorModel]:
        """The models whose vectors (records', events', document chunks') this tenant
        holds, noted with every vector write (`remem.memory.embedder` checks them)."""
        ...

    def note_fingerprint(self, tenant: str, model: str, fingerprint: str) -> None:
        """Note the embedder's fingerprint for `model`'s vectors where none is noted yet."""
        ...

    # vectors written late (`remem.store.flows.backfill`: an embedder was down)
    def unembedded(self, tenant: str, limit: int) -> Unembedded:
        """Up to `limit` records and events without the vector they should have."""
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

    def scope_version(self, scope: Scope) -> int | None:
        """A number that changes whenever the scope's records or vectors change (read
        before what it stamps), or None when the backend keeps none: what a cache
        of the scope's searches may be keyed on."""
        ...

    def reading(self, tenant: str) -> AbstractContextManager[None]:
        """This thread's reads of `tenant` inside (a recall's): one transaction on PostgreSQL
        (`remem.store.postgres.span`), each still seeing what was committed before it."""


class Erasure(Protocol):
    """Deletion: erase, tombstone, verify by reading, and the log of deletion jobs."""

    def forget_record(self, tenant: str, record_id: str, now: datetime) -> ForgetReport:
        """Erase a record, its indexes and history text, and the text of the events it
        came from; a summary's events are the range it covers and stay. Tombstone, verify."""
        ...

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job, index entry and thread state of one actor, and
        leave (or move to `now`) the actor's tombstone; verify by reading."""
        ...

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether work from these events would recreate what was erased: one of them was
        a forgotten record's source, or the actor was erased and one of them is no longer
        stored (it arrived before the erasure, which deleted it). Events stored after an
        actor's erasure are a fresh start and are not covered."""
        ...

    def erased_at(self, tenant: str, actor: str) -> datetime | None:
        """When the actor was last erased (its tombstone's time), or None."""
        ...

    def tombstones(self) -> list[Tombstone]:
        """Every tenant's tombstones, oldest first (`remem.lifecycle.restore`)."""
        ...

    def restore_tombstones(self, tenant: str, marks: Sequence[Tombstone]) -> int:
        """Put back `tenant`'s tombstones and empty the events they name; how many."""
        ...

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """After erasures, make them reach the storage files where the backend can;
        return what is left over (all 0 when done). `vacuum` asks PostgreSQL to VACUUM
        the tables an erasure touches; SQLite always merges and checkpoints."""
        ...

    def record_deletion(
        self,
        tenant: str,
        target: str,
        key: str,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int = 1,
    ) -> int:
        """Log a deletion job (target 'record' or 'actor') with its outcome; return its id."""
        ...

    def start_deletion(
        self, tenant: str, target: str, key: str, now: datetime, actor: str | None = None,
        asked: Asked | None = None,
    ) -> int:  # fmt: skip
        """Log a deletion job as running, before it erases anything (whose data, who asked
        and why); return its id."""
        ...

    def finish_deletion(
        self,
        tenant: str,
        job_id: int,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int,
    ) -> None:
        """End a deletion job `start_deletion` logged, with its outcome."""
        ...

    def settle_scope(self, tenant: str, actor: str) -> None:
        """Drop what the backend derives from a scope's rows outside them (after an erasure
        whose process died before reading it back)."""
        ...

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]: ...

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None: ...


class AuditLog(Protocol):
    """The append-only audit log (`remem.store.flows.audit`): ids and counts, no content."""

    def audit(self, tenant: str, entry: AuditEntry, now: datetime) -> None: ...

    def audit_log(
        self, tenant: str, *, actor: str | None = None, key_id: str | None = None,
        action: str | None = None, before: int | None = None, limit: int = 100,
    ) -> list[dict[str, Any]]: ...  # fmt: skip

    def prune_audit(self, tenant: str, before: datetime) -> int: ...


class KeyStore(Protocol):
    """API keys: the principals of the HTTP service and the MCP server (`remem.service.keys`)."""

    def add_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key under the hash of its secret (the secret itself is never stored)."""
        ...

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The unrevoked key whose secret hashes to `key_hash`, in any tenant.

        This is how a request's tenant is found, so it is the one key read that
        cannot be bound to a tenant beforehand.
        """
        ...

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant), oldest first, revoked ones included."""
        ...

    def keys_page(
        self, tenant: str, actor: str | None, after: Key | None, limit: int
    ) -> list[ApiKey]:
        """A keyset page of keys (one actor's, when given): by (created_at, id), after `after`."""
        ...

    def get_key(self, key_id: str, tenant: str | None = None) -> ApiKey | None:
        """One key by id, or None (also for a key of another tenant than `tenant`)."""
        ...

    def revoke_key(self, key_id: str, now: datetime, tenant: str | None = None) -> ApiKey | None:
        """Mark a key revoked at `now` (a revoked key keeps its first time); return it as
        it now is, or None when there is no such key (in `tenant`, when given)."""
        ...


class ActorListing(Protocol):
    """The tenant's actors with their counts (`remem.store.flows.actors`)."""

    def actors(
        self, tenant: str, *, only: str | None = None, contains: str = "", limit: int = 200
    ) -> list[ActorSummary]:
        """Actors (only `only`) whose name contains `contains`, most recently active first."""
        ...


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
    EventLog,
    JobQueue,
    ModelCallLog,
    RequestLedger,
    RecordStore,
    Search,
    Erasure,
    AuditLog,
    KeyStore,
    Operations,
    ThreadState,
    ActorListing,
    DocumentState,
    VectorState,
    Protocol,
):
    """A remem database: every role at once. Implementations: `SQLiteStore` and
    `PostgresStore`. A caller that needs only some roles takes those (e.g. a
    `JobQueue`), so it says what it uses and a fake of it stays small."""
