"""Writing a batch (`Write`, one consolidation step): the flow once, for every backend.

`RecordWrites` is a mixin of both stores. One `Write` is one tenant's and is
applied in one transaction: its records are inserted with their source links,
index entries and vectors; the records it changes are closed; the stored
records a restating statement named grow their sources; its history is
appended; the jobs it came from are marked done. A step from work an erasure
overtook (its jobs are gone with their events, or what it adds came from events
a tombstone covers, `remem.store.flows.erasure.covered`) writes nothing.

A backend supplies its named statements (`WriteSQL`), its transaction (SQLite's
write lock; PostgreSQL's bound to the tenant, with the step's jobs and grown
records locked), and what is truly its own: full-text upkeep (`_index_records`),
vector rows (`_store_vectors`, `_vector_closed`), work before the transaction
(`_before_write`: PostgreSQL's HNSW index for a new model) and the note that a
scope's records changed (`_scope_changed`, SQLite's in-memory vector caches).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from remem.errors import StoreError
from remem.model import Record
from remem.store.flows.backend import SQLFlows, Tx
from remem.store.flows.erasure import TombstoneSQL, covered
from remem.store.flows.vector_fit import vectors_fit
from remem.store.roles import (
    Clock,
    SourceGrowth,
    StatusChange,
    VectorModel,
    Write,
    new_sources,
    refuse_foreign_records,
)
from remem.store.rows import history_params, record_params

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]


class WriteSQL(TombstoneSQL, Protocol):
    """The named statements of a batch write."""

    INSERT_RECORD: str  # `remem.store.rows.record_params` -> key (the backend's row key)
    INSERT_RECORD_EVENT: str  # tenant, event_id, record_id; ON CONFLICT DO NOTHING
    CLOSE_RECORD: str  # status, valid_until, superseded_by, at, tenant, record_id -> key, actor
    RECORD_SOURCES: str  # tenant, record_id -> actor, source_event_ids (locked where it can)
    GROW_SOURCES: str  # sources, at, tenant, record_id
    INSERT_HISTORY: str  # `remem.store.rows.history_params`
    DONE_JOBS: str  # at, tenant, {keys}: job ids
    NOTE_VECTOR_MODEL: str  # tenant, model, dim; ON CONFLICT DO NOTHING
    VECTOR_MODELS: str  # tenant -> model, dim, fingerprint
    NOTE_FINGERPRINT: str  # fingerprint, tenant, model (where none is noted yet)
    LOCK_JOBS: str  # tenant, {keys}: job ids -> id (locked where it can)


class RecordWrites(SQLFlows):
    """`apply` of a store, written once."""

    write_sql: ClassVar[WriteSQL]
    _clock: Clock

    # -- what a backend supplies -----------------------------------------------------------

    def _before_write(self, write: Write) -> None:
        """Work outside the transaction before a write (nothing, unless a backend has some)."""

    def _index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        """Index just-inserted records (their backend keys) for `search`."""
        raise NotImplementedError

    def _store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        """Store the vectors of just-inserted records (their backend keys) under `model`."""
        raise NotImplementedError

    def _vector_closed(self, db: Tx, key: Any, change: StatusChange) -> None:
        """A closed record's vector row follows its status, where it holds one."""

    def _scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        """Note, inside the transaction, that a scope's records changed (caches)."""

    # -- the models of the vectors (`vector_models`) ----------------------------------------

    def vector_models(self, tenant: str) -> list[VectorModel]:
        """The models whose vectors this tenant holds, with their dimension and the
        fingerprint noted for them (None: none yet), by name."""
        rows = self._read(tenant, self.write_sql.VECTOR_MODELS, {"tenant": tenant})
        return [VectorModel(r["model"], int(r["dim"]), r["fingerprint"]) for r in rows]

    def note_fingerprint(self, tenant: str, model: str, fingerprint: str) -> None:
        """Note the fingerprint of `model`'s vectors where none is noted yet."""
        params = {"tenant": tenant, "model": model, "fingerprint": fingerprint}
        self._write(tenant, self.write_sql.NOTE_FINGERPRINT, params)

    # -- the flow ---------------------------------------------------------------------------

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically; see `Write`."""
        refuse_foreign_records(write)
        self._before_write(write)
        q, tenant, now = self.write_sql, write.tenant, self._at(self._clock())
        touched: set[str] = set()
        with self._flow_tx(tenant) as db:
            if self._from_erased_work(db, write):
                log.info("a write from work on erased events was dropped")
                return
            if write.inserts:
                params = [record_params(r, self._at, self._list_param) for r in write.inserts]
                rows = self._each(db, q.INSERT_RECORD, params)
                added = [
                    (row["key"], rec)
                    for row, rec in zip(rows, write.inserts, strict=True)
                    if row is not None
                ]
                self._index_records(db, tenant, added)
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
                if vectors and vectors_fit(db, self.vector_fit_sql, tenant, write.vector_model,
                                           dims):  # fmt: skip
                    self._store_vectors(db, write.vector_model, vectors)
                    note = {"tenant": tenant, "model": write.vector_model}
                    for dim in sorted(dims):
                        db.execute(q.NOTE_VECTOR_MODEL, {**note, "dim": dim})
                touched.update(r.actor for r in write.inserts)
            for ch in write.changes:
                closing = {
                    "status": ch.status.value,
                    "valid_until": self._at(ch.valid_until),
                    "superseded_by": ch.superseded_by,
                    "at": now,
                    "tenant": tenant,
                    "record_id": ch.record_id,
                }
                closed = db.execute(q.CLOSE_RECORD, closing).fetchall()
                if not closed:
                    raise StoreError(f"record {ch.record_id} vanished during consolidation")
                self._vector_closed(db, closed[0]["key"], ch)
                touched.add(str(closed[0]["actor"]))
            for g in write.sources:
                touched.add(self._grow_sources(db, tenant, g, now))
            if write.history:
                entries = [history_params(tenant, h, self._at) for h in write.history]
                db.executemany(q.INSERT_HISTORY, entries)
            for sql, bound in self._lists(
                q.DONE_JOBS, {"tenant": tenant, "at": now}, list(write.done_jobs)
            ):
                db.execute(sql, bound)
            for actor in sorted(touched):
                self._scope_changed(db, tenant, actor)

    def _grow_sources(self, db: Tx, tenant: str, g: SourceGrowth, now: Any) -> str:
        """Join a restating statement's events to a stored record's source; its actor."""
        q, key = self.write_sql, {"tenant": tenant, "record_id": g.record_id}
        rows = db.execute(q.RECORD_SOURCES, key).fetchall()
        if not rows:
            raise StoreError(f"record {g.record_id} vanished during consolidation")
        stored = self._list_value(rows[0]["source_event_ids"])
        added = new_sources(stored, g.event_ids)
        if added:
            sources = self._list_param([*stored, *added])
            db.execute(q.GROW_SOURCES, {**key, "sources": sources, "at": now})
            db.executemany(q.INSERT_RECORD_EVENT, [{**key, "event_id": e} for e in added])
        return str(rows[0]["actor"])

    def _from_erased_work(self, db: Tx, write: Write) -> bool:
        """Whether a consolidation step comes from work an erasure overtook: its jobs were
        deleted with their events, or a record it adds came from covered events."""
        q, tenant = self.write_sql, write.tenant
        jobs = sorted(set(write.done_jobs))
        found = sum(
            len(db.execute(sql, bound).fetchall())
            for sql, bound in self._lists(q.LOCK_JOBS, {"tenant": tenant}, jobs)
        )
        if found < len(jobs):
            return True
        return any(
            covered(db, q, self._lists, rec.tenant, rec.actor, rec.source.event_ids)
            for rec in write.inserts
            if rec.source.event_ids
        ) or any(covered(db, q, self._lists, tenant, g.actor, g.event_ids) for g in write.sources)
