"""Records: read by key or scope, and written one consolidation step at a time (`Write`):
written once, for every backend.

`Records` is the records role of both stores (`Store.records`). Each read is one
named statement (or one per list of keys, through the backend's list binder) in
its own transaction, and its rows become remem's values through `remem.store.rows`
with the backend's decoders (`Backend.time`, `list_value`).

One `Write` is one tenant's and is applied in one transaction: its records are
inserted with their source links, index entries and vectors; the records it changes
are closed; the stored records a restating statement named grow their sources; its
history is appended; the jobs it came from are marked done. A step from work an
erasure overtook (its jobs are gone with their events, or what it adds came from
events a tombstone covers, `remem.store.flows.erasure.covered`) writes nothing.

A backend supplies its named statements (`RecordSQL`), its transaction (SQLite's
write lock; PostgreSQL's bound to the tenant, with the step's jobs and grown
records locked), and what is truly its own (`RecordUpkeep`): full-text upkeep,
vector rows, work before the transaction (PostgreSQL's HNSW index for a new model)
and after it (a scope the write made large gets an index of its own), and the note
that a scope's records changed. Each also keeps decoded records (`Held`): SQLite while
its file is unchanged, PostgreSQL while their scope's version stands (`HeldRecords` in
`remem.store.sqlite.upkeep` and `remem.store.postgres.upkeep`).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from remem.errors import ConflictError, StoreError
from remem.model import HistoryEntry, Record, Status
from remem.store.flows.backend import Backend, Row, Tx
from remem.store.flows.erasure import TombstoneSQL, covered
from remem.store.flows.vector_fit import vectors_fit
from remem.store.forks import ancestors
from remem.store.roles import (
    FIELD_PREFIX_MOST,
    FieldRead,
    Scope,
    SourceGrowth,
    StatusChange,
    VectorModel,
    Write,
    new_sources,
    refuse_foreign_records,
)
from remem.store.rows import history_params, record_from, record_params
from remem.store.text import like_prefix
from remem.store.values import AlreadyStated, ContextRead, ErasedMeanwhile

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
LISTED = (Status.ACTIVE, Status.INVALID, Status.PROPOSED)  # `list_records` by default


class LookupSQL(Protocol):
    """The named statements of the reads of records; parameters as listed."""

    GET_RECORD: str  # tenant, record_id
    GET_RECORDS: str  # tenant, {keys}: record ids
    # tenant, actor, prefix, n (its length in characters), namespace (a LIKE pattern or
    # None), known_at, valid_at (None: any), current (only active records valid at
    # valid_at), limit
    BY_FIELD_PREFIX: str
    HISTORY: str  # tenant, record_id -> the columns of `HistoryEntry`
    RECORD_STATUS_BY_EVENT: str  # tenant, {keys}: event ids -> event_id, status, record_id

    def list_records(
        self, scope: Scope, paged: bool = False, after: bool = False, fielded: bool = False
    ) -> tuple[str, dict[str, Any]]:
        """A scope's records of some statuses ({keys}), newest first, up to `limit`
        (`fielded`: only those about a field)."""
        ...

    def by_field(self, scope: Scope, read: FieldRead) -> tuple[str, dict[str, Any]]:
        """One read of a field's records (`remem.store.sqlite.field_sql.by_field`)."""
        ...


class WriteSQL(TombstoneSQL, Protocol):
    """The named statements of a batch write."""

    INSERT_RECORD: str  # `remem.store.rows.record_params` -> key (the backend's row key)
    INSERT_RECORD_EVENT: str  # tenant, event_id, record_id; ON CONFLICT DO NOTHING
    # status, valid_until, superseded_by, at, tenant, record_id, active_only -> key, actor
    # (with active_only, a record no longer active is left as it is and nothing returned)
    CLOSE_RECORD: str
    RECORD_SOURCES: str  # tenant, record_id -> actor, source_event_ids (locked where it can)
    GROW_SOURCES: str  # sources, at, tenant, record_id
    INSERT_HISTORY: str  # `remem.store.rows.history_params`
    DONE_JOBS: str  # at, tenant, {keys}: job ids
    NOTE_VECTOR_MODEL: str  # tenant, model, dim; ON CONFLICT DO NOTHING
    VECTOR_MODELS: str  # tenant -> model, dim, fingerprint
    NOTE_FINGERPRINT: str  # fingerprint, tenant, model (where none is noted yet)
    LOCK_JOBS: str  # tenant, {keys}: job ids -> id (locked where it can)
    # tenant, {keys}: event ids, shared-locked against an erasure emptying their texts
    # ("" where the database's write lock is one already: SQLite's)
    LOCK_EVENTS: str
    # tenant, actor: one writer of an actor's records at a time until the transaction
    # ends ("" where the database's write lock is one already: SQLite's)
    SCOPE_WRITE_LOCK: str
    # tenant, actor, since, text, kind, field, namespace -> id: an active record saying
    # it, stored since then (`Write.fresh_since`)
    SAME_STATEMENT_SINCE: str


