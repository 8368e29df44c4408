"""What the PostgreSQL store keeps beside its rows as they are written: term rows of events
and records, record vectors and their HNSW indexes, the scope versions a recall's cache
is keyed on, the decoded records kept while their scope's version stands (`HeldRecords`),
and the events around others (`remem.store.flows.events.EventUpkeep`,
`remem.store.flows.records.RecordUpkeep`).

Row-level security keeps the planner off a GIN index, so words are also kept as
(tenant, actor, term) rows under a btree; the events around others are one lateral join.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from psycopg.rows import DictRow

from remem.errors import StoreError
from remem.linger import Sweep
from remem.model import Event, Record
from remem.store.flows.backend import Tx
from remem.store.flows.records import RECORDS_HELD, Reader, Vector
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.rows import record_from
from remem.store.values import StatusChange, Write

log = logging.getLogger("remem.store.postgres.store")


class VectorIndexes(Protocol):
    """The HNSW indexes of the vectors (`remem.store.postgres.search`)."""

    def _ensure_index(self, ix: q.VectorIndex) -> None: ...

    def _index_large_scopes(self, ix: q.VectorIndex, tenant: str, actors: set[str]) -> None: ...


class PostgresUpkeep:
    """PostgreSQL's own upkeep of events and records, over its `backend` and the vectors'
    HNSW `indexes`."""

    def __init__(self, backend: PostgresBackend, *, indexes: VectorIndexes) -> None:
        self.backend, self.indexes = backend, indexes

    def before_write(self, write: Write) -> None:
        """Make the model's HNSW index for a write's vectors, if it is missing."""
        for dims in {len(v) for v in write.vectors if v is not None}:
            self.indexes._ensure_index(q.VectorIndex("record_vectors", write.vector_model, dims))

    def after_write(self, write: Write) -> None:
        """Give a scope the write made large an HNSW index of its own
        (`PostgresSearch._index_large_scopes`)."""
        actors = {r.actor for r in write.inserts}
        for dims in {len(v) for v in write.vectors if v is not None}:
            ix = q.VectorIndex("record_vectors", write.vector_model, dims)
            try:
                self.indexes._index_large_scopes(ix, write.tenant, actors)
            except StoreError as exc:  # the write is committed: only speed is at stake
                log.warning("could not size scopes for their own HNSW index: %s", exc)

    def index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        """Term rows of just-inserted records."""
        for sql, params in self.backend.lists(q.INSERT_RECORD_TERMS, {"tenant": tenant},
                                              [r.id for _, r in added]):  # fmt: skip
            db.execute(sql, params)

    def store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        """Vector rows of just-inserted records (their status is read from the record)."""
        db.executemany(q.INSERT_VECTOR, [
            {"tenant": rec.tenant, "id": rec.id, "actor": rec.actor, "model": model,
             "vec": np.asarray(vec)}
            for _, rec, vec in vectors
        ])  # fmt: skip

    def vector_closed(self, db: Tx, key: Any, change: StatusChange) -> None:
        """Nothing: a vector's search joins its record's status."""

    def scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        """Move the scope's version on."""
        db.execute(q.BUMP_SCOPE, {"tenant": tenant, "actor": actor})

    def index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        """Term rows of just-inserted events."""
        for sql, params in self.backend.lists(q.INSERT_EVENT_TERMS, {"tenant": tenant},
                                              [e.id for _, e in added]):  # fmt: skip
            db.execute(sql, params)

    def near_rows(self, tenant: str, event_ids: Sequence[str], reach: int) -> list[DictRow]:
        """The rows around these events, in one statement."""
        params = {"tenant": tenant, "reach": reach, "keys": list(event_ids)}
        return self.backend.rows(tenant, q.EVENTS_NEAR, params)


# A recall fetches the same candidates again and again: at 100,000 records in scope,
# 94% of the 84 records a recall of `remem bench` asks for were asked for before, and
# reading and decoding them took about a fifth of a recall's time on PostgreSQL. As on
# SQLite (`remem.store.sqlite.upkeep.HeldRecords`), decoded records are kept; here,
# beside the version of their scope (`scope_versions`), which the transaction of every
# write to a scope's records moves on, in any process: inserts, status changes, grown
# sources and erasures (`RecordUpkeep.scope_changed`).


class _Held(NamedTuple):
    """A decoded record, its place in the records table, and its scope's version then."""

    seq: int
    version: int
    record: Record


