"""Erasing a record or an actor, and logging a deletion: flows and rules once, for every backend.

`Erasures` is the erasure role of both stores (`Store.erasure`). It decides what a forgotten record
takes with it and in which order, what is tombstoned, and what status a
deletion is logged with; a backend supplies its transaction, its dialect's
named statements (`ErasureSQL`, named parameters), its list binder, and the
parts that are truly its own: removing the record rows with their index
entries (SQLite's FTS5 rows and in-memory vectors, PostgreSQL's term rows),
emptying event texts with theirs, and reading every surface back to verify.

The rules are pure functions, tested through both backends by the
conformance suite: `erased_event_texts` (a summary's source events stay) and
`deletion_status` (done only when reading every surface confirmed it). What a
tombstone covers (`covered`) is read once too, in the caller's transaction: by
`is_tombstoned` and by a batch write (`remem.store.flows.writes`), which drops
work an erasure overtook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from remem.model import Kind
from remem.store.flows.backend import Backend, ListBinder, Tx
from remem.store.flows.jobs import ALL_TENANTS
from remem.store.roles import ForgetReport
from remem.store.values import Asked, Tombstone


def erased_event_texts(kind: str, source_event_ids: Sequence[str]) -> list[str]:
    """The events whose text goes with a forgotten record of `kind`: those it came from, or
    recall would hand the fact back raw. None for a summary: its sources are the range
    it covers, not its origin, and they stay."""
    return [] if kind == Kind.SUMMARY.value else list(dict.fromkeys(source_event_ids))


# a deletion job logged before it erases anything, until it is finished (`start_deletion`)
RUNNING = "running"


def deletion_status(report: ForgetReport | None) -> str:
    """The status a deletion job is logged with: 'done' only when reading every surface
    verified it, else 'failed' (an error, or something left to erase)."""
    return "done" if report is not None and report.verified else "failed"


@dataclass(frozen=True, slots=True)
class Found:
    """A record about to be erased: its backend key (SQLite's rowid, PostgreSQL's id)."""

    key: Any  # None: the record is no longer stored (`Erasures._erase_known`)
    id: str
    actor: str
    kind: str


class TombstoneSQL(Protocol):
    """The named statements that read what a tombstone covers."""

    EVENT_TOMBSTONED: str  # tenant, {keys}: event ids -> a row when one is tombstoned
    ACTOR_ERASED_AT: str  # tenant, actor -> created_at of the actor's tombstone
    COUNT_STORED_EVENTS: str  # tenant, actor, {keys}: event ids -> n of them stored


def covered(
    db: Tx, q: TombstoneSQL, lists: ListBinder, tenant: str, actor: str, event_ids: Sequence[str]
) -> bool:
    """Whether a tombstone covers any of these events: it was a forgotten record's source,
    or the actor was erased and the event is gone, so it arrived before the erasure
    (an actor's erasure deletes every event it had; later ones are a fresh start)."""
    ids = sorted(set(event_ids))
    key = {"tenant": tenant, "actor": actor}
    for sql, params in lists(q.EVENT_TOMBSTONED, key, ids):
        if db.execute(sql, params).fetchall():
            return True
    if not ids or not db.execute(q.ACTOR_ERASED_AT, key).fetchall():
        return False
    stored = sum(
        int(db.execute(sql, params).fetchall()[0]["n"])
        for sql, params in lists(q.COUNT_STORED_EVENTS, key, ids)
    )
    return stored < len(ids)


class ErasureSQL(Protocol):
    """The named statements of the erasure flows; named parameters as listed."""

    RECORD_FOR_ERASURE: str  # tenant, record_id -> key, id, actor, kind (locked where it can)
    RECORDS_OF_ACTOR: str  # tenant, actor -> key, id, actor, kind
    FORGET_ACTOR_JOBS: str  # tenant, actor: the jobs of the actor's events
    FORGET_ACTOR_EVENT_VECTORS: str  # tenant, actor
    LIFT_EVENT_TOMBSTONES: str  # tenant, actor: record-level tombstones of its events
    FORGET_ACTOR_REQUESTS: str  # tenant, actor
    FORGET_CHECKPOINTS: str  # tenant, actor: thread state's own statement
    FORGET_TOOL_CALLS: str  # tenant, actor
    ACTOR_TOMBSTONE_AT: str  # tenant, actor, at (an existing one moves to `at`)
    TOMBSTONE_KEY: str  # tenant, kind, key, at
    SOURCE_EVENT_IDS: str  # tenant, record_id -> event_id
    FORGET_RECORD_LINKS: str  # tenant, {keys}: record ids
    FORGET_HISTORY_TEXT: str  # tenant, {keys}: record ids
    HISTORY_DELETED: str  # tenant, record_id, at
    LOG_DELETION: str  # tenant, target, key, status, attempts, result, error, at, actor,
    #   requested_by, requester, reason -> id
    ALL_TOMBSTONES: str  # -> tenant, kind, key, created_at, of every tenant


class DeletionSQL(Protocol):
    """The statements that finish a deletion job logged as running, and find those left so."""

    FINISH_DELETION: str  # tenant, id, status, attempts, result, error, at
    INTERRUPTED_DELETIONS: str  # before -> tenant: of every tenant, running since `before`


class ScopeNote(Protocol):
    """Where an erasure notes that a scope's records changed (`RecordUpkeep.scope_changed`)."""

    def scope_changed(self, db: Tx, tenant: str, actor: str) -> None: ...


class ErasureParts(Protocol):
    """What is a backend's own in an erasure (`remem.store.sqlite.erasure`,
    `remem.store.postgres.erasure`): removing rows with their index entries, reading
    every surface back, and the deletion log's reads."""

    # When `mark_actor` runs in the erasure's transaction: after its deletes on SQLite
    # (nothing else commits while it writes, and a new row's rowid is max(rowid) + 1,
    # which can be an erased row's), before them on PostgreSQL (a row committed while
    # the erasure runs is seen by its later statements; an identity never repeats).
    @property
    def mark_after_erasing(self) -> bool: ...

    @property
    def deletion_sql(self) -> DeletionSQL: ...

    def erasing_actor(self) -> AbstractContextManager[object]:
        """Held around an actor's erasure (PostgreSQL: the lock on scope indexes)."""
        ...

    def erase_records(self, db: Tx, tenant: str, found: Sequence[Found]) -> dict[str, int]:
        """Delete record rows with their vectors and full-text entries; counts of each."""
        ...

    def erase_event_texts(self, db: Tx, tenant: str, event_ids: Sequence[str]) -> None:
        """Empty these events' texts and drop their full-text entries and vectors."""
        ...

    def erase_actor_indexes(self, db: Tx, tenant: str, actor: str) -> None:
        """Drop the actor's full-text entries that deleting its rows would not take at once."""
        ...

    def erase_actor_events(self, db: Tx, tenant: str, actor: str) -> tuple[int, int]:
        """Delete the actor's events; how many, and how many full-text entries went with them."""
        ...

    def mark_actor(self, db: Tx, tenant: str, actor: str) -> dict[str, int]:
        """Inside the erasure's transaction: the largest key of each kind of the actor's
        rows (0 when none), for `verify_actor`."""
        ...

    def verify_actor(self, tenant: str, actor: str, mark: Mapping[str, int]) -> dict[str, int]:
        """After the commit: what of the actor every surface still holds, counting only the
        rows at or below `mark` (those the erasure left); a row a writer stored after the
        commit, a fresh start, has a larger key."""
        ...

    def verify_record(
        self, tenant: str, record_id: str, found: Found, sources: Sequence[str]
    ) -> dict[str, int]:
        """After the commit: what of the record and its event texts every surface still holds."""
        ...

    def settle_scope(self, tenant: str, actor: str) -> None:
        """After an erasure committed by a process that died before reading it back: drop
        what the backend derives from the scope's rows outside them (SQLite's vector files,
        written again from the rows). Nothing on a backend that keeps no such copies."""
        ...

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """Make finished erasures reach the storage files (`Erasure.scrub_files`)."""
        ...

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first (numbered below `before`, when given)."""
        ...

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None:
        """One deletion job of the tenant, or None."""
        ...


class ErasureAllSQL(ErasureSQL, TombstoneSQL, Protocol):
    """Every named statement of `Erasures` but the backend's own (`ErasureParts`)."""


class Erasures:
    """Deletion in a store (`remem.store.roles.Erasure`, `Store.erasure`), written once over
    its `backend`, its dialect's statements (`sql`), its own parts (`parts`) and the note
    that a scope's records changed (`upkeep`)."""

    def __init__(
        self, backend: Backend, sql: ErasureAllSQL, parts: ErasureParts, upkeep: ScopeNote
    ) -> None:
        self.backend, self.sql, self.parts, self.upkeep = backend, sql, parts, upkeep

    def settle_scope(self, tenant: str, actor: str) -> None:
        """See `ErasureParts.settle_scope`."""
        self.parts.settle_scope(tenant, actor)

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """See `ErasureParts.scrub_files`."""
        return self.parts.scrub_files(vacuum)

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first (numbered below `before`, when given)."""
        return self.parts.deletions(tenant, limit, before)

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None:
        """One deletion job of the tenant, or None."""
        return self.parts.deletion(tenant, job_id)

    # -- the flows -----------------------------------------------------------------------

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether work from these events would recreate what was erased (`covered`)."""
        with self.backend.reading(tenant) as db:
            return covered(db, self.sql, self.backend.lists, tenant, actor, event_ids)

    def erased_at(self, tenant: str, actor: str) -> datetime | None:
        """When the actor was last erased, or None."""
        params = {"tenant": tenant, "actor": actor}
        rows = self.backend.read(tenant, self.sql.ACTOR_ERASED_AT, params)
        return self.backend.time(rows[0]["created_at"]) if rows else None

    def forget_record(
        self,
        tenant: str,
        record_id: str,
        now: datetime,
        actor: str | None = None,
        events: Sequence[str] = (),
    ) -> ForgetReport:
        """Erase one record from every surface, leave tombstones, verify by reading.

        A record no longer stored (an earlier attempt, or another forget, erased it) is
        verified by what the caller knows of it: its `actor` and `events` (those whose
        text went with it, as its deletion job noted them), after what is keyed by them
        is erased again (`_erase_known`). Unverified when the caller knows no actor."""
        q, at = self.sql, self.backend.at(now)
        key = {"tenant": tenant, "record_id": record_id}
        with self.backend.transaction(tenant) as db:
            row = db.execute(q.RECORD_FOR_ERASURE, key).fetchone()
            if row is not None:
                found, counts, sources = self._erase_stored(db, tenant, row, at)
            elif actor is not None:
                found, counts, sources = self._erase_known(db, tenant, record_id, actor, events)
            else:
                return ForgetReport(deleted={}, verified=False)
        remaining = self.parts.verify_record(tenant, record_id, found, sources)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def _erase_stored(
        self, db: Tx, tenant: str, row: Any, at: Any
    ) -> tuple[Found, dict[str, int], list[str]]:
        """`forget_record` of a stored record, in its transaction: what was found, the
        counts of what went, and the events whose text went with it."""
        q, found = self.sql, _found(row)
        record_id = found.id
        key = {"tenant": tenant, "record_id": record_id}
        counts = self.parts.erase_records(db, tenant, [found])
        db.execute(
            q.TOMBSTONE_KEY, {"tenant": tenant, "kind": "record", "key": record_id, "at": at}
        )
        stored = [r["event_id"] for r in db.execute(q.SOURCE_EVENT_IDS, key).fetchall()]
        sources = erased_event_texts(found.kind, stored)
        for event_id in sources:
            db.execute(
                q.TOMBSTONE_KEY, {"tenant": tenant, "kind": "event", "key": event_id, "at": at}
            )
        self.parts.erase_event_texts(db, tenant, sources)
        counts["event_texts"] = len(sources)
        for sql in (q.FORGET_RECORD_LINKS, q.FORGET_HISTORY_TEXT):
            for statement, params in self.backend.lists(sql, {"tenant": tenant}, [record_id]):
                db.execute(statement, params)
        db.execute(q.HISTORY_DELETED, {**key, "at": at})
        self.upkeep.scope_changed(db, tenant, found.actor)
        return found, counts, sources

    def _erase_known(
        self, db: Tx, tenant: str, record_id: str, actor: str, events: Sequence[str]
    ) -> tuple[Found, dict[str, int], list[str]]:
        """`forget_record` of a record no longer stored, in its transaction: erase again
        what is keyed by what the caller knows (the texts of those of `events` still
        tombstoned, the record's links and history text), for the read-back to count.

        An event whose tombstone an erasure of the actor lifted is left as it is: the
        actor's erasure deleted it, and an event stored since under its id is a fresh
        start. No tombstone is written: the erasure that removed the row wrote them."""
        q, tenant_key = self.sql, {"tenant": tenant}
        sources = []
        for event_id in dict.fromkeys(events):
            ((sql, params),) = self.backend.lists(q.EVENT_TOMBSTONED, tenant_key, [event_id])
            if db.execute(sql, params).fetchall():
                sources.append(event_id)
        self.parts.erase_event_texts(db, tenant, sources)
        for sql in (q.FORGET_RECORD_LINKS, q.FORGET_HISTORY_TEXT):
            for statement, params in self.backend.lists(sql, {"tenant": tenant}, [record_id]):
                db.execute(statement, params)
        self.upkeep.scope_changed(db, tenant, actor)
        return Found(None, record_id, actor, ""), {}, sources

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job, index entry, request id and thread state of one
        actor, and leave (or move to `now`) its tombstone; verify by reading (holding
        `ErasureParts.erasing_actor` throughout).

        `deleted` counts the rows the erasure's own statements removed: those that
        existed when it ran. Rows writers store after it commits (a fresh start) are in
        neither `deleted` nor `remaining`; any row it left is in `remaining`."""
        with self.parts.erasing_actor():
            return self._forget_actor(tenant, actor, now)

    def _forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        q = self.sql
        key = {"tenant": tenant, "actor": actor}
        with self.backend.transaction(tenant) as db:
            # jobs first, as `apply` locks them first: a running job's write either
            # committed before (and its records are read below) or finds its jobs gone
            db.execute(q.FORGET_ACTOR_JOBS, key)
            mark = {} if self.parts.mark_after_erasing else self.parts.mark_actor(db, tenant, actor)
            found = [_found(r) for r in db.execute(q.RECORDS_OF_ACTOR, key).fetchall()]
            self.parts.erase_actor_indexes(db, tenant, actor)
            counts = self.parts.erase_records(db, tenant, found)
            ids = [f.id for f in found]
            for sql in (q.FORGET_HISTORY_TEXT, q.FORGET_RECORD_LINKS):
                for statement, params in self.backend.lists(sql, {"tenant": tenant}, ids):
                    db.execute(statement, params)
            counts["event_vectors"] = db.execute(q.FORGET_ACTOR_EVENT_VECTORS, key).rowcount
            # the actor's tombstone covers every event it had (see `is_tombstoned`), so an
            # id reused after a fresh start is not blocked by a record-level tombstone
            db.execute(q.LIFT_EVENT_TOMBSTONES, key)
            events, fulltext = self.parts.erase_actor_events(db, tenant, actor)
            counts["events"] = events
            counts["fulltext"] += fulltext
            counts["requests"] = db.execute(q.FORGET_ACTOR_REQUESTS, key).rowcount
            counts["checkpoints"] = db.execute(q.FORGET_CHECKPOINTS, key).rowcount
            counts["tool_calls"] = db.execute(q.FORGET_TOOL_CALLS, key).rowcount
            db.execute(q.ACTOR_TOMBSTONE_AT, {**key, "at": self.backend.at(now)})
            self.upkeep.scope_changed(db, tenant, actor)
            # writers of the actor go on: what they store meanwhile is a fresh start
            if self.parts.mark_after_erasing:
                mark = self.parts.mark_actor(db, tenant, actor)
        remaining = self.parts.verify_actor(tenant, actor, mark)
        # the marks are the transaction's own reading: its tombstone shows it committed
        erased = self.erased_at(tenant, actor)
        remaining["tombstone"] = int(erased is None or erased < now)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def tombstones(self) -> list[Tombstone]:
        """Every tenant's tombstones, oldest first (`Store.tombstones`)."""
        rows = self.backend.read(ALL_TENANTS, self.sql.ALL_TOMBSTONES, {})
        return [
            Tombstone(r["tenant"], r["kind"], r["key"], self.backend.time(r["created_at"]))
            for r in rows
        ]

    def interrupted(self, before: datetime) -> list[str]:
        """The tenants, of every tenant, with a deletion job still running that started at
        or before `before` (`Erasure.interrupted`)."""
        rows = self.backend.read(
            ALL_TENANTS,
            self.parts.deletion_sql.INTERRUPTED_DELETIONS,
            {"before": self.backend.at(before)},
        )
        return [str(r["tenant"]) for r in rows]

    def restore_tombstones(self, tenant: str, marks: Sequence[Tombstone]) -> int:
        """Put back `tenant`'s tombstones with their own times and empty the texts of the
        events they name (`Store.restore_tombstones`); how many event marks there were."""
        q = self.sql
        mine = [m for m in marks if m.tenant == tenant]
        events = [m.key for m in mine if m.kind == "event"]
        with self.backend.transaction(tenant) as db:
            for m in mine:
                at = self.backend.at(m.created_at)
                if m.kind == "actor":
                    db.execute(q.ACTOR_TOMBSTONE_AT, {"tenant": tenant, "actor": m.key, "at": at})
                else:
                    params = {"tenant": tenant, "kind": m.kind, "key": m.key, "at": at}
                    db.execute(q.TOMBSTONE_KEY, params)
            if events:
                self.parts.erase_event_texts(db, tenant, events)
        return len(events)

    def start_deletion(
        self,
        tenant: str,
        target: str,
        key: str,
        now: datetime,
        actor: str | None = None,
        asked: Asked | None = None,
        events: Sequence[str] = (),
    ) -> int:
        """Log a deletion job as running before it erases anything; return its id. A process
        that dies midway leaves it listed as running (`finish_deletion` ends it), so no
        erasure is ever left without its job. `actor`: whose record it erases, kept in the
        job's result until then (a resumed job settles that scope) and in the job's own
        `actor` (an actor's erasure: the actor); `asked`: who asked and why; `events`: the
        ids of the events whose text goes with the record, kept in the job's result until
        then too, even when there are none (a resumed job makes again the summaries that
        covered them; a record's job that noted none was started by an older remem)."""
        started: dict[str, Any] = {} if actor is None else {"actor": actor}
        if events or target == "record":  # a record's job without them is an older remem's
            started["events"] = list(events)
        params = {
            **_asked(asked),
            "actor": key if target == "actor" else actor,
            "tenant": tenant,
            "target": target,
            "key": key,
            "status": RUNNING,
            "attempts": 0,
            "result": self.backend.json_param(started),
            "error": None,
            "at": self.backend.at(now),
        }
        with self.backend.transaction(tenant) as db:
            row = db.execute(self.sql.LOG_DELETION, params).fetchone()
        assert row is not None  # INSERT ... RETURNING always returns its row
        return int(row["id"])

    def finish_deletion(
        self,
        tenant: str,
        job_id: int,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int,
    ) -> None:
        """End a deletion job `start_deletion` logged, with its outcome (`deletion_status`)."""
        params = {
            "tenant": tenant,
            "id": job_id,
            "status": deletion_status(report),
            "attempts": attempts,
            "result": self.backend.json_param({} if report is None else report.outcome()),
            "error": error,
            "at": self.backend.at(now),
        }
        with self.backend.transaction(tenant) as db:
            db.execute(self.parts.deletion_sql.FINISH_DELETION, params)

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
        """Log a deletion job with its outcome (`deletion_status`); return its id."""
        result = {} if report is None else report.outcome()
        params = {
            **_asked(None),
            "actor": key if target == "actor" else None,
            "tenant": tenant,
            "target": target,
            "key": key,
            "status": deletion_status(report),
            "attempts": attempts,
            "result": self.backend.json_param(result),
            "error": error,
            "at": self.backend.at(now),
        }
        with self.backend.transaction(tenant) as db:
            row = db.execute(self.sql.LOG_DELETION, params).fetchone()
        assert row is not None  # INSERT ... RETURNING always returns its row
        return int(row["id"])


def _asked(asked: Asked | None) -> dict[str, str | None]:
    if asked is None:
        return {"requested_by": None, "requester": None, "reason": None}
    return {
        "requested_by": asked.requested_by,
        "requester": asked.requester,
        "reason": asked.reason,
    }


def _found(row: Any) -> Found:
    return Found(row["key"], str(row["id"]), str(row["actor"]), str(row["kind"]))