class RecordSQL(LookupSQL, WriteSQL, Protocol):
    """Every named statement of `Records`."""


class RecordUpkeep(Protocol):
    """What a backend keeps beside the record rows a write stores (its own indexes)."""

    def before_write(self, write: Write) -> None:
        """Work outside the transaction before a write of vectors (PostgreSQL: the HNSW
        index of a model's first vectors)."""
        ...

    def after_write(self, write: Write) -> None:
        """Work after a write committed (PostgreSQL: a scope's own HNSW index)."""
        ...

    def index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        """Index just-inserted records (their backend keys) for `search_records`."""
        ...

    def store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        """Store the vectors of just-inserted records (their backend keys) under `model`."""
        ...

    def vector_closed(self, db: Tx, key: Any, change: StatusChange) -> None:
        """A closed record's vector row follows its status, where it holds one."""
        ...

    def scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        """Note, inside the transaction, that a scope's records changed (its version)."""
        ...


Reader = Callable[[str, Sequence[str]], list[Record]]

RECORDS_HELD = 10_000
"""Decoded records a store's `Held` keeps (the oldest dropped first), on either backend."""


class Held(Protocol):
    """Decoded records a backend keeps between reads (`HeldRecords` of
    `remem.store.sqlite.upkeep`, `remem.store.postgres.upkeep`)."""

    def get(self, tenant: str, ids: Sequence[str], read: Reader) -> list[Record]:
        """These records, from the copies where they are current, else through `read`."""
        ...


