"""Search on the PostgreSQL store: full-text ranks, and vectors exact or through HNSW.

`PostgresSearch` is the store's search role. Vectors live in an untyped `vector` column (any
dimension). A scope with few vectors of a model is searched exactly with
cosine distance `<=>`; a larger one through an HNSW index that the store makes
for each model and dimension the first time it writes (pgvector 0.8's
iterative scan walks on until enough rows pass the scope filter), falling back
to the exact scan when that finds too few. Words live in a generated
`tsvector` column and, because row-level security keeps the planner off a GIN
index, as (tenant, actor, term) rows under a btree; `ts_rank` ranks only the
newest matches.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import DictRow

from remem.errors import StoreError
from remem.model import Event
from remem.store.flows.vector_fit import vectors_fit
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.postgres.rows import ALL_TENANTS, value, vector_from
from remem.store.postgres.terms import TermWindows, hits
from remem.store.roles import Hit, Scope

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger("remem.store.postgres.store")

# How a scope's vectors of a model are searched: exactly, which costs about the
# scope's size, or through the model's HNSW index filtered to the scope, which costs
# about ef_search times (index size / scope size). They break even near a scope of
# sqrt(HNSW_BREAK_EVEN * index size) vectors (measured on this machine: 5,000 of
# 48,000); a scope of at most EXACT_SCAN_MIN vectors is always scanned exactly.
EXACT_SCAN_MIN = 2000
HNSW_BREAK_EVEN = 500
HNSW_EF_SEARCH = 100  # candidates an HNSW search keeps (pgvector's default is 40)
HNSW_MAX_DIMS = 4000  # pgvector cannot index a wider `halfvec` with HNSW
INDEX_RECHECK_S = 30.0  # how long "this model has no index yet" is believed
INDEX_RETRY_S = 600.0  # how long after a failed build it is tried again
# maintenance_work_mem for an index built at the end of a bulk load: pgvector builds
# the graph in memory while it fits (a million 384-d vectors take about 1 GB), and
# far more slowly on disk once it does not. Set for that one transaction only.
BULK_INDEX_MEMORY = "2GB"
SCOPE_SIZE_TTL_S = 60.0  # how long a scope's size (small or large, for the above) is believed
# A scope holding at least this many vectors of a model, and at most half of the model's
# index, gets an HNSW index of its own (`postgres_vector_sql.ScopeIndex`): at 1,000,000
# records with 100,000 in the scope, a search read about 2,400 pages through the
# model's index and 600 through the scope's (`remem bench`, docs/postgresql.md).
SCOPE_INDEX_MIN = 20_000
# How long an erasure (or a bulk load) waits for a scope index being built by another
# process before it gives up: about 30 s for 100,000 vectors built concurrently.
SCOPE_DDL_WAIT_S = 900.0


class PostgresSearch:
    """The search role of the PostgreSQL store (`remem.store.roles.Search`, `Store.search`):
    search, the event vectors, and the HNSW indexes of the vectors, over its `backend`.
    `exact_scan_max`: a fixed bound on the scopes scanned exactly (0: HNSW always);
    `scope_index_min`: the vectors that give a scope an index of its own."""

    def __init__(
        self,
        backend: PostgresBackend,
        *,
        exact_scan_max: int | None = None,
        scope_index_min: int = SCOPE_INDEX_MIN,
    ) -> None:
        self.backend = backend
        self._exact_scan_max = exact_scan_max
        # an index known to exist maps to None; one found missing, to when it was looked for
        self._indexes: dict[q.VectorIndex | q.ScopeIndex, float | None] = {}
        self._build_failed: dict[q.VectorIndex | q.ScopeIndex, float] = {}  # last failed build
        self._scope_index_min = scope_index_min
        self._scope_checked: dict[q.ScopeIndex, float] = {}  # when a scope was last counted
        self._deferred: set[q.VectorIndex] | None = None  # inside `bulk_load`: built at its end
        self._large: dict[tuple[str, str, str, str], tuple[bool, float]] = {}
        self._iterative = False  # pgvector 0.8's iterative index scans; set by the store
        self._prewarm = False  # whether pg_prewarm is installed; set by the store
        self._warmed: set[q.ScopeIndex] = set()  # scope indexes this process has prewarmed
        self.terms = TermWindows(backend)  # what word searches of records keep

    def _tx(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        return self.backend.tx(tenant)

    def reading(self, tenant: str) -> AbstractContextManager[None]:
        """`Search.reading`: this thread's reads of `tenant` inside, in one transaction
        bound to it (`PostgresBackend.span`, `remem.store.postgres.span`)."""
        return self.backend.span(tenant)

    reads_ahead = True  # each read sent ahead saves a round trip

    def ahead(
        self, scope: Scope, shared: Sequence[Scope], words: str, events: int, records: int
    ) -> None:
        """`Search.ahead`: the shared scopes' versions, the word search of `events` of the
        scope's events and the first statement of the word search of `records` of its
        records, sent with this thread's next round trip in a span of the scope's tenant
        (`remem.store.postgres.span`)."""
        reads: list[tuple[Query, Any]] = [_version_read(sc) for sc in shared]
        if events > 0 and (built := q.search_events(scope, words, events)) is not None:
            reads.append(built)
        if records > 0:
            reads.extend(self.terms.first(scope, words, records))
        self.backend.ahead(scope.tenant, reads)

    def last_read(self, tenant: str) -> None:
        """`Search.last_read`: COMMIT rides with the next read's round trip
        (`remem.store.postgres.span`)."""
        self.backend.last_read(tenant)

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        if not vectors:
            return
        for dims in {len(v) for _, v in vectors}:
            self._ensure_index(q.VectorIndex("event_vectors", model, dims))
        with self._tx(tenant) as cur:
            if not vectors_fit(cur, self.backend.vector_fit_sql, tenant, model,
                               {len(v) for _, v in vectors}):  # fmt: skip
                return  # the index is another model's now: left for its catch-up
            cur.executemany(
                q.INSERT_EVENT_VECTOR,
                [{"model": model, "vec": np.asarray(v), "tenant": tenant, "event_id": e.id}
                 for e, v in vectors],
            )  # fmt: skip
            for dims in sorted({len(v) for _, v in vectors}):
                cur.execute(q.NOTE_VECTOR_MODEL, {"tenant": tenant, "model": model, "dim": dims})
            for actor in sorted({e.actor for e, _ in vectors}):
                cur.execute(q.BUMP_SCOPE, {"tenant": tenant, "actor": actor})

    def vector_search_events(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the scope's events (embedded by `model`) nearest to `query`."""
        if limit <= 0:
            return []
        vec = np.asarray(query)  # sent as a vector (see `_configure`)
        ix = self._index_for("event_vectors", model, len(query), scope)
        params = {"tenant": scope.tenant, "actor": scope.actor, "query": vec, "model": model,
                  "dims": len(query), "at": at, "limit": limit}  # fmt: skip
        if ix is not None:  # no scope has an index of its own of events
            hits = self._nearest(scope.tenant, q.event_vector_search_hnsw(ix), params, False)
            if len(hits) == limit:
                return hits
        return [
            (r["id"], float(r["cosine"]))
            for r in self.backend.rows(scope.tenant, q.EVENT_VECTOR_SEARCH, params)
        ]

    def vector_search_many(
        self,
        scope: Scope,
        model: str,
        queries: Sequence[npt.NDArray[np.float32]],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[list[tuple[str, float]]]:
        """`vector_search` for each query, in order (the database scans each)."""
        return [self.vector_search(scope, model, q, limit, at, include_invalid) for q in queries]

    def search_records(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """ts_rank over one scope's active and invalid records; the caller masks status.
        Through the term windows this process keeps (`remem.store.postgres.terms`)."""
        return self.terms.search(scope, query, limit)

    def search_events(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """ts_rank over one actor's raw events (short-term memory)."""
        built = q.search_events(scope, query, limit)
        return [] if built is None else hits(self.backend.rows(scope.tenant, *built))

    def vector_search(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[tuple[str, float]]:
        """Nearest records of one scope by cosine; see `Store.vector_search`."""
        if limit <= 0:
            return []
        vec = np.asarray(query)  # sent as a vector (see `_configure`)
        ix = self._index_for("record_vectors", model, len(query), scope)
        searched = {"query": vec, "at": at, "limit": limit}
        if ix is not None:
            own = q.ScopeIndex(scope.tenant, scope.actor, model, len(query))
            self._warm(own)
            approx, params = q.vector_search_hnsw(ix, scope, include_invalid)
            custom = self._index_exists(own)
            hits = self._nearest(scope.tenant, approx, {**params, **searched}, custom)
            if len(hits) == limit:
                return hits
            # too few: the scope is a sliver of the index or mostly closed; scan it all
        sql, scoped = q.vector_search(scope, include_invalid)
        named = {**scoped, **searched, "model": model, "dims": len(query)}
        rows = self.backend.rows(scope.tenant, sql, named)
        return [(r["id"], float(r["cosine"])) for r in rows]

    # -- nearest-vector indexes ------------------------------------------------------

    def _index_for(self, table: str, model: str, dims: int, scope: Scope) -> q.VectorIndex | None:
        """The HNSW index to search `scope`'s vectors of `model` with, or None to scan
        them exactly: the model has no index, or the scope is small enough."""
        ix = q.VectorIndex(table, model, dims)
        if not self._index_exists(ix):
            return None
        key = (table, scope.tenant, scope.actor, model)
        large, when = self._large.get(key, (False, -SCOPE_SIZE_TTL_S))
        if time.monotonic() - when >= SCOPE_SIZE_TTL_S:
            # a stale answer costs only speed: exact is exact, and HNSW falls back to it
            bound = self._exact_bound(ix)
            sql = q.SCOPE_VECTORS.format(table=table)
            counted = {"tenant": scope.tenant, "actor": scope.actor, "model": model,
                       "bound": bound + 1}  # fmt: skip
            found = value(self.backend.rows(scope.tenant, sql, counted))
            large = int(found) > bound
            if len(self._large) >= 10_000:
                self._large.clear()
            self._large[key] = (large, time.monotonic())
        return ix if large else None

    def _exact_bound(self, ix: q.VectorIndex) -> int:
        """The most vectors a scope may hold to be scanned exactly (see EXACT_SCAN_MIN)."""
        if self._exact_scan_max is not None:
            return self._exact_scan_max
        # the planner's estimate of the index's size (kept by autovacuum): enough here
        rows = self.backend.rows(ALL_TENANTS, q.INDEX_SIZE, {"name": ix.name})
        size = max(0.0, float(value(rows)))
        return max(EXACT_SCAN_MIN, round(math.sqrt(HNSW_BREAK_EVEN * size)))

    def _index_exists(self, ix: q.VectorIndex | q.ScopeIndex) -> bool:
        if ix.dims > HNSW_MAX_DIMS:
            return False
        if ix in self._indexes:
            looked = self._indexes[ix]
            if looked is None or time.monotonic() - looked < INDEX_RECHECK_S:
                return looked is None
        # another process may have made it since (see `_ensure_index`)
        exists = bool(self.backend.rows(ALL_TENANTS, q.VECTOR_INDEX_EXISTS, {"name": ix.name}))
        self._indexes[ix] = None if exists else time.monotonic()
        return exists

    def _ensure_index(self, ix: q.VectorIndex) -> None:
        """Make `ix` if it is missing: the first time a model writes vectors of one
        dimension to a table. Writers wait while it is built, which is at once for
        a new model; a database upgraded with many vectors of a model builds it on
        the first write after the upgrade. Without it, search stays exact. Inside
        `bulk_load` it is only noted, and built when the load ends."""
        if ix.dims > HNSW_MAX_DIMS:
            return
        if self._deferred is not None:
            self._deferred.add(ix)
            return
        if self._index_exists(ix):
            return
        if time.monotonic() - self._build_failed.get(ix, -INDEX_RETRY_S) < INDEX_RETRY_S:
            return
        self._build_index(ix)

    def _build_index(self, ix: q.VectorIndex | q.ScopeIndex, memory: str | None = None) -> None:
        """CREATE INDEX for `ix`, with `memory` as its maintenance_work_mem if given."""
        scoped = isinstance(ix, q.ScopeIndex)
        if isinstance(ix, q.ScopeIndex):
            create = q.create_scope_index(ix)
        else:
            create = q.create_vector_index(ix)
        try:
            with self._tx(ALL_TENANTS) as cur:
                cur.execute(q.VECTOR_INDEX_LOCK, {"name": ix.name})
                if memory is not None:
                    cur.execute(q.SET_INDEX_MEMORY, {"memory": memory})
                cur.execute(create)
        except StoreError as exc:  # e.g. a role that does not own the table
            what = "a scope's own" if scoped else "the model's"
            log.warning("no HNSW index (%s) for %s: %s", what, ix.model, exc)
            self._build_failed[ix] = time.monotonic()
            return
        self._indexes[ix] = None

    # -- an index of its own for a large scope ------------------------------------------

    def _index_large_scopes(self, ix: q.VectorIndex, tenant: str, actors: set[str]) -> None:
        """After a write of record vectors of `ix`'s model by these actors: give each scope
        that has grown past `SCOPE_INDEX_MIN` vectors of it, and holds at most half of
        the table's (the planner's estimate), an index of its own, built concurrently
        while this writer waits (other writers go on). A scope is counted at most once
        per `SCOPE_SIZE_TTL_S` in a process."""
        if ix.table != "record_vectors" or self._deferred is not None:
            return
        for actor in sorted(actors):
            sx = q.ScopeIndex(tenant, actor, ix.model, ix.dims)
            now = time.monotonic()
            if now - self._scope_checked.get(sx, -SCOPE_SIZE_TTL_S) < SCOPE_SIZE_TTL_S:
                continue
            if len(self._scope_checked) >= 10_000:
                self._scope_checked.clear()
            self._scope_checked[sx] = now
            half = int(value(self.backend.rows(ALL_TENANTS, q.VECTORS_ESTIMATE))) // 2
            if half < self._scope_index_min or not self._index_exists(ix):
                continue
            held = self._scope_vectors(sx, half + 1)
            if self._scope_index_min <= held <= half and not self._index_exists(sx):
                self._build_scope_index_concurrently(sx)

    def _index_loaded_scopes(self, ix: q.VectorIndex) -> None:
        """At the end of a bulk load: an index of its own for each scope of at least
        `SCOPE_INDEX_MIN` vectors of `ix`'s model and at most half of them, counted in
        one pass over the table."""
        if ix.table != "record_vectors":
            return
        counted = {"model": ix.model, "dims": ix.dims, "least": self._scope_index_min}
        for row in self.backend.rows(ALL_TENANTS, q.SCOPE_VECTOR_COUNTS, counted):
            sx = q.ScopeIndex(row["tenant"], row["actor"], ix.model, ix.dims)
            if 2 * int(row["n"]) <= int(row["total"]) and not self._index_exists(sx):
                self._build_scope_index(sx)

    def _build_scope_index(self, sx: q.ScopeIndex) -> None:
        """At the end of a bulk load (the loader owns the database): a plain CREATE INDEX,
        under the lock on scope indexes, if the scope still holds enough vectors."""
        if time.monotonic() - self._build_failed.get(sx, -INDEX_RETRY_S) < INDEX_RETRY_S:
            return
        with self._scope_ddl(SCOPE_DDL_WAIT_S) as held:
            if held is not None and self._still_large(sx):
                self._build_index(sx, BULK_INDEX_MEMORY)

    def _build_scope_index_concurrently(self, sx: q.ScopeIndex) -> None:
        """CREATE INDEX CONCURRENTLY for a scope a write made large: writers of
        record_vectors are not blocked (a plain build locks them out for about 15 s at
        100,000 vectors). It runs outside any transaction, under the lock on scope
        indexes that an erasure also takes (`_scope_ddl`), and only if the scope still
        holds enough vectors once that is held: an actor erased meanwhile gets no index.
        If the lock is taken (another build, an erasure), it is left for a later write."""
        if time.monotonic() - self._build_failed.get(sx, -INDEX_RETRY_S) < INDEX_RETRY_S:
            return
        with self._scope_ddl(0.0) as conn:
            if conn is None or not self._still_large(sx):
                return
            drop = pg_sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                pg_sql.Identifier(sx.name)
            )
            try:
                # a build that failed or was cut off leaves an invalid index of that name
                conn.execute(drop)
                conn.execute(q.SET_SESSION_INDEX_MEMORY, {"memory": BULK_INDEX_MEMORY})
                conn.execute(q.create_scope_index(sx, concurrently=True))
            except psycopg.Error as exc:
                log.warning("no HNSW index (a scope's own) for %s: %s", sx.model, exc)
                self._build_failed[sx] = time.monotonic()
                try:
                    conn.execute(drop)
                except psycopg.Error:
                    pass  # the session's end leaves the invalid index; the next build drops it
                return
        self._indexes[sx] = None

    def _still_large(self, sx: q.ScopeIndex) -> bool:
        """Whether the scope holds at least `scope_index_min` vectors of the model now."""
        return self._scope_vectors(sx, self._scope_index_min) >= self._scope_index_min

    def _scope_vectors(self, sx: q.ScopeIndex, bound: int) -> int:
        """How many record vectors of `sx`'s model its scope holds, counted up to `bound`."""
        counted = {"tenant": sx.tenant, "actor": sx.actor, "model": sx.model, "bound": bound}
        sql = q.SCOPE_VECTORS.format(table="record_vectors")
        return int(value(self.backend.rows(sx.tenant, sql, counted)))

    @contextmanager
    def _scope_ddl(self, wait_s: float) -> Iterator[psycopg.Connection[DictRow] | None]:
        """The database's one lock on making and dropping scope indexes, held by a
        connection of its own (yielded, in autocommit), or None when it was not got
        within `wait_s` seconds. It is taken by polling, never by waiting inside a
        statement: CREATE INDEX CONCURRENTLY waits for every older snapshot, and a
        statement waiting for the lock its builder holds would be one (a deadlock).
        One lock for every scope, because an erasure's DROP INDEX, run while another
        scope's index is built concurrently, would deadlock with that build."""
        conn = self.backend.connect()
        try:
            deadline = time.monotonic() + wait_s
            while not conn.execute(q.SCOPE_DDL_TRY_LOCK).fetchall()[0]["got"]:
                if time.monotonic() >= deadline:
                    yield None
                    return
                time.sleep(0.05)
            try:
                yield conn
            finally:
                conn.execute(q.SCOPE_DDL_UNLOCK)
        except psycopg.Error as exc:
            raise self.backend.translate(exc) from exc
        finally:
            conn.close()

    def _warm(self, sx: q.ScopeIndex) -> None:
        """On this process's first HNSW search of a scope with an index of its own, when
        pg_prewarm is installed: load that index into PostgreSQL's buffers on a background
        thread (about 0.2 s for 100,000 vectors from the OS cache), so that the searches
        after a server restart read it from memory instead of page by page."""
        if not self._prewarm or sx in self._warmed:
            return
        self._warmed.add(sx)
        if self._index_exists(sx):
            threading.Thread(
                target=self._prewarm_index, args=(sx,), name="remem-prewarm", daemon=True
            ).start()
        else:
            self._warmed.discard(sx)  # looked for again when `_index_exists` looks again

    def _prewarm_index(self, sx: q.ScopeIndex) -> None:
        try:
            self.backend.rows(ALL_TENANTS, q.PREWARM, {"name": sx.name})
        except StoreError as exc:  # dropped meanwhile, or the store closed: only speed
            log.info("could not prewarm %s: %s", sx.name, exc)
            self._warmed.discard(sx)

    def _drop_scope_indexes(self, db: Cursor, tenant: str, actor: str) -> None:
        """Drop the actor's own indexes, in an erasure's transaction: their definitions
        name the actor."""
        prefix = q.ScopeIndex(tenant, actor, "", 0).prefix
        for row in db.execute(q.SCOPE_INDEXES_OF, {"prefix": prefix}).fetchall():
            db.execute(pg_sql.SQL("DROP INDEX IF EXISTS {}").format(pg_sql.Identifier(row["name"])))
        for known in [k for k in self._indexes if isinstance(k, q.ScopeIndex)]:
            if (known.tenant, known.actor) == (tenant, actor):
                del self._indexes[known]
        self._warmed = {k for k in self._warmed if (k.tenant, k.actor) != (tenant, actor)}
        self._scope_checked = {
            k: t for k, t in self._scope_checked.items() if (k.tenant, k.actor) != (tenant, actor)
        }

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many vectors, then build the HNSW indexes their first write would have
        made, once each (with `BULK_INDEX_MEMORY`): row-by-row inserts into a growing
        graph are what make a large first load slow. Search is exact meanwhile. The
        record tables are analysed at the end, and each scope the load made large gets
        its own index (`SCOPE_INDEX_MIN`)."""
        if self._deferred is not None:  # nested: the outer block builds
            yield
            return
        self._deferred = set()
        try:
            yield
        finally:
            pending, self._deferred = self._deferred, None
            for ix in sorted(pending, key=lambda i: i.name):
                if not self._index_exists(ix):
                    self._build_index(ix, BULK_INDEX_MEMORY)
            # fresh statistics, so the planner does not take the new rows for none
            with self._tx(ALL_TENANTS) as cur:
                cur.execute(q.ANALYZE_RECORDS)
            for ix in sorted(pending, key=lambda i: i.name):
                if self._index_exists(ix):
                    self._index_loaded_scopes(ix)

    def _nearest(
        self, tenant: str, sql: Query, params: Mapping[str, Any], custom: bool
    ) -> list[tuple[str, float]]:
        """Rows of an HNSW search, nearest first (an iterative scan returns them nearly so);
        planned for its parameters if `custom` (a scope with an index of its own: see
        `HNSW_SETTINGS`), else by the generic plan of the statement psycopg prepared."""
        settings = q.HNSW_SETTINGS_ITERATIVE if self._iterative else q.HNSW_SETTINGS
        plan = q.CUSTOM_PLAN if custom else q.GENERIC_PLAN
        rows = self.backend.rows(
            tenant, sql, params, [(settings, {"ef_search": str(HNSW_EF_SEARCH), "plan": plan})]
        )
        rows.sort(key=lambda r: (-r["cosine"], r["tie"]))
        return [(r["id"], float(r["cosine"])) for r in rows]

    def scope_version(self, scope: Scope) -> int | None:
        """The scope's version (`scope_versions`, schema 9), bumped in the transaction of
        every write to its records or vectors, by any process: what lets a recall reuse
        the scope's searches of the domain centres (`remem.recall.applies`) instead of
        repeating a dozen HNSW searches per request."""
        rows = self.backend.rows(scope.tenant, *_version_read(scope))
        return int(rows[0]["version"]) if rows else 0

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        rows = self.backend.rows(tenant, q.VECTORS_FOR, {"tenant": tenant, "model": model,
                                                  "keys": list(ids)})  # fmt: skip
        return {r["record_id"]: vector_from(r["vec"]) for r in rows}


def _version_read(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The read of a scope's version: `scope_version`'s, and the one `ahead` sends for it
    (a read sent ahead is matched by its text and parameters)."""
    return q.SCOPE_VERSION, {"tenant": scope.tenant, "actor": scope.actor}
