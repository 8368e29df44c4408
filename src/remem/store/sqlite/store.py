"""The embedded default: one SQLite file (WAL), FTS5 for words, vectors beside.

This module holds the connection, migrations, and what the flows written once
ask of SQLite (`remem.store.flows.backend.SQLFlows`: its transactions, how values
travel, FTS5 rows and vector rows). The flows come from mixins: reads by key
or scope (`remem.store.flows.lookups`), adding events (`remem.store.flows.events`),
writing a batch (`remem.store.flows.writes`), the job queue, request ledger
and model calls (`remem.store.flows.jobs`), API keys (`remem.store.flows.keys`)
and erasure (`remem.store.flows.erasure`, with SQLite's parts in
`remem.store.sqlite.erasure`); search and vectors are SQLite's own
(`remem.store.sqlite.search`), as is `events_near`.
Named queries live in `remem.store.sqlite.sql`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from remem.errors import SchemaTooNew, StoreCorrupt, StoreError
from remem.forksafe import ForkSafeLock, after_fork_in_child
from remem.model import Event, Record
from remem.store.errors import (
    SQLITE,
    SQLITE_OTHER,
    sqlite_meaning,
    sqlite_translated,
)
from remem.store.flows.actors import ActorIndex, ActorSQL, SQLiteActorSQL
from remem.store.flows.audit import AuditSQL, AuditTrail
from remem.store.flows.backend import CHUNK, ListBinder, Row, Tx, chunks, sqlite_lists
from remem.store.flows.backfill import BackfillSQL, VectorBackfill
from remem.store.flows.events import EventLog, EventSQL
from remem.store.flows.jobs import JobQueue, JobSQL
from remem.store.flows.keys import ApiKeys, KeySQL
from remem.store.flows.lookups import Lookups, LookupSQL
from remem.store.flows.vector_fit import VECTOR_FIT
from remem.store.flows.writes import Vector, WriteSQL
from remem.store.roles import Clock, Near, StatusChange, ThreadHost
from remem.store.rows import near_from
from remem.store.sqlite import audit_sql
from remem.store.sqlite import backfill_sql as backfill_q
from remem.store.sqlite import sql as q
from remem.store.sqlite.documents import SQLiteDocuments
from remem.store.sqlite.erasure import SQLiteErasure
from remem.store.sqlite.reindex import SQLiteReindex
from remem.store.sqlite.search import HeldVectors, SQLiteSearch
from remem.store.sqlite.sql import fts_query as fts_query  # re-exported
from remem.store.sqlite.sql import scope_token as scope_token
from remem.store.sqlite.sql import scoped_text
from remem.store.sqlite.vectors.files import VectorFiles
from remem.store.text import read_migrations, split_sql
from remem.timeutil import from_db, to_db, utcnow

log = logging.getLogger(__name__)

APPLICATION_ID = 0x72656D6D  # "remm": marks a file as a remem database


def _migrations() -> list[tuple[int, str]]:
    return read_migrations("sqlite/migrations")


SCHEMA_VERSION = 12  # the newest migration this code knows; checked by a test


BUSY_TIMEOUT_MS = 30_000  # how long a statement waits for another connection's lock


# This process's write transactions on one file queue, first come first served, before
# SQLite's own lock: SQLite's busy handler polls with sleeps, so of eight threads writing
# one file with a 0.5 s busy timeout four or five failed within a second, starved by the
# others' commits. Only writers in other processes now meet that wait.
class _Turns:
    """A reentrant lock handed to its waiters in the order they came (Python's own locks
    let the thread that releases take them straight back)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._queue: deque[tuple[int, threading.Lock]] = deque()
        self._in_transaction = False  # the owner's SQLite transaction is open
        self._forked_mid_write = False
        _EVERY_TURNS.add(self)

    def _after_fork(self) -> None:
        """In a forked child only the forking thread lives on: a turn another thread held
        or waited for would never be released (the child's every write on the file
        waited out its busy timeout and failed), and a guard held mid-acquire would
        never be free. When that thread's SQLite transaction was open, SQLite's lock
        (which it keeps in the process's memory) is inherited held, for good: the
        child's writes on that file are then refused at once, saying why."""
        self._guard = threading.Lock()
        self._queue.clear()
        if self._owner not in (None, threading.get_ident()):  # the forking thread's stays
            self._forked_mid_write = self._in_transaction
            self._owner, self._depth, self._in_transaction = None, 0, False

    def acquire(self, timeout: float) -> bool:
        """Take a turn, waiting up to `timeout` seconds (0: not at all); False if none came."""
        if self._forked_mid_write:
            raise StoreError(
                "this process was forked while another thread of its parent was writing "
                "this SQLite file, and SQLite's lock on the file stays held in this child; "
                "nothing was stored: open the database in a process started with 'spawn' "
                "or 'forkserver', or fork before any thread writes"
            )
        me = threading.get_ident()
        with self._guard:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None and not self._queue:
                self._owner, self._depth = me, 1
                return True
            if timeout <= 0:
                return False
            bell = threading.Lock()
            bell.acquire()
            self._queue.append((me, bell))
        if bell.acquire(timeout=timeout):
            return True  # `release` made this thread the owner before ringing
        with self._guard:
            if self._owner == me:  # handed over just as the wait ended
                return True
            self._queue.remove((me, bell))
            return False

    def began(self, is_open: bool) -> None:
        """Say that the owner's SQLite transaction is open (True) or over (False)."""
        self._in_transaction = is_open

    def release(self) -> None:
        """End this thread's turn, or one level of it; the next waiter owns it at once."""
        with self._guard:
            self._depth -= 1
            if self._depth:
                return
            self._owner, self._in_transaction = None, False
            if self._queue:
                self._owner, bell = self._queue.popleft()
                self._depth = 1
                bell.release()