class Records:
    """The records role of a store (`remem.store.roles.RecordStore`), written once over its
    `backend`, its dialect's statements (`sql`) and its own indexes (`upkeep`)."""

    def __init__(
        self, backend: Backend, sql: RecordSQL, upkeep: RecordUpkeep, held: Held | None = None
    ) -> None:
        self.backend, self.sql, self.upkeep, self.held = backend, sql, upkeep, held

    def _record(self, r: Row) -> Record:
        return record_from(r, self.backend.time, self.backend.list_value)  # type: ignore[arg-type]

    def get_record(self, tenant: str, record_id: str) -> Record | None:
        """One record of this tenant, or None."""
        params = {"tenant": tenant, "record_id": record_id}
        rows = self.backend.read(tenant, self.sql.GET_RECORD, params)
        return self._record(rows[0]) if rows else None

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out), through the
        backend's copies of decoded records where it keeps some (`held`)."""
        if self.held is not None:
            return self.held.get(tenant, ids, self.read_records)
        return self.read_records(tenant, ids)

    def read_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids, read from the database."""
        return [self._record(r) for r in self._keyed(tenant, self.sql.GET_RECORDS, ids)]

    def list_records(
        self,
        scope: Scope,
        statuses: Iterable[Status] | None = None,
        limit: int = 10_000,
        *,
        fielded: bool = False,
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only (and
        `fielded`: about a field)."""
        wanted = [s.value for s in (statuses or LISTED)]
        sql, params = self.sql.list_records(scope, fielded=fielded)
        # one statement: the statuses are a handful, far below SQLite's chunk of keys
        ((bound_sql, bound),) = self.backend.lists(sql, {**params, "limit": limit}, wanted)
        return [self._record(r) for r in self.backend.read(scope.tenant, bound_sql, bound)]

    def records_page(
        self,
        scope: Scope,
        statuses: Iterable[Status] | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Record]:
        """Up to `limit` records of one scope in the order of their unique key (valid_from,
        id), newest first, after `after` (None: from the newest): a page of a keyset."""
        wanted = [s.value for s in (statuses or LISTED)]
        sql, params = self.sql.list_records(scope, paged=True, after=after is not None)
        params = {**params, "limit": limit}
        if after is not None:
            params |= {"after_at": self.backend.at(after[0]), "after_id": after[1]}
        ((bound_sql, bound),) = self.backend.lists(sql, params, wanted)
        return [self._record(r) for r in self.backend.read(scope.tenant, bound_sql, bound)]

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
        """See `RecordStore.records_by_field`: one statement (`by_field`) for each spelling.

        `field` as given (NFC, as fields are stored now) and, where it differs, its
        NFD form: a field stored decomposed before fields were put in NFC ("café"
        typed on a Mac) is still found by it. Both spellings' rows are merged newest
        first and cut to `limit`."""
        read: FieldRead = "listed"
        extra: dict[str, Any] = {"limit": limit}
        if held_at is not None:
            known, valid, closings = held_at
            read = "held"
            extra |= {"known": self.backend.at(known), "valid": self.backend.at(valid),
                      "closings": closings}  # fmt: skip
            extra |= {f"k{i}": node for i, node in enumerate(ancestors(known))}
            extra |= {f"v{i}": node for i, node in enumerate(ancestors(valid))}
        elif current:
            read = "restating" if events else "current"
        sql, params = self.sql.by_field(scope, read)
        forms, found = 0, dict[str, Row]()
        for form in dict.fromkeys((field, unicodedata.normalize("NFD", field))):
            bound = {**params, **extra, "field": form}
            if read == "restating":
                rows = [r for s, p in self.backend.lists(sql, bound, list(events))
                        for r in self.backend.read(scope.tenant, s, p)]  # fmt: skip
            else:
                rows = list(self.backend.read(scope.tenant, sql, bound))
            forms += bool(rows)
            for r in rows:
                found.setdefault(r["id"], r)
        records = [self._record(r) for r in found.values()]
        if forms > 1 or read == "restating":  # several statements: one order, as each's
            records.sort(key=lambda r: r.valid_from, reverse=True)
        return records[:limit]

    def records_by_field_prefix(
        self,
        scope: Scope,
        prefix: str,
        *,
        current_at: datetime | None = None,
        held_at: tuple[datetime, datetime] | None = None,
        limit: int = FIELD_PREFIX_MOST,
    ) -> list[Record]:
        """See `RecordStore.records_by_field_prefix`: one read by the index on the field,
        at most `limit` rows."""
        known, valid = held_at if held_at is not None else (None, current_at)
        namespace = like_prefix(scope.namespace_prefix) if scope.namespace_prefix else None
        params = {
            "tenant": scope.tenant, "actor": scope.actor, "prefix": prefix, "n": len(prefix),
            "namespace": namespace, "known_at": self.backend.at(known),
            "valid_at": self.backend.at(valid), "current": current_at is not None and
            held_at is None, "limit": limit,
        }  # fmt: skip
        rows = self.backend.read(scope.tenant, self.sql.BY_FIELD_PREFIX, params)
        return [self._record(r) for r in rows]

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]:
        """The append-only history of one record, oldest first."""
        params = {"tenant": tenant, "record_id": record_id}
        return [
            HistoryEntry(
                record_id=r["record_id"],
                action=r["action"],
                at=self.backend.time(r["at"]),
                text=r["text"],
                status=Status(r["status"]),
                related_id=r["related_id"],
                reason=r["reason"],
                by=r["by_whom"],
            )
            for r in self.backend.read(tenant, self.sql.HISTORY, params)
        ]

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the status of each such record.

        Summaries are left out: a summary is an index over its events, not made
        from one of them, and its older versions must not mark the events old.
        """
        found: dict[str, list[str]] = {}
        for r in self._keyed(tenant, self.sql.RECORD_STATUS_BY_EVENT, event_ids):
            found.setdefault(r["event_id"], []).append(r["status"])
        return found

    def records_of_events(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the ids of those records
        (summaries left out, as in `events_with_records`), in id order."""
        found: dict[str, list[str]] = {}
        for r in self._keyed(tenant, self.sql.RECORD_STATUS_BY_EVENT, event_ids):
            found.setdefault(r["event_id"], []).append(r["record_id"])
        return {e: sorted(ids) for e, ids in found.items()}

    def _keyed(self, tenant: str, sql: str, keys: Sequence[str]) -> list[Row]:
        """The rows of a statement over a list of keys, each bound part in its own read."""
        rows: list[Row] = []
        for bound_sql, params in self.backend.lists(sql, {"tenant": tenant}, list(keys)):
            rows.extend(self.backend.read(tenant, bound_sql, params))
        return rows

    # -- the models of the vectors (`vector_models`) ----------------------------------------

    def vector_models(self, tenant: str) -> list[VectorModel]:
        """The models whose vectors this tenant holds, with their dimension and the
        fingerprint noted for them (None: none yet), by name."""
        rows = self.backend.read(tenant, self.sql.VECTOR_MODELS, {"tenant": tenant})
        return [VectorModel(r["model"], int(r["dim"]), r["fingerprint"]) for r in rows]

    def note_fingerprint(self, tenant: str, model: str, fingerprint: str) -> None:
        """Note the fingerprint of `model`'s vectors where none is noted yet."""
        params = {"tenant": tenant, "model": model, "fingerprint": fingerprint}
        self.backend.write(tenant, self.sql.NOTE_FINGERPRINT, params)

    # -- the flow ---------------------------------------------------------------------------

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically; see `Write`. Then the backend's work
        after it (`RecordUpkeep.after_write`)."""
        self._apply(write)
        self.upkeep.after_write(write)

    def _refuse_restated(self, db: Tx, write: Write, since: datetime) -> None:
        """`AlreadyStated` when another writer stored one of `write`'s new records since
        `since` (see `Write.fresh_since`), checked one writer of the scope at a time."""
        q, tenant = self.sql, write.tenant
        if q.SCOPE_WRITE_LOCK:
            for actor in sorted({r.actor for r in write.inserts}):  # one order: no deadlock
                db.execute(q.SCOPE_WRITE_LOCK, {"tenant": tenant, "actor": actor})
        closing = {ch.record_id for ch in write.changes}  # replaced by this write: not kept
        for r in write.inserts:
            said = {"tenant": tenant, "actor": r.actor, "since": self.backend.at(since),
                    "text": r.text, "kind": r.kind.value, "field": r.field,
                    "namespace": r.namespace}  # fmt: skip
            found = [str(row["id"]) for row in db.execute(q.SAME_STATEMENT_SINCE, said).fetchall()]
            kept = [i for i in found if i not in closing]
            if kept:
                raise AlreadyStated(kept[0])

    def _apply(self, write: Write) -> None:
        refuse_foreign_records(write)
        self.upkeep.before_write(write)
        q, tenant, now = self.sql, write.tenant, self.backend.at(self.backend.clock())
        touched: set[str] = set()
        with self.backend.transaction(tenant) as db:
            if self._from_erased_work(db, write):
                log.info("a write from work on erased events was dropped")
                return
            if write.fresh_since is not None:
                self._refuse_restated(db, write, write.fresh_since)
            if write.inserts:
                params = [
                    record_params(r, self.backend.at, self.backend.list_param)
                    for r in write.inserts
                ]
                rows = self.backend.each(db, q.INSERT_RECORD, params)
                added = [
                    (row["key"], rec)
                    for row, rec in zip(rows, write.inserts, strict=True)
                    if row is not None
                ]
                self.upkeep.index_records(db, tenant, added)
                links = [
                    {"tenant": tenant, "event_id": e, "record_id": r.id}
                    for r in write.inserts
                    for e in r.source.event_ids
                ]
                if links:
                    db.executemany(q.INSERT_RECORD_EVENT, links)
                vectors = [
                    (key, rec, v)
                    for (key, rec), v in zip(added, write.vectors, strict=False)
                    if v is not None
                ]
                dims = {len(v) for _, _, v in vectors}
                fit = self.backend.vector_fit_sql
                if vectors and vectors_fit(db, fit, tenant, write.vector_model, dims):
                    self.upkeep.store_vectors(db, write.vector_model, vectors)
                    note = {"tenant": tenant, "model": write.vector_model}
                    for dim in sorted(dims):
                        db.execute(q.NOTE_VECTOR_MODEL, {**note, "dim": dim})
                touched.update(r.actor for r in write.inserts)
            for ch in write.changes:
                closing = {
                    "status": ch.status.value,
                    "valid_until": self.backend.at(ch.valid_until),
                    "superseded_by": ch.superseded_by,
                    "at": now,
                    "tenant": tenant,
                    "record_id": ch.record_id,
                    # a record is superseded only while active: two writers that read it
                    # active must not each close it with a successor of their own
                    "active_only": ch.superseded_by is not None,
                }
                closed = db.execute(q.CLOSE_RECORD, closing).fetchall()
                raced = not closed and ch.superseded_by is not None
                if raced and self._held(db, tenant, ch.record_id):
                    raise ConflictError(
                        f"record {ch.record_id} was changed by another writer since it was "
                        "read (it is no longer active); read it again and retry"
                    )
                if not closed:
                    raise StoreError(f"record {ch.record_id} vanished during consolidation")
                self.upkeep.vector_closed(db, closed[0]["key"], ch)
                touched.add(str(closed[0]["actor"]))
            for g in write.sources:
                touched.add(self._grow_sources(db, tenant, g, now))
            if write.history:
                entries = [history_params(tenant, h, self.backend.at) for h in write.history]
                db.executemany(q.INSERT_HISTORY, entries)
            for sql, bound in self.backend.lists(
                q.DONE_JOBS, {"tenant": tenant, "at": now}, list(write.done_jobs)
            ):
                db.execute(sql, bound)
            if write.context is not None:
                self._refuse_erased_reads(db, write, write.context)
            for actor in sorted(touched):
                self.upkeep.scope_changed(db, tenant, actor)

    def _refuse_erased_reads(self, db: Tx, write: Write, context: ContextRead) -> None:
        """`ErasedMeanwhile` when an erasure covered an event an extraction's write came
        from or was shown (`Write.context`) since it read them. Checked once the write's
        record rows are locked and before its scope's version is: the order a record's
        erasure takes them in (the record, its events, the scope), so neither of the two
        waits for the other while holding what the other waits for."""
        q, tenant = self.sql, write.tenant
        read: dict[str, set[str]] = {context.actor: set(context.event_ids)}
        for rec in write.inserts:
            read.setdefault(rec.actor, set()).update(rec.source.event_ids)
        for g in write.sources:
            read.setdefault(g.actor, set()).update(g.event_ids)
        for actor, ids in sorted(read.items()):
            if not ids:
                continue
            if q.LOCK_EVENTS:
                for sql, bound in self.backend.lists(q.LOCK_EVENTS, {"tenant": tenant},
                                                     sorted(ids)):  # fmt: skip
                    db.execute(sql, bound)
            if covered(db, q, self.backend.lists, tenant, actor, sorted(ids)):
                raise ErasedMeanwhile(f"an erasure covered an event this work read ({actor})")

    def _held(self, db: Tx, tenant: str, record_id: str) -> bool:
        """Whether the record a write could not close is the write tenant's (then another
        writer closed it first: a conflict; else it is none of the tenant's to close)."""
        key = {"tenant": tenant, "record_id": record_id}
        return bool(db.execute(self.sql.GET_RECORD, key).fetchall())

    def _grow_sources(self, db: Tx, tenant: str, g: SourceGrowth, now: Any) -> str:
        """Join a restating statement's events to a stored record's source; its actor."""
        q, key = self.sql, {"tenant": tenant, "record_id": g.record_id}
        rows = db.execute(q.RECORD_SOURCES, key).fetchall()
        if not rows:
            raise StoreError(f"record {g.record_id} vanished during consolidation")
        stored = self.backend.list_value(rows[0]["source_event_ids"])
        added = new_sources(stored, g.event_ids)
        if added:
            sources = self.backend.list_param([*stored, *added])
            db.execute(q.GROW_SOURCES, {**key, "sources": sources, "at": now})
            db.executemany(q.INSERT_RECORD_EVENT, [{**key, "event_id": e} for e in added])
        return str(rows[0]["actor"])

    def _from_erased_work(self, db: Tx, write: Write) -> bool:
        """Whether a consolidation step comes from work an erasure overtook: its jobs were
        deleted with their events, or a record it adds came from covered events."""
        q, tenant = self.sql, write.tenant
        jobs = sorted(set(write.done_jobs))
        found = sum(
            len(db.execute(sql, bound).fetchall())
            for sql, bound in self.backend.lists(q.LOCK_JOBS, {"tenant": tenant}, jobs)
        )
        if found < len(jobs):
            return True
        return any(
            covered(db, q, self.backend.lists, rec.tenant, rec.actor, rec.source.event_ids)
            for rec in write.inserts
            if rec.source.event_ids
        ) or any(
            covered(db, q, self.backend.lists, tenant, g.actor, g.event_ids) for g in write.sources
        )
