"""The embedded default: one SQLite file (WAL), FTS5 for words, vectors beside.

`SQLiteStore` is a composition root: it opens the file (`SQLiteBackend`, in
`remem.store.sqlite.backend`: the connection, its write turns, how values travel),
migrates it, and builds each role over that backend with SQLite's statements
(`remem.store.sqlite.sql`): `events`, `records`, `backfill`, `jobs`, `ledger`,
`model_calls`, `erasure` (with SQLite's parts, `remem.store.sqlite.erasure`),
`audit`, `keys` and `actors` are written once in `remem.store.flows`; what SQLite
keeps beside its rows (FTS5 and vector rows, scope versions, decoded records) is
`remem.store.sqlite.upkeep`; `search`
(vectors searched in memory) is SQLite's own (`remem.store.sqlite.search`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from remem.errors import SchemaTooNew, StoreCorrupt, StoreError
from remem.store.errors import (
    SQLITE_OTHER,
    sqlite_meaning,
)
from remem.store.flows.actors import ActorIndex, SQLiteActorSQL
from remem.store.flows.audit import AuditTrail
from remem.store.flows.backfill import Backfill
from remem.store.flows.erasure import Erasures
from remem.store.flows.events import Events
from remem.store.flows.jobs import Jobs, Ledger, ModelCalls
from remem.store.flows.keys import ApiKeys
from remem.store.flows.records import Records
from remem.store.roles import Clock, ThreadHost
from remem.store.sqlite import audit_sql
from remem.store.sqlite import backfill_sql as backfill_q
from remem.store.sqlite import sql as q
from remem.store.sqlite.backend import BUSY_TIMEOUT_MS, SQLiteBackend
from remem.store.sqlite.backend import _file_writer as _file_writer  # re-exported
from remem.store.sqlite.documents import SQLiteDocuments
from remem.store.sqlite.erasure import SQLiteErasure
from remem.store.sqlite.reindex import SQLiteReindex
from remem.store.sqlite.search import SQLiteSearch
from remem.store.sqlite.sql import fts_query as fts_query  # re-exported
from remem.store.sqlite.sql import scope_token as scope_token
from remem.store.sqlite.upkeep import HeldRecords, SQLiteUpkeep
from remem.store.sqlite.vectors.files import VectorFiles
from remem.store.text import read_migrations, split_sql
from remem.timeutil import to_db, utcnow

log = logging.getLogger(__name__)

APPLICATION_ID = 0x72656D6D  # "remm": marks a file as a remem database


def _migrations() -> list[tuple[int, str]]:
    return read_migrations("sqlite/migrations")


SCHEMA_VERSION = 15  # the newest migration this code knows; checked by a test


class SQLiteStore:
    """`Store` on one SQLite file. Safe to share between threads of one process."""

    backend: SQLiteBackend  # the connection the roles share (`remem.store.flows.backend.Backend`)

    # the roles (`remem.store.roles.ROLES`) this backend does not offer: none
    lacks: frozenset[str] = frozenset()

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
            tx=lambda tenant: self.backend.tx(),
            rows=lambda tenant, sql, params: self.backend.rows(sql, params),
            at=to_db,  # times are kept as sortable UTC text
            clock=self._clock,
            path=self.path,
        )

    @property
    def documents(self) -> SQLiteDocuments:
        """Documents in this file (`Store.documents`, `remem.store.sqlite.documents`)."""
        return SQLiteDocuments(self.backend)

    @property
    def reindexing(self) -> SQLiteReindex:
        """Re-embedding with another embedder (`Store.reindexing`, `remem.store.sqlite.reindex`)."""
        return SQLiteReindex(self.backend, self.search)

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
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(
                    f"directory {parent} does not exist; create it or choose another --db path"
                )
        files: VectorFiles | None = None
        try:
            self.backend = SQLiteBackend(self.path, busy_timeout=busy_timeout, clock=self._clock)
            self._migrate(apply=migrate)
            files = VectorFiles.beside(self.path) if migrate else None
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
        # the roles, each composed over the backend (`remem.store.roles`)
        b = self.backend
        self.keys = ApiKeys(b, q)
        self.actors = ActorIndex(b, SQLiteActorSQL)
        self.audit = AuditTrail(b, audit_sql)
        self.jobs = Jobs(b, q)
        self.ledger = Ledger(b, q)
        self.model_calls = ModelCalls(b, q)
        self.upkeep = SQLiteUpkeep(b)
        self.events = Events(b, q, self.upkeep)
        self.held = HeldRecords(b)
        self.records = Records(b, q, self.upkeep, self.held)
        self.search = SQLiteSearch(b, self.records, self.held.records, files)
        self.backfill = Backfill(b, backfill_q, self.upkeep, self.records, self.events)
        self.erasure = Erasures(b, q, SQLiteErasure(b, self.search), self.upkeep)

    # -- plumbing -----------------------------------------------------------

    def _migrate(self, *, apply: bool = True) -> None:
        with self.backend.lock:  # one consistent snapshot of the header and the schema
            self.backend.conn.execute("BEGIN")
            try:
                version = self._check_schema()
            finally:
                self.backend.conn.execute("COMMIT")
        if version == SCHEMA_VERSION or not apply:
            return
        with self.backend.tx():
            # another process may have migrated while we waited for the write lock
            version = self._check_schema()
            for number, sql in _migrations():
                if number > version:
                    for statement in split_sql(sql):
                        self.backend.conn.execute(statement)
                    self.backend.conn.execute(f"PRAGMA user_version = {number}")
            self.backend.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    @property
    def schema_known(self) -> int:
        """The newest migration this code knows."""
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        """The newest migration applied to this file."""
        with self.backend.lock:
            return int(self.backend.conn.execute("PRAGMA user_version").fetchone()[0])

    def _check_schema(self) -> int:
        """The file's schema version; refuse foreign and newer files."""
        db = self.backend.conn
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
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

    def close(self) -> None:
        """Close the connection (once vector files being written are); no use afterwards."""
        self.search.sync_vector_files()
        self.backend.close()

    # -- what is SQLite's own -------------------------------------------------

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer (vectors are searched in memory, FTS5 is kept as rows come);
        when the load is done, the scopes it filled are made ready to search
        (`SQLiteSearch.prepare_scopes`), so the next search, in this process or a
        fresh one, does not read their vectors through SQLite."""
        after = int(self.backend.rows(q.NEWEST_RECORD_VECTOR)[0][0])
        yield
        self.search.prepare_scopes(after)

    def ping(self) -> None:
        """Return if the database answers (`Store.ping`, the service's liveness probe)."""
        self.backend.read(None, q.PING, {})

    def stats(self) -> dict[str, int]:
        """Row counts, for `remem bench` and diagnostics."""
        return {name: int(self.backend.rows(sql)[0][0]) for name, sql in q.STATS.items()}


# -- helpers ----------------------------------------------------------------------