_FILE_WRITERS: dict[str, _Turns] = {}
_FILE_WRITERS_GUARD = ForkSafeLock()
_EVERY_TURNS: weakref.WeakSet[_Turns] = weakref.WeakSet()


def _turns_after_fork() -> None:
    for turns in list(_EVERY_TURNS):
        turns._after_fork()


after_fork_in_child(_turns_after_fork)


def _file_writer(path: str) -> _Turns:
    """The turns this process's connections to the file at `path` take for a write."""
    key = os.path.realpath(path)
    with _FILE_WRITERS_GUARD:
        return _FILE_WRITERS.setdefault(key, _Turns())


MMAP_BYTES = 1 << 30  # how much of the file reads map (SQLite's own cap is 2 GB)

RECORDS_HELD = 10_000  # decoded records kept by `get_records` (the oldest dropped first)


class SQLiteStore(
    SQLiteErasure,
    SQLiteSearch,
    Lookups,
    EventLog,
    VectorBackfill,
    JobQueue,
    ApiKeys,
    ActorIndex,
    AuditTrail,
):
    """`Store` on one SQLite file. Safe to share between threads of one process."""

    # the named statements of the flows written once (`remem.store.flows.backend`)
    events_sql: ClassVar[EventSQL] = q
    write_sql: ClassVar[WriteSQL] = q
    backfill_sql: ClassVar[BackfillSQL] = backfill_q
    jobs_sql: ClassVar[JobSQL] = q
    lookup_sql: ClassVar[LookupSQL] = q
    keys_sql: ClassVar[KeySQL] = q
    audit_sql: ClassVar[AuditSQL] = audit_sql
    vector_fit_sql: ClassVar[tuple[str, ...]] = (VECTOR_FIT,)
    actor_sql: ClassVar[type[ActorSQL]] = SQLiteActorSQL

    # SQLite has no row-level security: the tenant wall is remem's scoped queries alone
    # (one file, one process's trust), so there is none to bypass and nothing to warn of.
    row_security = False
    rls_bypassed = False

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

    @property
    def documents(self) -> SQLiteDocuments:
        """Documents in this file (`Store.documents`, `remem.store.sqlite.documents`)."""
        return SQLiteDocuments(self)

    @property
    def reindexing(self) -> SQLiteReindex:
        """Re-embedding with another embedder (`Store.reindexing`, `remem.store.sqlite.reindex`)."""
        return SQLiteReindex(self)

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = BUSY_TIMEOUT_MS / 1000,
        clock: Clock | None = None,
        migrate: bool = True,
    ) -> None:
        """Open (creating and migrating) the database at `path`; `busy_timeout` is how many
        seconds a write waits for its turn among this process's writers of the file, and then
        for another process's write lock, before it fails with `StoreUnavailable`; `clock`
        stamps what the store writes (default: UTC now). `migrate=False` applies nothing
        (a newer file is still refused): `remem migrate --plan` reads what is pending."""
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
        # `:memory:` is a database of this connection alone
        self._writer = _Turns() if self.path == ":memory:" else _file_writer(self.path)
        self._vec_cache: dict[tuple[str, str, str], HeldVectors] = {}
        # None for `:memory:` or a folder this process cannot write: vectors are then
        # read from the database once per process (the in-memory path)
        self.vector_files: VectorFiles | None = None
        self._writers: list[threading.Thread] = []
        self._writers_lock = threading.Lock()
        # decoded records while the file is unchanged (`get_records`), and that state
        self._records: dict[tuple[str, str], Record] = {}
        self._records_seen: tuple[int, int] = (-1, -1)
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
            # reads map the file instead of copying each page through SQLite's 2 MB cache:
            # BM25 over a 100,000-record scope took 1.45 ms CPU, 1.0 mapped
            self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self._migrate(apply=migrate)
            self.vector_files = VectorFiles.beside(self.path) if migrate else None
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

    def _migrate(self, *, apply: bool = True) -> None:
        with self._lock:  # one consistent snapshot of the header and the schema
            self._db.execute("BEGIN")
            try:
                version = self._check_schema()
            finally:
                self._db.execute("COMMIT")
        if version == SCHEMA_VERSION or not apply:
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

    @property
    def schema_known(self) -> int:
        """The newest migration this code knows."""
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        """The newest migration applied to this file."""
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

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
        with self._lock, sqlite_translated():
            if not self._writer.acquire(timeout=self._busy_ms / 1000):
                raise SQLITE["SQLITE_BUSY"].raise_as()
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._writer.began(True)  # a fork now leaves SQLite's lock held in the child
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                else:
                    self._db.execute("COMMIT")
            finally:
                self._writer.release()

    def _rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        with self._lock, sqlite_translated():
            return list(self._db.execute(sql, params).fetchall())

    def close(self) -> None:
        """Close the connection (once vector files being written are); no use afterwards."""
        self.sync_vector_files()
        with self._lock:
            self._db.close()

    # -- what the flows written once ask of SQLite (`remem.store.flows.backend.SQLFlows`) ---------
    # One file is one trust domain: a transaction is the file's write lock whatever the
    # tenant (the SQL names it); times are sortable UTC text, lists and objects JSON text.

    def _flow_tx(self, tenant: str | None) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx()

    @contextmanager
    def _read_tx(self, tenant: str | None) -> Iterator[sqlite3.Connection]:
        with self._lock, sqlite_translated():
            yield self._db

    def _read(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
        return self._rows(sql, params)

    def _write(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
        with self._tx() as db:
            return list(db.execute(sql, params).fetchall())

    def _each(self, db: Tx, sql: str, rows: Sequence[Mapping[str, Any]]) -> list[Row | None]:
        out: list[Row | None] = []
        for params in rows:
            returned = db.execute(sql, params).fetchall()
            out.append(returned[0] if returned else None)
        return out

    def _at(self, t: datetime | None) -> str | None:
        return to_db(t)

    def _time(self, value: Any) -> datetime:
        return from_db(value)

    def _json_param(self, value: Any) -> str:
        return json.dumps(value)

    def _json_value(self, value: Any) -> Any:
        return json.loads(value)

    def _list_param(self, items: Sequence[str]) -> str:
        return json.dumps(list(items))

    def _list_value(self, value: Any) -> list[str]:
        return list(json.loads(value))

    def _index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        db.executemany(q.INSERT_EVENT_FTS, [_fts_row(key, e.tenant, e.actor, e.text)
                                            for key, e in added])  # fmt: skip

    def _index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        db.executemany(q.INSERT_RECORD_FTS, [_fts_row(key, r.tenant, r.actor, r.text)
                                             for key, r in added])  # fmt: skip

    def _store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        db.executemany(q.INSERT_VECTOR, [
            {"key": key, "id": rec.id, "tenant": rec.tenant, "actor": rec.actor,
             "model": model, "status": rec.status.value,
             "valid_from": rec.valid_from.timestamp(),
             "valid_until": rec.valid_until.timestamp() if rec.valid_until else None,
             "vec": np.asarray(vec, np.float16).tobytes()}
            for key, rec, vec in vectors
        ])  # fmt: skip

    def _vector_closed(self, db: Tx, key: Any, change: StatusChange) -> None:
        until = change.valid_until.timestamp() if change.valid_until else None
        db.execute(q.CLOSE_VECTOR, {"status": change.status.value, "valid_until": until,
                                    "key": key})  # fmt: skip

    def _scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        db.execute(q.BUMP_SCOPE, {"tenant": tenant, "actor": actor})

    # -- what is SQLite's own -------------------------------------------------

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        found: Near = {}
        if not events or reach <= 0:
            return found
        tenant = events[0].tenant
        for chunk in chunks([e.id for e in events], 50):  # one UNION part per event and side
            ((sql, bound),) = self._lists(q.EVENT_PLACES, {"tenant": tenant}, chunk)
            places = self._rows(sql, bound)
            if not places:
                continue
            params = q.events_near_params(tenant, reach, places)
            found |= near_from(self._rows(q.events_near(len(places)), params), self._event)
        return found

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out), in the order
        the statement gives them (by id within each chunk of `CHUNK` ids).

        A recall fetches the same candidates again and again (2-3 ms of decoding a
        recall at 100,000 records), so decoded records are kept while the file is
        unchanged: no change on this connection (`total_changes`) and no commit by
        another (`PRAGMA data_version`). Inside a transaction they are read afresh,
        and an erasure drops them all (`_drop_scope_vectors`).
        """
        with self._lock:
            if self._db.in_transaction:
                return super().get_records(tenant, ids)
            seen = (self._db.total_changes, int(self._db.execute(q.DATA_VERSION).fetchone()[0]))
            if seen != self._records_seen:
                self._records.clear()
                self._records_seen = seen
            held = self._records
            missing = [i for i in dict.fromkeys(ids) if (tenant, i) not in held]
            for rec in super().get_records(tenant, missing) if missing else ():
                held[(tenant, rec.id)] = rec
            out = [
                held[(tenant, i)]
                for part in chunks(ids, CHUNK)
                for i in sorted({i for i in part if (tenant, i) in held})
            ]
            while len(held) > RECORDS_HELD:
                held.pop(next(iter(held)))
            return out

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer (vectors are searched in memory, FTS5 is kept as rows come);
        when the load is done, the scopes it filled are made ready to search
        (`SQLiteSearch.prepare_scopes`), so the next search, in this process or a
        fresh one, does not read their vectors through SQLite."""
        after = int(self._rows(q.NEWEST_RECORD_VECTOR)[0][0])
        yield
        self.prepare_scopes(after)

    def stats(self) -> dict[str, int]:
        """Row counts, for `remem bench` and diagnostics."""
        return {name: int(self._rows(sql)[0][0]) for name, sql in q.STATS.items()}


# -- helpers ----------------------------------------------------------------------


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


def _fts_row(key: Any, tenant: str, actor: str, text: str) -> dict[str, Any]:
    """An FTS5 row of one event or record: every word prefixed by its scope's token."""
    token = scope_token(tenant, actor)
    return {"key": key, "text": scoped_text(token, text), "scope": token}
