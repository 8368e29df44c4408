"""The embedded default: one SQLite file (WAL), FTS5 for words, vectors beside.

This Python's sqlite3 cannot load extensions, so vectors are stored as float16
blobs (half the bytes to read when a scope loads; cosines change by about
1e-3) and searched in memory with numpy, one scope at a time: the matrix of a
(tenant, actor) is loaded once and reloaded only when that scope's version
changes (see `scope_versions` and `remem.store.vectors`). A scope's vectors
are also kept in a memory-mapped file beside the database
(`remem.store.vector_files`), so a fresh process opens them in milliseconds
instead of reading them through SQLite. Named queries live in
`remem.store.sqlite_sql`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from remem.errors import SchemaTooNew, StoreCorrupt, StoreError
from remem.model import (
    Event,
    HistoryEntry,
    Record,
    Status,
)
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store import sqlite_sql as q
from remem.store.backend import ListBinder, Tx, sqlite_lists
from remem.store.base import (
    Clock,
    ForgetReport,
    Hit,
    Near,
    Scope,
    ThreadHost,
    Write,
    refuse_foreign_records,
)
from remem.store.erasure import ErasureSQL, Found, RecordErasure
from remem.store.errors import NOT_UNICODE, SQLITE_OTHER, from_sqlite, sqlite_meaning
from remem.store.rows import event_from, near_from, record_from
from remem.store.sqlite_jobs import SQLiteJobs
from remem.store.sqlite_keys import SQLiteKeys
from remem.store.text import WORD, read_migrations, split_sql, words
from remem.store.vector_files import Stamp, VectorFiles
from remem.store.vectors import ScopeVectors
from remem.timeutil import from_db, to_db, utcnow

log = logging.getLogger(__name__)

log = logging.getLogger(__name__)

APPLICATION_ID = 0x72656D6D  # "remm": marks a file as a remem database


def _migrations() -> list[tuple[int, str]]:
    return read_migrations("sqlite_migrations")


SCHEMA_VERSION = 6  # the newest migration this code knows; checked by a test


def scope_token(tenant: str, actor: str) -> str:
    """The full-text token that names one (tenant, actor) scope (22 characters)."""
    digest = hashlib.blake2b(f"{tenant}\x00{actor}".encode(), digest_size=10).hexdigest()
    return f"zs{digest}"


def scoped_text(token: str, text: str) -> str:
    """Text as the full-text index holds it: every word prefixed by the scope token."""
    return " ".join(token + w for w in WORD.findall(text.lower()))


def fts_query(token: str, text: str) -> str | None:
    """A safe FTS5 OR-query of the content words of `text` inside one scope, or None."""
    found = words(text)
    if not found:
        return None
    return " OR ".join(f'"{token}{w}"' for w in found)


LEXICAL_WINDOW = 1000  # BM25 ranks at most this many of the newest matches
VECTOR_CACHE_SCOPES = 16  # scopes whose vectors stay in memory (oldest dropped first)
POOL_FOR_PREFIX = 500  # nearest rows fetched when a namespace prefix narrows the scope
BUSY_TIMEOUT_MS = 30_000  # how long a statement waits for another connection's lock
CHECKPOINT_WAIT_MS = 3_000  # how long an erasure's checkpoint waits for other readers


class SQLiteStore(RecordErasure, SQLiteJobs, SQLiteKeys):
    """`Store` on one SQLite file. Safe to share between threads of one process."""

    # SQLite has no row-level security: the tenant wall is remem's scoped queries alone
    # (one file, one process's trust), so there is none to bypass and nothing to warn of.
    row_security = False
    rls_bypassed = False
    erasure_sql: ClassVar[ErasureSQL] = q

    def warnings(self) -> list[str]:
        """Nothing to warn of (`Store.warnings`)."""
        return []

    @property
    def thread(self) -> ThreadHost:
        """Thread state in this file (`Store.thread`): one file is one trust domain, so a
        transaction is the file's write lock whatever the tenant (the SQL names it)."""
        return ThreadHost(
            dialect="sqlite",
            tx=lambda tenant: self._tx(),
            rows=lambda tenant, sql, params: self._rows(sql, params),
            at=to_db,  # times are kept as sortable UTC text
            clock=self._clock,
            path=self.path,
        )

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = BUSY_TIMEOUT_MS / 1000,
        clock: Clock | None = None,
    ) -> None:
        """Open (creating and migrating) the database at `path`; `busy_timeout` is how many
        seconds a write waits for another connection's write lock before it fails with
        `StoreUnavailable`; `clock` stamps what the store writes (default: UTC now)."""
        self.path = str(path)
        self._clock: Clock = clock or utcnow
        self._lists: ListBinder = sqlite_lists
        self._busy_ms = max(0, round(busy_timeout * 1000))
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(
                    f"directory {parent} does not exist; create it or choose another --db path"
                )
        self._lock = threading.RLock()
        self._vec_cache: dict[tuple[str, str, str], tuple[int, ScopeVectors | None]] = {}
        # None for `:memory:` or a folder this process cannot write: vectors are then
        # read from the database once per process (the in-memory path)
        self.vector_files: VectorFiles | None = None
        self._writers: list[threading.Thread] = []
        self._writers_lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
            )
            self._db.row_factory = sqlite3.Row
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            _set_wal(self._db)
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
            # deleted rows and freed pages are overwritten with zeros, so an erasure
            # leaves no copy in the file's free space (see `scrub_files`)
            self._db.execute("PRAGMA secure_delete = ON")
            self._migrate()
            self.vector_files = VectorFiles.beside(self.path)
        except (sqlite3.DatabaseError, StoreError) as exc:
            if isinstance(exc, StoreError) and not isinstance(exc.__cause__, sqlite3.Error):
                raise  # e.g. SchemaTooNew
            driver = exc if isinstance(exc, sqlite3.Error) else exc.__cause__
            assert isinstance(driver, sqlite3.Error)
            meaning = sqlite_meaning(driver)
            if meaning is not SQLITE_OTHER and not issubclass(meaning.error, StoreCorrupt):
                # the operator opens it: the path may be named
                raise meaning.error(f"{self.path}: {meaning.message}") from exc
            raise StoreCorrupt(
                f"{self.path} is not a readable remem database ({exc}); "
                "point --db at another file or restore a backup"
            ) from exc

    # -- plumbing -----------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:  # one consistent snapshot of the header and the schema
            self._db.execute("BEGIN")
            try:
                version = self._check_schema()
            finally:
                self._db.execute("COMMIT")
        if version == SCHEMA_VERSION:
            return
        with self._tx():
            # another process may have migrated while we waited for the write lock
            version = self._check_schema()
            for number, sql in _migrations():
                if number > version:
                    for statement in split_sql(sql):
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number}")
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _check_schema(self) -> int:
        """The file's schema version; refuse foreign and newer files."""
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables > 0):
            raise StoreCorrupt(
                f"{self.path} is an SQLite file but not a remem database; "
                "point --db at a new or remem file"
            )
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} was written by a newer remem (schema {version}, this remem "
                f"knows up to {SCHEMA_VERSION}); upgrade remem to open it"
            )
        return version

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once so writers queue instead of failing."""
        with self._lock, _translated():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock, _translated():
            return list(self._db.execute(sql, params).fetchall())

    def close(self) -> None:
        """Close the connection (once vector files being written are); no use afterwards."""
        self.sync_vector_files()
        with self._lock:
            self._db.close()

    # -- events and the outbox ------------------------------------------------

    def add_events(self, events: Sequence[Event], strategies: Sequence[str]) -> list[bool]:
        """Append events with their jobs in one transaction; see `Store.add_events`."""
        now = to_db(self._clock())
        added: list[bool] = []
        with self._tx() as db:
            new = self._classify(db, events)
            for e, is_new in zip(events, new, strict=True):
                if not is_new:
                    added.append(False)
                    continue
                cur = db.execute(
                    q.INSERT_EVENT,
                    (
                        e.tenant,
                        e.id,
                        e.actor,
                        e.session,
                        e.role.value,
                        e.text,
                        to_db(e.time),
                        json.dumps(e.metadata),
                        now,
                    ),
                )
                if cur.rowcount == 0:  # cannot happen under the write lock; never index twice
                    added.append(False)
                    continue
                added.append(True)
                token = scope_token(e.tenant, e.actor)
                db.execute(q.INSERT_EVENT_FTS, (cur.lastrowid, scoped_text(token, e.text), token))
                for strategy in strategies:
                    db.execute(q.INSERT_JOB, (e.tenant, e.id, strategy, now, now))
        return added

    @staticmethod
    def _classify(db: sqlite3.Connection, events: Sequence[Event]) -> list[bool]:
        """Per event, whether it is new; raises `EventIdTaken` (see `remem.policy.events`)."""
        flags: dict[int, bool] = {}
        by_tenant: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_tenant.setdefault(e.tenant, []).append(i)
        for tenant, indexes in by_tenant.items():
            ids = list(dict.fromkeys(events[i].id for i in indexes))
            stored: dict[str, Identity] = {}
            for chunk in _chunks(ids, 500):
                marks = ",".join("?" * len(chunk))
                for r in db.execute(q.EVENT_IDENTITIES.format(marks=marks), (tenant, *chunk)):
                    stored[r["id"]] = Identity(r["actor"], r["session"], r["role"], r["text"])
            try:
                mine = classify([events[i] for i in indexes], stored)
            except EventIdTaken as exc:
                raise EventIdTaken(exc.event_id, indexes[exc.index]) from None
            flags.update(zip(indexes, mine, strict=True))
        return [flags[i] for i in range(len(events))]

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]:
        """Events of one actor (optionally one session), oldest first by their own time."""
        if session is None:
            rows = self._rows(q.LIST_EVENTS_ACTOR, (tenant, actor, limit))
        else:
            rows = self._rows(q.LIST_EVENTS_SESSION, (tenant, actor, session, limit))
        return [_event(r) for r in rows]

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]:
        """The events with these client ids, in arrival order."""
        out: list[Event] = []
        for chunk in _chunks(list(event_ids), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                _event(r) for r in self._rows(q.GET_EVENTS.format(marks=marks), (tenant, *chunk))
            )
        return out

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of `event`'s session before it, oldest first."""
        rows = self._rows(
            q.SESSION_CONTEXT, (event.tenant, event.actor, event.session, to_db(event.time), limit)
        )
        return [_event(r) for r in reversed(rows)]

    # -- records --------------------------------------------------------------

    def apply(self, write: Write) -> None:
        """Apply one consolidation step atomically; see `Write`."""
        refuse_foreign_records(write)
        touched: set[tuple[str, str]] = set()
        with self._tx() as db:
            if _from_erased_work(db, write):
                log.info("a write from work on erased events was dropped")
                return
            for i, rec in enumerate(write.inserts):
                cur = db.execute(q.INSERT_RECORD, _record_params(rec))
                rowid = cur.lastrowid
                token = scope_token(rec.tenant, rec.actor)
                db.execute(q.INSERT_RECORD_FTS, (rowid, scoped_text(token, rec.text), token))
                for event_id in rec.source.event_ids:
                    db.execute(q.INSERT_RECORD_EVENT, (rec.tenant, event_id, rec.id))
                vec = write.vectors[i] if i < len(write.vectors) else None
                if vec is not None:
                    db.execute(
                        q.INSERT_VECTOR,
                        (
                            rowid,
                            rec.id,
                            rec.tenant,
                            rec.actor,
                            write.vector_model,
                            rec.status.value,
                            rec.valid_from.timestamp(),
                            rec.valid_until.timestamp() if rec.valid_until else None,
                            np.asarray(vec, np.float16).tobytes(),
                        ),
                    )
                touched.add((rec.tenant, rec.actor))
            for ch in write.changes:
                row = db.execute(q.RECORD_SCOPE, (write.tenant, ch.record_id)).fetchone()
                if row is None:
                    raise StoreError(f"record {ch.record_id} vanished during consolidation")
                db.execute(
                    q.CLOSE_RECORD,
                    (
                        ch.status.value,
                        to_db(ch.valid_until),
                        ch.superseded_by,
                        to_db(self._clock()),
                        write.tenant,
                        ch.record_id,
                    ),
                )
                db.execute(
                    q.CLOSE_VECTOR,
                    (
                        ch.status.value,
                        ch.valid_until.timestamp() if ch.valid_until else None,
                        row[2],
                    ),
                )
                touched.add((row[0], row[1]))
            for h in write.history:
                db.execute(
                    q.INSERT_HISTORY,
                    (
                        write.tenant,
                        h.record_id,
                        h.action,
                        to_db(h.at),
                        h.text,
                        h.status.value,
                        h.related_id,
                        h.reason,
                        h.by,
                    ),
                )
            for job_id in write.done_jobs:
                db.execute(q.DONE_JOB, (to_db(self._clock()), write.tenant, job_id))
            for tenant, actor in touched:
                db.execute(q.BUMP_SCOPE, (tenant, actor))

    def get_record(self, tenant: str, record_id: str) -> Record | None:
        """One record of this tenant, or None."""
        rows = self._rows(q.GET_RECORD, (tenant, record_id))
        return _record(rows[0]) if rows else None

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out)."""
        out: list[Record] = []
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            out.extend(
                _record(r) for r in self._rows(q.GET_RECORDS.format(marks=marks), (tenant, *chunk))
            )
        return out

    def list_records(
        self, scope: Scope, statuses: Iterable[Status] | None = None, limit: int = 10_000
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only."""
        wanted = [s.value for s in (statuses or [Status.ACTIVE, Status.INVALID, Status.PROPOSED])]
        marks = ",".join("?" * len(wanted))
        sql, params = q.list_records(scope, marks)
        return [_record(r) for r in self._rows(sql, (*params, *wanted, limit))]

    def records_by_field(self, scope: Scope, field: str) -> list[Record]:
        """Active and invalid records of one scope about `field`, newest first."""
        return [_record(r) for r in self._rows(q.BY_FIELD, (scope.tenant, scope.actor, field))]

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]:
        """The append-only history of one record, oldest first."""
        return [
            HistoryEntry(
                record_id=r["record_id"],
                action=r["action"],
                at=from_db(r["at"]),
                text=r["text"],
                status=Status(r["status"]),
                related_id=r["related_id"],
                reason=r["reason"],
                by=r["by_whom"],
            )
            for r in self._rows(q.HISTORY, (tenant, record_id))
        ]

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the status of each such record.

        Summaries are left out: a summary is an index over its events, not made
        from one of them, and its older versions must not mark the events old.
        """
        found: dict[str, list[str]] = {}
        for chunk in _chunks(list(event_ids), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._rows(q.RECORD_STATUS_BY_EVENT.format(marks=marks), (tenant, *chunk)):
                found.setdefault(r[0], []).append(r[1])
        return found

    def add_event_vectors(
        self, tenant: str, vectors: Sequence[tuple[Event, npt.NDArray[np.float32]]], model: str
    ) -> None:
        """Store the embeddings of some events (made by `model`)."""
        touched: set[tuple[str, str]] = set()
        with self._tx() as db:
            for event, vec in vectors:
                blob = np.asarray(vec, np.float16).tobytes()
                db.execute(
                    q.INSERT_EVENT_VECTOR, (model, event.time.timestamp(), blob, tenant, event.id)
                )
                touched.add((tenant, event.actor))
            for key in touched:
                db.execute(q.BUMP_SCOPE, key)

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

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        found: Near = {}
        if not events or reach <= 0:
            return found
        tenant = events[0].tenant
        for chunk in _chunks([e.id for e in events], 50):
            places = self._rows(q.EVENT_PLACES.format(marks=",".join("?" * len(chunk))),
                                (tenant, *chunk))  # fmt: skip
            if not places:
                continue
            params: list[Any] = []
            for r in places:
                at = (tenant, r["actor"], r["session"], r["time"], r["time"], r["seq"], reach)
                params += [r["id"], *at, r["id"], *at]
            found |= near_from(self._rows(q.events_near(len(places)), params), _event)
        return found

    # -- search ------------------------------------------------------------------

    def search_records(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """BM25 over one scope's non-deleted records; the caller masks status."""
        sql, params = q.search_records(scope)
        return self._search("records_fts", scope, query, sql, params, limit)

    def search_events(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """BM25 over one actor's raw events (short-term memory)."""
        params = [scope.tenant, scope.actor]
        return self._search("events_fts", scope, query, q.SEARCH_EVENTS, params, limit)

    def _search(
        self, table: str, scope: Scope, query: str, sql: str, params: list[Any], limit: int
    ) -> list[Hit]:
        match = fts_query(scope_token(scope.tenant, scope.actor), query)
        if match is None:
            return []
        floor_rows = self._rows(q.FTS_FLOOR.format(table=table), (match, LEXICAL_WINDOW - 1))
        floor = int(floor_rows[0][0]) if floor_rows else 0
        rows = self._rows(sql, (match, floor, *params, limit))
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
            query,
            POOL_FOR_PREFIX if scope.namespace_prefix else limit,
            at.timestamp(),
            include_invalid,
        )
        if scope.namespace_prefix:
            allowed = {
                r.id
                for r in self.get_records(scope.tenant, [h[0] for h in hits])
                if r.namespace.startswith(scope.namespace_prefix)
            }
            hits = [h for h in hits if h[0] in allowed][:limit]
        return hits

    def _scope_vectors(self, scope: Scope, events: bool = False) -> ScopeVectors | None:
        """One scope's record (or event) vectors, reloaded when the scope changed.

        In order: this process's cache, the scope's vector file when its stamp
        matches the database, else the database (and the file is rewritten).
        """
        key = (scope.tenant, scope.actor)
        kind = "events" if events else "records"
        rows = self._rows(q.SCOPE_VERSION, key)
        version = int(rows[0][0]) if rows else 0
        cache_key = (scope.tenant, scope.actor, kind)
        cached = self._vec_cache.get(cache_key)
        if cached is not None and cached[0] == version:
            return cached[1]
        files = self.vector_files
        with self._lock, _translated():
            own = not self._db.in_transaction
            if own:
                self._db.execute("BEGIN")  # the stamp and the rows from one snapshot
            try:
                rows = self._rows(q.SCOPE_VERSION, key)
                version = int(rows[0][0]) if rows else 0
                last = self._rows(q.SCOPE_EVENT_LAST if events else q.SCOPE_VECTOR_LAST, key)
                stamp = Stamp(version, str(last[0][0]) if last else "")
                vectors = files.open(*key, kind, stamp) if files and last else None
                fresh = vectors is None
                if fresh:
                    load = self._load_event_vectors if events else self._load_record_vectors
                    vectors = load(key)
            finally:
                if own:
                    self._db.execute("COMMIT")
        if fresh and files is not None and vectors is not None:
            # written beside this recall, not before it answers: a projection and
            # 100 MB of file cost about as much again as the load (`sync_vector_files`)
            writer = threading.Thread(
                target=self._write_scope, args=(files, key, kind, stamp, rows, vectors),
                name="remem-vector-file",
            )  # fmt: skip
            with self._writers_lock:
                self._writers = [w for w in self._writers if w.is_alive()] + [writer]
            writer.start()
        if len(self._vec_cache) >= VECTOR_CACHE_SCOPES:
            self._vec_cache.pop(next(iter(self._vec_cache)))
        self._vec_cache[cache_key] = (version, vectors)
        return vectors

    def _write_scope(
        self, files: VectorFiles, key: tuple[str, str], kind: str, stamp: Stamp,
        rows: list[sqlite3.Row], vectors: ScopeVectors,
    ) -> None:  # fmt: skip
        files.write(*key, kind, stamp, vectors)
        try:
            changed = [tuple(r) for r in self._rows(q.SCOPE_VERSION, key)] != [
                tuple(r) for r in rows
            ]
        except (StoreError, sqlite3.ProgrammingError):
            changed = True  # closed meanwhile: cannot tell
        if changed:  # not trusted anyway, and it may hold what a forget just erased
            files.remove_scope(*key)

    def sync_vector_files(self) -> None:
        """Wait until the vector files being written (after a load from the database) are."""
        with self._writers_lock:
            writers, self._writers = self._writers, []
        for writer in writers:
            writer.join()

    def _drop_scope_vectors(self, tenant: str, actor: str) -> None:
        """Forget a scope's vectors held outside the database: its files and this cache."""
        self.sync_vector_files()
        for kind in ("records", "events"):
            self._vec_cache.pop((tenant, actor, kind), None)
        if self.vector_files is not None:
            self.vector_files.remove_scope(tenant, actor)

    def _load_event_vectors(self, key: tuple[str, str]) -> ScopeVectors | None:
        rows = self._rows(q.SCOPE_EVENT_VECTORS, key)
        if not rows:
            return None
        model = rows[0]["model"]
        rows = [r for r in rows if r["model"] == model]
        matrix = np.frombuffer(b"".join(r["vec"] for r in rows), dtype=np.float16)
        return ScopeVectors(
            ids=tuple(r["id"] for r in rows),
            matrix=matrix.reshape(len(rows), -1).astype(np.float32),
            active=np.ones(len(rows), dtype=np.bool_),
            valid_from=np.array([r["time"] for r in rows], dtype=np.float64),
            valid_until=np.full(len(rows), math.inf),
            model=model,
        )

    def _load_record_vectors(self, key: tuple[str, str]) -> ScopeVectors | None:
        rows = self._rows(q.SCOPE_VECTORS, key)
        vectors: ScopeVectors | None = None
        if rows:
            model = rows[0]["model"]
            rows = [r for r in rows if r["model"] == model]
            matrix = np.frombuffer(b"".join(r["vec"] for r in rows), dtype=np.float16)
            vectors = ScopeVectors(
                ids=tuple(r["id"] for r in rows),
                matrix=matrix.reshape(len(rows), -1).astype(np.float32),
                active=np.array([r["status"] == "active" for r in rows], dtype=np.bool_),
                valid_from=np.array([r["valid_from"] for r in rows], dtype=np.float64),
                valid_until=np.array(
                    [math.inf if r["valid_until"] is None else r["valid_until"] for r in rows],
                    dtype=np.float64,
                ),
                model=model,
            )
        return vectors

    def record_vectors(
        self, tenant: str, ids: Sequence[str], model: str
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors (made by `model`) of some records."""
        out: dict[str, npt.NDArray[np.float32]] = {}
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._rows(q.VECTORS_FOR.format(marks=marks), (tenant, model, *chunk)):
                out[r["id"]] = np.frombuffer(r["vec"], dtype=np.float16).astype(np.float32)
        return out

    # -- deletion ------------------------------------------------------------------

    # `forget_record` and `record_deletion` are `RecordErasure`'s; these are its SQLite parts

    def _erasure_tx(self, tenant: str) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx()  # one file is one trust domain: the SQL names the tenant

    def _at(self, t: datetime) -> object:
        return to_db(t)

    def _json_param(self, value: dict[str, Any]) -> object:
        return json.dumps(value)

    def _erase_records(self, db: Tx, tenant: str, found: Sequence[Found]) -> dict[str, int]:
        assert isinstance(db, sqlite3.Connection)
        return _erase_record_rows(db, [f.key for f in found])

    def _erase_event_texts(self, db: Tx, tenant: str, event_ids: Sequence[str]) -> None:
        meta = json.dumps({"forgotten": True})
        for event_id in event_ids:
            seq = db.execute(q.EVENT_SEQ, (tenant, event_id)).fetchone()
            if seq is not None:
                db.execute(q.DELETE_EVENTS_FTS.format(marks="?"), (seq[0],))
                db.execute(q.DELETE_EVENT_VECTOR, (seq[0],))
                db.execute(q.ERASE_EVENT_TEXT, (meta, tenant, event_id))

    def _scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        db.execute(q.BUMP_SCOPE, (tenant, actor))

    def _verify_record(
        self, tenant: str, record_id: str, found: Found, sources: Sequence[str]
    ) -> dict[str, int]:
        self._drop_scope_vectors(tenant, found.actor)
        remaining = self._record_left(tenant, record_id, found.key, list(sources))
        if self.vector_files is not None:
            held = self.vector_files.holding(tenant, found.actor, {record_id, *sources})
            remaining["vector_files"] = held
        return remaining

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job and index entry of one actor; verify."""
        with self._tx() as db:
            rowids = [r[0] for r in db.execute(q.ACTOR_RECORD_ROWIDS, (tenant, actor))]
            ids = [r[0] for r in db.execute(q.ACTOR_RECORD_IDS, (tenant, actor))]
            counts = _erase_record_rows(db, rowids)
            for chunk in _chunks(ids, 500):
                marks = ",".join("?" * len(chunk))
                db.execute(q.ERASE_HISTORY_TEXT_MANY.format(marks=marks), (tenant, *chunk))
                db.execute(q.DELETE_RECORD_EVENTS_MANY.format(marks=marks), (tenant, *chunk))
            seqs = [r[0] for r in db.execute(q.ACTOR_EVENT_SEQS, (tenant, actor))]
            for chunk in _chunks(seqs, 500):
                marks = ",".join("?" * len(chunk))
                db.execute(q.DELETE_EVENTS_FTS.format(marks=marks), chunk)
            event_ids = [r[0] for r in db.execute(q.ACTOR_EVENT_IDS, (tenant, actor))]
            for chunk in _chunks(event_ids, 500):
                marks = ",".join("?" * len(chunk))
                db.execute(q.DELETE_JOBS_FOR.format(marks=marks), (tenant, *chunk))
            counts["event_vectors"] = db.execute(
                q.DELETE_EVENT_VECTORS_ACTOR, (tenant, actor)
            ).rowcount
            # the actor's tombstone covers every event it had (see `_covered`), so an id
            # reused after a fresh start is not blocked by a record-level tombstone
            db.execute(q.DELETE_EVENT_TOMBSTONES_OF, (tenant, tenant, actor))
            counts["events"] = db.execute(q.DELETE_ACTOR_EVENTS, (tenant, actor)).rowcount
            counts["requests"] = db.execute(q.DELETE_ACTOR_REQUESTS, (tenant, actor)).rowcount
            counts["checkpoints"] = db.execute(q.FORGET_CHECKPOINTS, (tenant, actor)).rowcount
            counts["tool_calls"] = db.execute(q.FORGET_TOOL_CALLS, (tenant, actor)).rowcount
            db.execute(q.ACTOR_TOMBSTONE, (tenant, actor, to_db(now)))
            db.execute(q.BUMP_SCOPE, (tenant, actor))
        self._drop_scope_vectors(tenant, actor)
        remaining = self._verify_actor(tenant, actor)
        if self.vector_files is not None:
            remaining["vector_files"] = self.vector_files.holding(tenant, actor)
        return ForgetReport(
            deleted=counts, verified=not any(remaining.values()), remaining=remaining
        )

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """Make finished erasures reach the file: merge the full-text indexes, empty the WAL.

        FTS5 keeps a deleted row's terms in its index segments until they are
        merged, so both indexes are merged into one segment each ('optimize');
        the pages that held the old segments are freed and, under
        `secure_delete`, zeroed. The WAL holds the pages as they were before
        the erasure until a checkpoint copies the new ones into the file and
        truncates it. A reader in another connection (another process) can
        hold the WAL open: the checkpoint waits up to `CHECKPOINT_WAIT_MS` for
        it, and what it could not copy is returned as `wal_frames` (0 when
        clean). `vacuum` is for PostgreSQL; SQLite needs no VACUUM for this.
        """
        with self._tx() as db:
            for table in ("records_fts", "events_fts"):
                db.execute(q.FTS_OPTIMIZE.format(table=table))
        if self.path == ":memory:":
            return {"wal_frames": 0}
        with self._lock, _translated():
            self._db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            try:
                busy, frames, copied = self._db.execute(q.WAL_TRUNCATE).fetchone()
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        return {"wal_frames": max(int(frames) - int(copied), 1) if busy else 0}

    def deletions(self, tenant: str, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first."""
        return [
            {
                "id": r["id"],
                "target": r["target"],
                "key": r["key"],
                "status": r["status"],
                "attempts": r["attempts"],
                "result": json.loads(r["result"]),
                "last_error": r["last_error"],
                "created_at": r["created_at"],
            }
            for r in self._rows(q.LIST_DELETIONS, (tenant, limit))
        ]

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether work from these events would recreate what was erased; see `Store`."""
        with self._lock, _translated():
            return _covered(self._db, tenant, actor, event_ids)

    def erased_at(self, tenant: str, actor: str) -> datetime | None:
        """When the actor was last erased, or None."""
        rows = self._rows(q.ACTOR_ERASED_AT, (tenant, actor))
        return from_db(rows[0][0]) if rows else None

    def _record_left(
        self, tenant: str, record_id: str, rowid: int, sources: list[str]
    ) -> dict[str, int]:
        marks = ",".join("?" * len(sources)) or "NULL"
        return {
            "event_texts": int(
                self._rows(q.EVENTS_WITH_TEXT.format(marks=marks), (tenant, *sources))[0][0]
            ),
            "event_vectors": int(
                self._rows(q.EVENT_VECTORS_FOR.format(marks=marks), (tenant, *sources))[0][0]
            ),
            "records": len(self._rows(q.GET_RECORD, (tenant, record_id))),
            "vectors": len(self._rows(q.VECTOR_BY_ROWID, (rowid,))),
            "fulltext": len(self._rows(q.FTS_BY_ROWID, (rowid,))),
            "history_text": len(self._rows(q.HISTORY_WITH_TEXT, (tenant, record_id))),
        }

    def _verify_actor(self, tenant: str, actor: str) -> dict[str, int]:
        token = scope_token(tenant, actor)
        return {
            "checkpoints": int(self._rows(q.COUNT_ACTOR_CHECKPOINTS, (tenant, actor))[0][0]),
            "tool_calls": int(self._rows(q.COUNT_ACTOR_TOOL_CALLS, (tenant, actor))[0][0]),
            "records": int(self._rows(q.COUNT_ACTOR_RECORDS, (tenant, actor))[0][0]),
            "vectors": int(self._rows(q.COUNT_ACTOR_VECTORS, (tenant, actor))[0][0]),
            "event_vectors": int(self._rows(q.COUNT_ACTOR_EVENT_VECTORS, (tenant, actor))[0][0]),
            "events": int(self._rows(q.COUNT_ACTOR_EVENTS, (tenant, actor))[0][0]),
            "fulltext": int(self._rows(q.COUNT_FTS_SCOPE, (f"scope:{token}",))[0][0])
            + int(self._rows(q.COUNT_EVENT_FTS_SCOPE, (f"scope:{token}",))[0][0]),
        }

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer: vectors are searched in memory, FTS5 is kept as rows come."""
        yield

    def stats(self) -> dict[str, int]:
        """Row counts, for `remem bench` and diagnostics."""
        return {name: int(self._rows(sql)[0][0]) for name, sql in q.STATS.items()}


# -- helpers ----------------------------------------------------------------------


def _covered(db: sqlite3.Connection, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
    """Whether a tombstone covers any of these events: it was a forgotten record's source,
    or the actor was erased and the event is gone, so it arrived before the erasure
    (an actor's erasure deletes every event it had; later ones are a fresh start)."""
    ids = sorted(set(event_ids))
    for chunk in _chunks(ids, 500):
        marks = ",".join("?" * len(chunk))
        if db.execute(q.EVENT_TOMBSTONED.format(marks=marks), (tenant, *chunk)).fetchone():
            return True
    if not ids or not db.execute(q.ACTOR_ERASED_AT, (tenant, actor)).fetchone():
        return False
    stored = 0
    for chunk in _chunks(ids, 500):
        marks = ",".join("?" * len(chunk))
        sql = q.COUNT_STORED_EVENTS.format(marks=marks)
        stored += int(db.execute(sql, (tenant, actor, *chunk)).fetchone()[0])
    return stored < len(ids)


def _from_erased_work(db: sqlite3.Connection, write: Write) -> bool:
    """Whether a consolidation step comes from work an erasure overtook: its jobs were
    deleted with their events, or a record it adds came from covered events."""
    for chunk in _chunks(list(set(write.done_jobs)), 500):
        marks = ",".join("?" * len(chunk))
        sql = q.COUNT_JOBS.format(marks=marks)
        found = int(db.execute(sql, (write.tenant, *chunk)).fetchone()[0])
        if found < len(chunk):
            return True
    return any(
        _covered(db, rec.tenant, rec.actor, rec.source.event_ids)
        for rec in write.inserts
        if rec.source.event_ids
    )


def _erase_record_rows(db: sqlite3.Connection, rowids: list[int]) -> dict[str, int]:
    counts = {"records": 0, "vectors": 0, "fulltext": 0}
    for chunk in _chunks(rowids, 500):
        marks = ",".join("?" * len(chunk))
        counts["vectors"] += db.execute(q.DELETE_VECTORS.format(marks=marks), chunk).rowcount
        counts["fulltext"] += db.execute(q.DELETE_RECORDS_FTS.format(marks=marks), chunk).rowcount
        counts["records"] += db.execute(q.DELETE_RECORDS.format(marks=marks), chunk).rowcount
    return counts


@contextmanager
def _translated() -> Iterator[None]:
    """Driver errors of an operation as remem's (`remem.store.errors`), which may reach an
    HTTP or MCP client: they say what happened, never the file's path or the driver's
    text (logged)."""
    try:
        yield
    except UnicodeEncodeError:
        raise NOT_UNICODE.raise_as() from None
    except sqlite3.Error as exc:
        log.warning("SQLite: %s: %s", type(exc).__name__, exc)
        raise from_sqlite(exc) from exc


def _set_wal(db: sqlite3.Connection) -> None:
    """Switch to WAL; a new file opened by several processes at once may be busy a moment."""
    for attempt in range(50):
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 49:
                raise
            time.sleep(0.02 * (attempt + 1))


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _event(r: Any) -> Event:
    return event_from(r, from_db, json.loads)


def _record(r: Any) -> Record:
    return record_from(r, from_db, json.loads)


def _record_params(rec: Record) -> tuple[Any, ...]:
    return (
        rec.id,
        rec.tenant,
        rec.actor,
        rec.namespace,
        rec.kind.value,
        rec.text,
        rec.field,
        rec.value,
        rec.source.type,
        json.dumps(list(rec.source.event_ids)),
        rec.source.strategy,
        rec.source.extractor,
        rec.authority.value,
        rec.sensitivity.value,
        to_db(rec.valid_from),
        to_db(rec.valid_until),
        to_db(rec.created_at),
        to_db(rec.updated_at),
        rec.status.value,
        rec.supersedes,
        rec.superseded_by,
        json.dumps(list(rec.flags)),
    )
