"""Vectors written late: the records and events an embedder could not embed when they
were written (an embeddings server down), found and given their vectors afterwards.

`Backfill` is the late-vectors role of both stores (`Store.backfill`). A record or an event
is written without a vector when its embedder fails (`remem.embed.base.embed_or_none`);
`unembedded` finds them (records not deleted, oldest first; events with text whose
extraction jobs are all finished, since a pending job embeds its event itself), after a
cursor (`Unembedded.after`, so that a pass walks past the texts its embedder refused) and
`add_record_vectors` stores a record's vector as a write would have: the record's
status and validity are read again inside the transaction, so a record closed or
erased meanwhile gets a vector that says so, or none. Events take theirs through
`Search.add_event_vectors`, which inserts nothing for an erased event.
`remem.memory.backfill` runs the pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from remem.model import Event, Record, Status
from remem.store.flows.backend import Backend, Tx
from remem.store.flows.records import RecordUpkeep, Vector
from remem.store.flows.vector_fit import vectors_fit
from remem.store.roles import EventLog, RecordStore, Write


class BackfillSQL(Protocol):
    """The named statements of the backfill."""

    # tenant, after_record, limit -> id, key: no vector, not deleted, oldest first
    UNEMBEDDED_RECORDS: str
    # tenant, after_event, limit -> id, seq: text, no vector, no unfinished job, oldest first
    UNEMBEDDED_EVENTS: str
    UNEMBEDDED_COUNT: str  # tenant, actor -> records, events (the same rules, one actor)
    RECORD_STATE: str  # tenant, {keys}: record ids -> id, status, valid_until
    NOTE_VECTOR_MODEL: str  # tenant, model, dim; ON CONFLICT DO NOTHING


Cursor = tuple[int, int]  # the last record key and event seq read: the next read is after
START: Cursor = (0, 0)


@dataclass(frozen=True, slots=True)
class Unembedded:
    """What waits for a vector: records (with their backend keys) and events, and the
    cursor after them (`after`: where the next read starts)."""

    records: tuple[tuple[Any, Record], ...] = ()
    events: tuple[Event, ...] = ()
    after: Cursor = START

    def __len__(self) -> int:
        return len(self.records) + len(self.events)


class Backfill:
    """The late vectors of a store (`remem.store.roles.VectorCatchUp`, `Store.backfill`),
    written once over its `backend`, its dialect's statements (`sql`), its own indexes
    (`upkeep`) and the records and events it reads."""

    def __init__(
        self,
        backend: Backend,
        sql: BackfillSQL,
        upkeep: RecordUpkeep,
        records: RecordStore,
        events: EventLog,
    ) -> None:
        self.backend, self.sql, self.upkeep = backend, sql, upkeep
        self.records, self.events = records, events

    def unembedded(self, tenant: str, limit: int, after: Cursor = START) -> Unembedded:
        """Up to `limit` records and up to `limit` events of the tenant that have no vector
        and should (see the module docstring), oldest first, after the cursor `after`."""
        q = self.sql
        params = {"tenant": tenant, "limit": limit,
                  "after_record": after[0], "after_event": after[1]}  # fmt: skip
        rows = self.backend.read(tenant, q.UNEMBEDDED_RECORDS, params)
        keys = {r["id"]: r["key"] for r in rows}
        records = self.records.get_records(tenant, list(keys)) if keys else []
        seqs = {str(r["id"]): int(r["seq"]) for r in self.backend.read(tenant, q.UNEMBEDDED_EVENTS,
                                                                     params)}  # fmt: skip
        events = self.events.get_events(tenant, list(seqs)) if seqs else []
        last = (max((int(r["key"]) for r in rows), default=after[0]),
                max(seqs.values(), default=after[1]))  # fmt: skip
        return Unembedded(tuple((keys[r.id], r) for r in records), tuple(events), last)

    def count_unembedded(self, tenant: str, actor: str) -> int:
        """How many of the actor's records and events wait for a vector."""
        rows = self.backend.read(
            tenant, self.sql.UNEMBEDDED_COUNT, {"tenant": tenant, "actor": actor}
        )
        return int(rows[0]["records"]) + int(rows[0]["events"]) if rows else 0

    def add_record_vectors(
        self, tenant: str, vectors: Sequence[tuple[Any, Record, Vector]], model: str
    ) -> int:
        """Store the vectors (made by `model`) of stored records, each with the status and
        validity its record has now; a record erased meanwhile gets none. Returns how
        many were stored."""
        if not vectors:
            return 0
        self.upkeep.before_write(Write(tenant, vectors=tuple(v for _, _, v in vectors),
                                 vector_model=model))  # fmt: skip
        with self.backend.transaction(tenant) as db:
            now = self._states(db, tenant, [r for _, r, _ in vectors])
            kept = [(k, now[r.id], v) for k, r, v in vectors if r.id in now]
            dims = {len(v) for _, _, v in kept}
            if kept and not vectors_fit(db, self.backend.vector_fit_sql, tenant, model, dims):
                return 0  # the index is another model's now: left for its catch-up
            if kept:
                self.upkeep.store_vectors(db, model, kept)
                for dim in sorted(dims):
                    params = {"tenant": tenant, "model": model, "dim": dim}
                    db.execute(self.sql.NOTE_VECTOR_MODEL, params)
                for actor in sorted({r.actor for _, r, _ in kept}):
                    self.upkeep.scope_changed(db, tenant, actor)
        return len(kept)

    def _states(self, db: Tx, tenant: str, records: list[Record]) -> dict[str, Record]:
        """`records` with the status and validity they have inside the transaction, by
        id; those deleted or erased meanwhile are left out."""
        by_id = {r.id: r for r in records}
        out: dict[str, Record] = {}
        for sql, bound in self.backend.lists(self.sql.RECORD_STATE, {"tenant": tenant},
                                      list(by_id)):  # fmt: skip
            for row in db.execute(sql, bound).fetchall():
                status = Status(str(row["status"]))
                if status is Status.DELETED:
                    continue
                until = row["valid_until"]
                rec = by_id[str(row["id"])]
                out[rec.id] = replace(
                    rec, status=status, valid_until=self.backend.time(until) if until else None
                )
        return out
