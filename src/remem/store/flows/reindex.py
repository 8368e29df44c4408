"""Re-embedding a tenant's vectors with another embedder: the store's part, once for both
backends (issue 36; the step is `remem.lifecycle.reindex`).

Three kinds of vector are re-embedded: records' (`record_vectors`), events'
(`event_vectors`) and document chunks' (`document_chunks.vec`). A reindex to a model
is noted once per tenant (`reindexes`: the model, its dimension and fingerprint);
its new vectors are stored beside the old ones, one table per kind
(`reindex_record_vectors`, ...), batch by batch, each batch in its own transaction.
Those tables are the progress: a process killed mid-way loses at most the batch it was
embedding, and the next run asks only for the vectors that have no new one yet
(`todo`), so nothing is embedded twice once stored.

- **Never mixed.** Old and new vectors are in different tables until the switch; every
  search names its model, so a query vector is compared with vectors of its model only.
- **Atomic switch.** `switch` runs in one write transaction: when no vector of
  another model is left without a new one, the new vectors are copied over the old
  (model and vector, row by row), the new tables emptied, the scopes' versions moved
  on (caches reload), `vector_models` left holding the new model alone, and the reindex
  row deleted. When some are left (a process still writing with the old embedder), it
  changes nothing and says so; the step embeds those and tries again.
- **Erasure.** A new vector references the old vector it replaces, ON DELETE CASCADE:
  the statement that erases an old vector (a forgotten record, event or document, an
  erased actor) erases the new one with it, on both backends; `left_of_actor` reads
  what of an actor the new tables hold, for erasure's read-back.

The role object (`Store.reindexing`) takes its backend and its store; a backend subclass names its
tables' keys (`SPECS`), binds vectors (`_vec_param`) and does what the switch asks
of its caches and indexes (`_switched`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from remem.store.flows.backend import Backend, Row, Tx
from remem.store.values import PendingReindex, ReindexCount, VectorModel

Vector = npt.NDArray[np.float32]
KINDS = ("records", "events", "chunks")


@dataclass(frozen=True, slots=True)
class KindSpec:
    """Where one kind of vector lives on one backend: the table holding the old vectors
    (`table`, its key column `key`; `source` joins the text that was embedded), and the
    table of new ones (`new`, keyed by `new_key`)."""

    table: str
    key: str
    source: str  # FROM ... (aliased v), joining the embedded text as `text`
    new: str
    new_key: str
    where: str = ""  # a further condition on v


@cache
def _statements(s: KindSpec) -> dict[str, str]:
    """The named statements of one kind (SQLite's `:name` marks; PostgreSQL converts)."""
    other = f"v.tenant = :tenant AND v.model <> :model{s.where}"
    missing = (
        f"NOT EXISTS (SELECT 1 FROM {s.new} n "
        f"WHERE n.tenant = v.tenant AND n.{s.new_key} = v.{s.key})"
    )
    return {
        "todo": f"SELECT v.{s.key} AS key, text FROM {s.source} WHERE {other} "
        f"AND v.{s.key} > :after AND {missing} ORDER BY v.{s.key} LIMIT :limit",
        "count_todo": f"SELECT count(*) AS n FROM {s.table} v WHERE {other} AND {missing}",
        "count_done": f"SELECT count(*) AS n FROM {s.new} WHERE tenant = :tenant",
        "count_current": f"SELECT count(*) AS n FROM {s.table} v "
        f"WHERE v.tenant = :tenant AND v.model = :model{s.where}",
        # only over an old vector still there and still another model's (an erasure or
        # a writer may have got there first)
        "add": f"INSERT INTO {s.new} ({s.new_key}, tenant, vec) SELECT v.{s.key}, v.tenant, "
        f":vec FROM {s.table} v WHERE {other} AND v.{s.key} = :key ON CONFLICT DO NOTHING",
        "switch": f"UPDATE {s.table} SET model = :model, vec = n.vec FROM {s.new} n "
        f"WHERE n.tenant = :tenant AND {s.table}.tenant = n.tenant "
        f"AND {s.table}.{s.key} = n.{s.new_key}",
        "clear": f"DELETE FROM {s.new} WHERE tenant = :tenant",
    }


SQL = {
    "pending": "SELECT model, dim, fingerprint, started_at, updated_at FROM reindexes "
    "WHERE tenant = :tenant",
    "begin": "INSERT INTO reindexes (tenant, model, dim, fingerprint, started_at, updated_at) "
    "VALUES (:tenant, :model, :dim, :fingerprint, :at, :at) ON CONFLICT (tenant) DO NOTHING",
    "models": "SELECT model, dim, fingerprint FROM vector_models WHERE tenant = :tenant "
    "ORDER BY model",
    "touch": "UPDATE reindexes SET updated_at = :at WHERE tenant = :tenant",
    "end": "DELETE FROM reindexes WHERE tenant = :tenant",
    # the scopes whose vectors the switch changes (their versions move on)
    "actors": "SELECT actor FROM record_vectors WHERE tenant = :tenant "
    "UNION SELECT actor FROM event_vectors WHERE tenant = :tenant",
    "bump": "INSERT INTO scope_versions (tenant, actor, version) VALUES (:tenant, :actor, 1) "
    "ON CONFLICT (tenant, actor) DO UPDATE SET version = scope_versions.version + 1",
    "keep_model": "DELETE FROM vector_models WHERE tenant = :tenant AND model <> :model",
    "note_model": "INSERT INTO vector_models (tenant, model, dim, fingerprint) "
    "VALUES (:tenant, :model, :dim, :fingerprint) ON CONFLICT (tenant, model) DO UPDATE "
    "SET dim = excluded.dim, fingerprint = coalesce(excluded.fingerprint, "
    "vector_models.fingerprint)",
}


class VectorReindex(ABC):
    """The reindex role of one store (`Store.reindexing`); see the module docstring."""

    SPECS: ClassVar[dict[str, KindSpec]]
    FIRST_KEY: ClassVar[Any]  # below every key of the old tables (keyset paging)
    # an actor's new vectors, for erasure's read-back: tenant, actor
    ACTOR_LEFT: ClassVar[str]
    # taken first by the switch and the cancel: writers of vectors wait, and their check
    # then sees the index changed (`remem.store.flows.vector_fit`; PostgreSQL's)
    CHANGE_LOCK: ClassVar[str | None] = None

    def __init__(self, backend: Backend, store: Any) -> None:
        self.backend, self.s = backend, store

    # -- the backend's part ----------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql

    @abstractmethod
    def _vec_param(self, vec: Vector) -> object: ...

    @abstractmethod
    def _switched(self, tenant: str, actors: Sequence[str], model: str, dim: int) -> None:
        """After the switch committed: SQLite drops the scopes' vector files and caches,
        PostgreSQL builds the model's indexes."""
        ...

    def _kind(self, kind: str, name: str) -> str:
        return self._sql(_statements(self.SPECS[kind])[name])

    # -- reads -----------------------------------------------------------------------

    def pending(self, tenant: str) -> PendingReindex | None:
        """The tenant's reindex begun and not switched, or None."""
        rows = self.backend.read(tenant, self._sql(SQL["pending"]), {"tenant": tenant})
        return self._pending(rows)

    def index_state(self, tenant: str) -> tuple[PendingReindex | None, list[VectorModel]]:
        """The tenant's pending reindex and the models whose vectors it holds, read in one
        transaction (what a memory looks at before each search, `remem.memory.embedder`)."""
        pending, held = self.backend.read_many(tenant, self._state_reads(tenant))
        models = [VectorModel(r["model"], int(r["dim"]), r["fingerprint"]) for r in held]
        return self._pending(pending), models

    def index_state_ahead(self, tenant: str) -> None:
        """Begin `index_state`'s reads where that saves a round trip (`Backend.ahead`)."""
        self.backend.ahead(tenant, self._state_reads(tenant))

    def _state_reads(self, tenant: str) -> list[tuple[str, Mapping[str, Any]]]:
        params = {"tenant": tenant}
        return [(self._sql(SQL["pending"]), params), (self._sql(SQL["models"]), params)]

    def _pending(self, rows: Sequence[Row]) -> PendingReindex | None:
        if not rows:
            return None
        r = rows[0]
        return PendingReindex(
            r["model"], int(r["dim"]), r["fingerprint"],
            self.backend.time(r["started_at"]), self.backend.time(r["updated_at"]),
        )  # fmt: skip

    def counts(self, tenant: str, model: str) -> list[ReindexCount]:
        """Each kind of the tenant's vectors against `model` (see `ReindexCount`)."""
        params = {"tenant": tenant, "model": model}
        out = []
        with self.backend.reading(tenant) as db:
            for kind in KINDS:
                n = {
                    name: int(db.execute(self._kind(kind, name), params).fetchall()[0]["n"])
                    for name in ("count_todo", "count_done", "count_current")
                }
                out.append(ReindexCount(kind, n["count_todo"], n["count_done"], n["count_current"]))
        return out

    def todo(
        self, tenant: str, model: str, kind: str, after: Any, limit: int
    ) -> list[tuple[Any, str]]:
        """Up to `limit` (key, text) of vectors of `kind` held by another model than
        `model` with no new vector yet, by key after `after` (None: from the first)."""
        params = {"tenant": tenant, "model": model, "limit": limit,
                  "after": self.FIRST_KEY if after is None else after}  # fmt: skip
        rows = self.backend.read(tenant, self._kind(kind, "todo"), params)
        return [(r["key"], str(r["text"])) for r in rows]

    # -- writes ----------------------------------------------------------------------

    def begin(
        self, tenant: str, model: str, dim: int, fingerprint: str | None, now: datetime
    ) -> PendingReindex:
        """Note a reindex of the tenant to `model` unless one is noted; return the one noted
        (the caller compares it with what it asked)."""
        params = {"tenant": tenant, "model": model, "dim": dim, "fingerprint": fingerprint,
                  "at": self.backend.at(now)}  # fmt: skip
        with self.backend.transaction(tenant) as db:
            db.execute(self._sql(SQL["begin"]), params)
        found = self.pending(tenant)
        assert found is not None  # just written, or there before
        return found

    def add(
        self, tenant: str, model: str, kind: str, vectors: Sequence[tuple[Any, Vector]],
        now: datetime,
    ) -> None:  # fmt: skip
        """Store one batch of new vectors of `kind` in one transaction (one whose old vector
        went meanwhile, or that already has one, is left out)."""
        rows = [{"tenant": tenant, "model": model, "key": key, "vec": self._vec_param(vec)}
                for key, vec in vectors]  # fmt: skip
        with self.backend.transaction(tenant) as db:
            if rows:
                db.executemany(self._kind(kind, "add"), rows)
            db.execute(self._sql(SQL["touch"]), {"tenant": tenant, "at": self.backend.at(now)})

    def switch(self, tenant: str, model: str, dim: int, fingerprint: str | None) -> bool:
        """Make the new vectors the index, in one transaction, if no vector of another
        model is left without one; False (nothing changed) when some are."""
        params = {"tenant": tenant, "model": model}
        with self.backend.transaction(tenant) as db:
            self._lock_writers(db, tenant)
            for kind in KINDS:
                if int(db.execute(self._kind(kind, "count_todo"), params).fetchall()[0]["n"]):
                    return False
            actors = [r["actor"] for r in db.execute(self._sql(SQL["actors"]), params).fetchall()]
            for kind in KINDS:
                db.execute(self._kind(kind, "switch"), params)
                db.execute(self._kind(kind, "clear"), params)
            for actor in actors:
                db.execute(self._sql(SQL["bump"]), {"tenant": tenant, "actor": actor})
            db.execute(self._sql(SQL["keep_model"]), params)
            if self._holds(db, params):
                db.execute(self._sql(SQL["note_model"]),
                           {**params, "dim": dim, "fingerprint": fingerprint})  # fmt: skip
            db.execute(self._sql(SQL["end"]), params)
        self._switched(tenant, actors, model, dim)
        return True

    def _lock_writers(self, db: Tx, tenant: str) -> None:
        """Wait for the writers of vectors that checked the index, keep new ones waiting."""
        if self.CHANGE_LOCK is not None:
            db.execute(self.CHANGE_LOCK, {"tenant": tenant})

    def _holds(self, db: Tx, params: dict[str, Any]) -> bool:
        """Whether the tenant holds any vector of the model (inside the switch)."""
        return any(
            int(db.execute(self._kind(kind, "count_current"), params).fetchall()[0]["n"])
            for kind in KINDS
        )

    def cancel(self, tenant: str) -> bool:
        """Drop the tenant's pending reindex and every new vector it stored; whether one was
        pending. The old vectors stay the index."""
        with self.backend.transaction(tenant) as db:
            self._lock_writers(db, tenant)
            for kind in KINDS:
                db.execute(self._kind(kind, "clear"), {"tenant": tenant})
            return db.execute(self._sql(SQL["end"]), {"tenant": tenant}).rowcount > 0

    def left_of_actor(self, tenant: str, actor: str) -> int:
        """How many new vectors of the actor's records, events and chunks are stored."""
        rows = self.backend.read(
            tenant, self._sql(self.ACTOR_LEFT), {"tenant": tenant, "actor": actor}
        )
        return int(rows[0]["n"])
