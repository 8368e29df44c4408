"""The embedded default: one SQLite file (WAL), FTS5 for words, vectors beside.

This module holds the connection, migrations, events and records; the rest of
`Store` comes from mixins, each in one sitting: search and vectors
(`remem.store.sqlite_search`), erasure (`remem.store.sqlite_erasure`, on the
flows of `remem.store.erasure`), jobs, the request ledger and model calls
(`remem.store.sqlite_jobs`) and API keys (`remem.store.sqlite_keys`). Named
queries live in `remem.store.sqlite_sql`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from remem.errors import SchemaTooNew, StoreCorrupt, StoreError
from remem.model import (
    Event,
    HistoryEntry,
    Record,
    Status,
)
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store import sqlite_sql as q
from remem.store.backend import ListBinder, chunks, sqlite_lists
from remem.store.base import (
    Clock,
    Near,
    Scope,
    SourceGrowth,
    ThreadHost,
    Write,
    new_sources,
    refuse_foreign_records,
)
from remem.store.errors import (
    SQLITE_OTHER,
    sqlite_meaning,
    sqlite_translated,
)
from remem.store.rows import event_from, near_from, record_from
from remem.store.sqlite_erasure import SQLiteErasure, _covered
from remem.store.sqlite_jobs import SQLiteJobs
from remem.store.sqlite_keys import SQLiteKeys
from remem.store.sqlite_search import HeldVectors, SQLiteSearch
from remem.store.sqlite_sql import fts_query as fts_query  # re-exported
from remem.store.sqlite_sql import scope_token as scope_token
from remem.store.sqlite_sql import scoped_text
from remem.store.text import read_migrations, split_sql
from remem.store.vector_files import VectorFiles
from remem.timeutil import from_db, to_db, utcnow

log = logging.getLogger(__name__)

APPLICATION_ID = 0x72656D6D  # "remm": marks a file as a remem database


def _migrations() -> list[tuple[int, str]]:
    return read_migrations("sqlite_migrations")


SCHEMA_VERSION = 6  # the newest migration this code knows; checked by a test


BUSY_TIMEOUT_MS = 30_000  # how long a statement waits for another connection's lock


class SQLiteStore(SQLiteErasure, SQLiteSearch, SQLiteJobs, SQLiteKeys):
    """`Store` on one SQLite file. Safe to share between threads of one process."""

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
        self._vec_cache: dict[tuple[str, str, str], HeldVectors] = {}
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
        with self._lock, sqlite_translated():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    def _rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        with self._lock, sqlite_translated():
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
            for chunk in chunks(ids, 500):
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
        for chunk in chunks(list(event_ids), 500):
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
            for g in write.sources:
                touched.add((write.tenant, _grow_sources(db, write.tenant, g, self._clock())))
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
        for chunk in chunks(list(ids), 500):
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
        for chunk in chunks(list(event_ids), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._rows(q.RECORD_STATUS_BY_EVENT.format(marks=marks), (tenant, *chunk)):
                found.setdefault(r[0], []).append(r[1])
        return found

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these, `reach` steps either way in its session."""
        found: Near = {}
        if not events or reach <= 0:
            return found
        tenant = events[0].tenant
        for chunk in chunks([e.id for e in events], 50):
            places = self._rows(q.EVENT_PLACES.format(marks=",".join("?" * len(chunk))),
                                (tenant, *chunk))  # fmt: skip
            if not places:
                continue
            params = q.events_near_params(tenant, reach, places)
            found |= near_from(self._rows(q.events_near(len(places)), params), _event)
        return found

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer: vectors are searched in memory, FTS5 is kept as rows come."""
        yield

    def stats(self) -> dict[str, int]:
        """Row counts, for `remem bench` and diagnostics."""
        return {name: int(self._rows(sql)[0][0]) for name, sql in q.STATS.items()}


# -- helpers ----------------------------------------------------------------------


def _from_erased_work(db: sqlite3.Connection, write: Write) -> bool:
    """Whether a consolidation step comes from work an erasure overtook: its jobs were
    deleted with their events, or a record it adds came from covered events."""
    for chunk in chunks(list(set(write.done_jobs)), 500):
        marks = ",".join("?" * len(chunk))
        sql = q.COUNT_JOBS.format(marks=marks)
        found = int(db.execute(sql, (write.tenant, *chunk)).fetchone()[0])
        if found < len(chunk):
            return True
    return any(
        _covered(db, rec.tenant, rec.actor, rec.source.event_ids)
        for rec in write.inserts
        if rec.source.event_ids
    ) or any(_covered(db, write.tenant, g.actor, g.event_ids) for g in write.sources)


def _grow_sources(db: sqlite3.Connection, tenant: str, g: SourceGrowth, now: datetime) -> str:
    """Join a restating statement's events to a stored record's source; return its actor."""
    row = db.execute(q.RECORD_SOURCES, (tenant, g.record_id)).fetchone()
    if row is None:
        raise StoreError(f"record {g.record_id} vanished during consolidation")
    stored = json.loads(row[1])
    added = new_sources(stored, g.event_ids)
    if added:
        joined = [*stored, *added]
        db.execute(q.GROW_SOURCES, (json.dumps(joined), to_db(now), tenant, g.record_id))
        for event_id in added:
            db.execute(q.INSERT_RECORD_EVENT, (tenant, event_id, g.record_id))
    return str(row[0])


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
