"""What the PostgreSQL store keeps beside its rows as they are written: term rows of events
and records, record vectors and their HNSW indexes, the scope versions a recall's cache
is keyed on, and the events around others (`remem.store.flows.events.EventUpkeep`,
`remem.store.flows.records.RecordUpkeep`).

Row-level security keeps the planner off a GIN index, so words are also kept as
(tenant, actor, term) rows under a btree; the events around others are one lateral join.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from psycopg.rows import DictRow

from remem.errors import StoreError
from remem.model import Event, Record
from remem.store.flows.backend import Tx
from remem.store.flows.records import Vector
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
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
