"""Search on the SQLite store: FTS5 for words, vectors searched in memory.

`SQLiteSearch` is the store's search role. This Python's
sqlite3 cannot load extensions, so vectors are stored as float16 blobs and
searched with numpy one scope at a time: the matrix of a (tenant, actor) is
loaded once and reloaded only when that scope's version changes (see
`scope_versions` and `remem.store.sqlite.vectors.index`), and kept in a memory-mapped file
beside the database (`remem.store.sqlite.vectors.files`) so a fresh process opens it in
milliseconds instead of reading it through SQLite. Words are ranked by FTS5's BM25,
each phrase's share of it kept while the file is unchanged
(`remem.store.sqlite.upkeep.PhraseShares`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.errors import StoreError
from remem.linger import Sweep
from remem.model import Event, Record
from remem.policy.metadata import matches
from remem.store.errors import sqlite_translated
from remem.store.flows.backend import sqlite_lists
from remem.store.flows.vector_fit import vectors_fit
from remem.store.roles import Hit, RecordStore, Scope
from remem.store.sqlite import sql as q
from remem.store.sqlite.backend import SQLiteBackend
from remem.store.sqlite.sql import fts_phrases, fts_query, scope_token
from remem.store.sqlite.upkeep import PhraseShares
from remem.store.sqlite.vectors import coarse
from remem.store.sqlite.vectors.files import TAIL_MAX, Stamp, VectorFiles
from remem.store.sqlite.vectors.index import ScopeVectors
from remem.store.sqlite.vectors.load import Kind, extends, refresh

LEXICAL_WINDOW = 1000  # BM25 ranks at most this many of the newest matches
VECTOR_CACHE_SCOPES = 16  # scopes whose vectors stay in memory (oldest dropped first)
PREPARED_MIN = 5_000  # record vectors a bulk load adds to a scope before it writes its file
POOL_FOR_PREFIX = 500  # nearest rows fetched when a namespace prefix or a filter narrows it
# BM25 in the full-text index alone (newer than the floor of `FTS_FLOOR`), the best
# joined to their records afterwards (see `SQLiteSearch.search_records`)
RANKED_RECORDS = """
SELECT f.rowid AS key, r.id, r.tenant, r.actor, r.status, f.rank FROM (
    SELECT rowid, bm25(records_fts) AS rank FROM records_fts
    WHERE records_fts MATCH :match AND rowid >= :floor ORDER BY rank LIMIT :limit
) f JOIN records r ON r.rowid = f.rowid
ORDER BY f.rank
"""
# the rows the best of a ranking in the full-text index alone are (`SQLiteSearch._ranked`)
# (`keys`: a JSON list of rowids; one parameter binds faster than a hundred)
RECORDS_BY_ROWID = """
SELECT rowid AS key, id, tenant, actor, status FROM records
WHERE rowid IN (SELECT value FROM json_each(:keys))
"""
EVENTS_BY_SEQ = """
SELECT seq AS key, id, tenant, actor FROM events WHERE seq IN (SELECT value FROM json_each(:keys))
"""


@dataclass(frozen=True)
class HeldVectors:
    """A scope's vectors in this process: for which version, their stamp, their file's base."""

    version: int
    vectors: ScopeVectors | None
    stamp: Stamp | None
    base: Stamp | None  # the stamp of the base file `vectors` extend; None: no such file


def _held(
    cached: HeldVectors | None, files: VectorFiles | None, key: tuple[str, str], kind: str
) -> tuple[HeldVectors, Stamp | None]:
    """What a catch-up starts from: this process's copy, else the scope's files, else nothing."""
    if cached is not None and cached.vectors is not None:
        return cached, cached.base
    opened = files.open(*key, kind) if files is not None else None
    if opened is None:
        return HeldVectors(0, None, None, None), None
    return HeldVectors(0, opened.vectors, opened.stamp, opened.base), opened.base


class SQLiteSearch:
    """The search role of the SQLite store (`remem.store.roles.Search`, `Store.search`):
    lexical and vector search and the event vectors, over its `backend`, the `records`
    it reads, and the decoded records the store keeps (`held`, emptied by an erasure)."""

    def __init__(
        self,
        backend: SQLiteBackend,
        records: RecordStore,
        held: dict[tuple[str, str], Record],
        files: VectorFiles | None,
    ) -> None:
        self.backend, self.records, self._records = backend, records, held
        self._lock, self._db = backend.lock, backend.conn
        self._vec_cache: dict[tuple[str, str, str], HeldVectors] = {}
        self._sweep = Sweep()  # scopes whose version moved go (`_drop_moved`)
        self._shares = PhraseShares()  # BM25 of the phrases asked for, while the file is unchanged
        # None for `:memory:` or a folder this process cannot write: vectors are then
        # read from the database once per process (the in-memory path)
        self.vector_files = files
        self._writers: list[threading.Thread] = []
        self._writers_lock = threading.Lock()

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.backend.tx()

    def _rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        return self.backend.rows(sql, params)

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        touched: set[tuple[str, str]] = set()
        with self._tx() as db:
            if not vectors or not vectors_fit(db, self.backend.vector_fit_sql, tenant, model,
                                              {len(v) for _, v in vectors}):  # fmt: skip
                return  # the index is another model's now: left for its catch-up
            for event, vec in vectors:
                blob = np.asarray(vec, np.float16).tobytes()
                db.execute(q.INSERT_EVENT_VECTOR, {"model": model, "time": event.time.timestamp(),
                                                   "vec": blob, "tenant": tenant,
                                                   "event_id": event.id})  # fmt: skip
                touched.add((tenant, event.actor))
            for dim in sorted({len(v) for _, v in vectors}):
                db.execute(q.NOTE_VECTOR_MODEL, {"tenant": tenant, "model": model, "dim": dim})
            for who, actor in touched:
                db.execute(q.BUMP_SCOPE, {"tenant": who, "actor": actor})

    def vector_search_events(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the scope's events (embedded by `model`) nearest to `query`."""
        vectors = self._scope_vectors(scope, events=True)
        if vectors is None or vectors.model != model:
            return []
        return vectors.search(query, limit, at.timestamp(), include_invalid=True)

    # -- search ------------------------------------------------------------------

    def search_records(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """BM25 over one scope's non-deleted records; the caller masks status.

        Ranked in the full-text index alone (from the phrases' kept shares, `_ranked`,
        else by `RANKED_RECORDS`), then the best `2 * limit` joined to their
        records (the join cost as much as BM25 per matched row): the same hits as
        ranking the joined rows, unless so many of the best were proposed or
        deleted that fewer than `limit` remain, when the joined query runs
        instead. A namespace prefix or a metadata filter takes the joined query.
        """
        sql, params = q.search_records(scope)
        if scope.narrowed:
            return self._search("records_fts", scope, query, sql, params, limit)
        phrases = fts_phrases(scope_token(scope.tenant, scope.actor), query)
        if not phrases or limit <= 0:
            return []
        got = self._ranked("records_fts", RECORDS_BY_ROWID, phrases, 2 * limit)
        if got is None:
            match = " OR ".join(phrases)
            floor = self._floor("records_fts", match)
            joined = self._rows(
                RANKED_RECORDS, {"match": match, "floor": floor, "limit": 2 * limit}
            )
            ranked = [(tuple(r), float(r["rank"])) for r in joined]
        else:
            ranked = got[0]
        # each (key, id, tenant, actor, status), as `RECORDS_BY_ROWID` reads it, and its rank
        hits = [
            Hit(r[1], -rank)
            for r, rank in ranked
            if r[2] == scope.tenant and r[3] == scope.actor and r[4] in ("active", "invalid")
        ]
        if len(hits) < limit and len(ranked) == 2 * limit:
            return self._search("records_fts", scope, query, sql, params, limit)
        return hits[:limit]

    def search_events(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """BM25 over one actor's raw events (short-term memory), ranked in the full-text
        index alone (`_ranked`) unless one of the best is not an event of this scope,
        which the joined query passes over."""
        params = {"tenant": scope.tenant, "actor": scope.actor}
        phrases = fts_phrases(scope_token(scope.tenant, scope.actor), query)
        if not phrases:
            return []
        got = self._ranked("events_fts", EVENTS_BY_SEQ, phrases, limit) if limit > 0 else None
        if got is not None:  # each (key, id, tenant, actor), as `EVENTS_BY_SEQ` reads it
            hits = [
                Hit(r[1], -rank)
                for r, rank in got[0]
                if r[2] == scope.tenant and r[3] == scope.actor
            ]
            if len(hits) == got[1]:
                return hits
        return self._search("events_fts", scope, query, q.SEARCH_EVENTS, params, limit)

    def _ranked(
        self, table: str, by_key: str, phrases: Sequence[str], limit: int
    ) -> tuple[list[tuple[tuple[Any, ...], float]], int] | None:
        """The `limit` best of the table's `LEXICAL_WINDOW` newest rows matching any of
        `phrases` (`PhraseShares`), each with its row read by `by_key` (a
        statement of a JSON list `keys` returning `key`; rows it does not find are left out) and
        its rank, best first, and how many the index ranked; all read in one read
        transaction. None in a transaction, or when the phrases' shares are not kept
        and would cost more to read than the OR-query."""
        with self._lock, sqlite_translated():
            db = self._db
            if db.in_transaction:
                return None
            db.execute("BEGIN")
            try:
                got = self._shares.rank(db, table, phrases, LEXICAL_WINDOW, limit)
                if got is None:
                    return None
                rows = self._shares.joined(db, by_key, got.rowids)
            finally:
                db.execute("COMMIT")
        ranked = [
            (rows[k], rank) for k, rank in zip(got.rowids, got.ranks, strict=True) if k in rows
        ]
        return ranked, len(got.rowids)

    def _floor(self, table: str, match: str) -> int:
        offset = LEXICAL_WINDOW - 1
        rows = self._rows(q.FTS_FLOOR.format(table=table), {"match": match, "offset": offset})
        return int(rows[0][0]) if rows else 0

    def _search(
        self, table: str, scope: Scope, query: str, sql: str, params: Mapping[str, Any],
        limit: int,
    ) -> list[Hit]:  # fmt: skip
        """The joined query `sql`: BM25 over the rows newer than the floor, in SQL alone."""
        match = fts_query(scope_token(scope.tenant, scope.actor), query)
        if match is None:
            return []
        floor = self._floor(table, match)
        rows = self._rows(sql, {**params, "match": match, "floor": floor, "limit": limit})
        return [Hit(r[0], -float(r[1])) for r in rows]

    def vector_search(
        self,
        scope: Scope,
        model: str,
        query: npt.NDArray[np.float32],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[tuple[str, float]]:
        """Nearest records of one scope; see `Store.vector_search`."""
        vectors = self._scope_vectors(scope)
        if vectors is None or vectors.model != model:
            return []
        hits = vectors.search(
            query, POOL_FOR_PREFIX if scope.narrowed else limit, at.timestamp(), include_invalid
        )
        if scope.narrowed:
            prefix = scope.namespace_prefix or ""
            allowed = {
                r.id
                for r in self.records.get_records(scope.tenant, [h[0] for h in hits])
                if r.namespace.startswith(prefix) and matches(r.metadata, scope.metadata)
            }
            hits = [h for h in hits if h[0] in allowed][:limit]
        return hits

    def vector_search_many(
        self,
        scope: Scope,
        model: str,
        queries: Sequence[npt.NDArray[np.float32]],
        limit: int,
        at: datetime,
        include_invalid: bool = False,
    ) -> list[list[tuple[str, float]]]:
        """Nearest records of one scope for each query, in one scan; see
        `Store.vector_search_many`."""
        vectors = self._scope_vectors(scope)
        if not queries or vectors is None or vectors.model != model:
            return [[] for _ in queries]
        if scope.narrowed:  # filtered per query, as `vector_search` does
            return [
                self.vector_search(scope, model, q, limit, at, include_invalid) for q in queries
            ]
        matrix = np.stack([np.asarray(q, np.float32) for q in queries])
        return vectors.search_many(matrix, limit, at.timestamp(), include_invalid)

    def scope_version(self, scope: Scope) -> int | None:
        """The scope's version, bumped by every write to its records or vectors."""
        return self._version(scope)

    reads_ahead = False  # a read here makes no round trip

    def ahead(
        self, scope: Scope, shared: Sequence[Scope], words: str, events: int, records: int
    ) -> None:
        """`Search.ahead`: nothing (SQLite's reads make no round trips)."""

    def last_read(self, tenant: str) -> None:
        """`Search.last_read`: nothing (no transaction spans SQLite's reads)."""

    def reading(self, tenant: str) -> AbstractContextManager[None]:
        """`Store.reading`: SQLite's reads need no span (each is a statement on the
        store's one connection)."""
        return nullcontext()

    def _version(self, scope: Scope) -> int:
        rows = self._rows(q.SCOPE_VERSION, {"tenant": scope.tenant, "actor": scope.actor})
        return int(rows[0][0]) if rows else 0

    def _scope_vectors(self, scope: Scope, events: bool = False) -> ScopeVectors | None:
        """One scope's record (or event) vectors, caught up when the scope changed.

        In order: this process's cache while the scope's version is the same;
        else the vectors held (cached, or mapped from the scope's files) caught
        up from what changed in the database since their stamp; else all read
        from the database (`remem.store.sqlite.vectors.load.refresh`). What changed
        is written to the scope's files beside the answer.

        Every `LINGER_SECONDS` the scopes whose version moved on are dropped first, so
        what another process erased in a scope this one no longer searches goes too
        (`remem.linger`; the erasing process drops them at once, `_drop_scope_vectors`).
        """
        if self._sweep.due():
            self._drop_moved()
        key = (scope.tenant, scope.actor)
        kind: Kind = "events" if events else "records"
        version = self._version(scope)
        cache_key = (scope.tenant, scope.actor, kind)
        cached = self._vec_cache.get(cache_key)
        if cached is not None and cached.version == version:
            return cached.vectors
        files = self.vector_files
        with self._lock, sqlite_translated():
            own = not self._db.in_transaction
            if own:
                self._db.execute("BEGIN")  # the stamp and the rows from one snapshot
            try:
                held, base = _held(cached, files, key, kind)
                got = refresh(self._db, kind, key, held.vectors, held.stamp)
                version = got.stamp.version if got.stamp else version
            finally:
                if own:
                    self._db.execute("COMMIT")
        whole = got.how in ("loaded", "compacted")
        if whole:
            base = got.stamp if files is not None else None  # the base written below
        entry = HeldVectors(version, got.vectors, got.stamp, base)
        written = got.how in ("caught_up", "compacted", "loaded")
        if written and files is not None and got.vectors is not None:
            # written beside this recall, not before it answers: a projection and
            # 100 MB of file cost about as much again as a load (`sync_vector_files`)
            writer = threading.Thread(
                target=self._write_scope, args=(files, key, kind, entry, whole),
                name="remem-vector-file",
            )  # fmt: skip
            with self._writers_lock:
                self._writers = [w for w in self._writers if w.is_alive()] + [writer]
            writer.start()
        if cache_key not in self._vec_cache and len(self._vec_cache) >= VECTOR_CACHE_SCOPES:
            self._vec_cache.pop(next(iter(self._vec_cache)))
        self._vec_cache[cache_key] = entry
        return got.vectors

    def _write_scope(
        self, files: VectorFiles, key: tuple[str, str], kind: Kind, entry: HeldVectors,
        whole: bool,
    ) -> None:  # fmt: skip
        """Write a scope's base (`whole`, or a tail past `TAIL_MAX`) or tail; keep it if true.

        A file written while the scope changed is kept when the change added
        rows (a later catch-up reads them) and removed when it deleted some:
        it may hold what a forget just erased.
        """
        vectors, stamp, base = entry.vectors, entry.stamp, entry.base
        assert vectors is not None and stamp is not None
        tail_rows = len(vectors.tail_ids)
        if not whole and base is not None and tail_rows <= max(TAIL_MAX, len(vectors.ids) // 20):
            wrote = "tail" if files.write_tail(*key, kind, base, stamp, vectors) else ""
        else:
            wrote = "vec" if files.write(*key, kind, stamp, vectors) else ""
        if not wrote:
            return
        try:
            with self._lock, sqlite_translated():
                kept = extends(self._db, kind, key, stamp)
        except (StoreError, sqlite3.ProgrammingError):
            kept = False  # closed meanwhile: cannot tell
        if not kept:
            files.remove_scope(*key)
        elif wrote == "vec" and tail_rows:
            self._adopt_base(files, key, kind, entry)

    def _adopt_base(
        self, files: VectorFiles, key: tuple[str, str], kind: str, entry: HeldVectors
    ) -> None:
        """Hold the base just rewritten (mapped) instead of vectors with a long tail."""
        opened = files.open(*key, kind)
        if opened is None or opened.stamp != entry.stamp:
            return
        with self._lock:
            cache_key = (*key, kind)
            if self._vec_cache.get(cache_key) is entry:
                self._vec_cache[cache_key] = HeldVectors(
                    entry.version, opened.vectors, opened.stamp, opened.base
                )

    def prepare_scopes(self, after: int) -> None:
        """Read the scopes that gained at least `PREPARED_MIN` record vectors after row
        `after` (the `VECTOR_CACHE_SCOPES` largest) and write their vector files now.

        After a bulk load the first search would otherwise read every vector of the
        scope through SQLite (1.4-1.7 s at 100,000 rows); this moves that read into
        the load. What is then held is the file as mapped (its projection included),
        the same as a fresh process opens.
        """
        if self.vector_files is None:
            return  # `:memory:`: the first search reads the scope from the database
        params = {"after": after, "least": PREPARED_MIN, "limit": VECTOR_CACHE_SCOPES}
        scopes = [Scope(r[0], r[1]) for r in self._rows(q.FILLED_SCOPES, params)]
        for scope in scopes:
            self._scope_vectors(scope)
        self.sync_vector_files()
        for scope in scopes:  # next time the file is mapped, not the float32 copy kept
            self._vec_cache.pop((scope.tenant, scope.actor, "records"), None)

    def _drop_moved(self) -> None:
        """Drop the scopes held in memory whose version moved on since they were read."""
        for cache_key, held in list(self._vec_cache.items()):
            if held.version != self._version(Scope(cache_key[0], cache_key[1])):
                self._vec_cache.pop(cache_key, None)

    def holds_vectors(self, tenant: str, actor: str) -> frozenset[str]:
        """The ids of the records and events whose vectors this process holds for a scope."""
        ids: set[str] = set()
        for kind in ("records", "events"):
            held = self._vec_cache.get((tenant, actor, kind))
            if held is not None and held.vectors is not None:
                for i in (*held.vectors.ids, *held.vectors.tail_ids):
                    ids.add(i.decode() if isinstance(i, bytes) else str(i))
        return frozenset(ids)

    def sync_vector_files(self) -> None:
        """Wait until the vector files being written (after a load from the database) are."""
        with self._writers_lock:
            writers, self._writers = self._writers, []
        for writer in writers:
            writer.join()
        coarse.settle()  # and the scopes' own sessions being made from their codes

    def _drop_scope_vectors(self, tenant: str, actor: str) -> None:
        """After an erasure: delete the scope's files, and catch up what this process holds.

        The catch-up copies the held vectors without the forgotten rows (and
        writes the copy as a new base), so no forgotten vector stays in memory.
        """
        self.sync_vector_files()
        with self._lock:
            self._records.clear()  # no decoded copy of an erased record stays in memory
            self._shares.clear()
        if self.vector_files is not None:
            self.vector_files.remove_scope(tenant, actor)
        for kind in ("records", "events"):
            cached = self._vec_cache.get((tenant, actor, kind))
            if cached is not None and cached.vectors is not None:
                self._scope_vectors(Scope(tenant, actor), events=kind == "events")
            else:
                self._vec_cache.pop((tenant, actor, kind), None)

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        out: dict[str, npt.NDArray[np.float32]] = {}
        for sql, params in sqlite_lists(q.VECTORS_FOR, {"tenant": tenant, "model": model}, ids):
            for r in self._rows(sql, params):
                out[r["id"]] = np.frombuffer(r["vec"], dtype=np.float16).astype(np.float32)
        return out