class HeldRecords:
    """Decoded records while their scope's version is unchanged
    (`remem.store.flows.records.Held`).

    A read sends, in one round trip, a short statement for the versions of the scopes
    of the records it holds among those asked for, and one for the records it does not
    hold, each with its scope's version (one statement, so one snapshot: a record is
    never kept beside a version newer than itself, whatever commits meanwhile). It hands
    back the held records whose scope has not moved on, and reads the others again. At
    most `RECORDS_HELD` are kept, the oldest dropped first.

    Erased records are not kept: the erasing process drops the scope's records
    (`drop_scope`, from `remem.store.postgres.erasure`); in another process, a read that
    finds a scope's version moved on drops every record held of that scope, asked for or
    not, and every `LINGER_SECONDS` all are dropped (an erased scope no read reaches
    again: `remem.linger`).
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.records: dict[tuple[str, str], _Held] = {}
        self.scopes: dict[tuple[str, str], set[str]] = {}  # (tenant, actor) -> ids held
        self.lock = threading.Lock()
        self.sweep = Sweep()

    def get(self, tenant: str, ids: Sequence[str], read: Reader) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out), in the order
        of the records table (`seq`), as `GET_RECORDS` gives them. `read` is not used:
        the records are read with their scope's version (`GET_RECORDS_HELD`)."""
        wanted = list(dict.fromkeys(ids))
        with self.lock:
            if self.sweep.due():
                self.records.clear()
                self.scopes.clear()
            held = {i: h for i in wanted if (h := self.records.get((tenant, i))) is not None}
        unheld = [i for i in wanted if i not in held]
        actors = sorted({h.record.actor for h in held.values()})
        statements: list[tuple[str, dict[str, Any]]] = []
        if held:
            statements.append((q.SCOPE_VERSIONS, {"tenant": tenant, "actors": actors}))
        if unheld:
            statements.append((q.GET_RECORDS_HELD, {"tenant": tenant, "keys": unheld}))
        got = self.backend.rows_many(tenant, statements) if statements else []
        now = {r["actor"]: int(r["version"]) for r in got[0]} if held else {}
        fresh = {i: h for i, h in held.items() if now.get(h.record.actor, 0) == h.version}
        rows = got[-1] if unheld else []
        stale = [i for i in held if i not in fresh]
        if stale:  # their scope moved on since: read again
            rows = [*rows, *self.backend.rows(tenant, q.GET_RECORDS_HELD,
                                              {"tenant": tenant, "keys": stale})]  # fmt: skip
        read_now = {
            r["id"]: _Held(
                int(r["seq"]),
                int(r["scope_version"]),
                record_from(r, self.backend.time, self.backend.list_value),
            )
            for r in rows
        }
        if read_now or stale:
            with self.lock:
                for actor in {held[i].record.actor for i in stale}:
                    self._drop(tenant, actor, now.get(actor, 0))  # an erasure's go too
                for i, h in read_now.items():
                    self._forget((tenant, i))  # newest last: dropped last
                    self.records[(tenant, i)] = h
                    self.scopes.setdefault((tenant, h.record.actor), set()).add(i)
                while len(self.records) > RECORDS_HELD:
                    self._forget(next(iter(self.records)))
        found = sorted([*fresh.values(), *read_now.values()], key=lambda h: h.seq)
        return [h.record for h in found]

    def drop_scope(self, tenant: str, actor: str) -> None:
        """Forget every record held of one scope (after an erasure)."""
        with self.lock:
            self._drop(tenant, actor)

    def holds(self, tenant: str, record_id: str) -> bool:
        """Whether a decoded copy of this record is held."""
        with self.lock:
            return (tenant, record_id) in self.records

    def _drop(self, tenant: str, actor: str, version: int | None = None) -> None:
        """Drop the scope's records held (those held at another version than `version`)."""
        ids = self.scopes.get((tenant, actor), set())
        for i in list(ids):
            h = self.records.get((tenant, i))
            if h is None:
                ids.discard(i)
            elif version is None or h.version != version:
                self._forget((tenant, i))
        if not ids:
            self.scopes.pop((tenant, actor), None)

    def _forget(self, key: tuple[str, str]) -> None:
        """Drop one held record, (tenant, id), from both maps."""
        h = self.records.pop(key, None)
        if h is not None:
            ids = self.scopes.get((key[0], h.record.actor))
            if ids is not None:
                ids.discard(key[1])
                if not ids:
                    del self.scopes[(key[0], h.record.actor)]
