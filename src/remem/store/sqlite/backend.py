"""The SQLite backend: one connection to one file, its write turns, and how values travel.

`SQLiteBackend` is what the flows written once (`remem.store.flows`) ask of SQLite
(`remem.store.flows.backend.Backend`): a write transaction is the file's write lock,
taken at once (BEGIN IMMEDIATE) after this process's writers of the file queue for
their turn (`_Turns`), whatever the tenant (one file is one trust domain: the SQL
names the tenant); reads run on the same connection under its lock; times travel as
sortable UTC text, lists and objects as JSON text. The store (`remem.store.sqlite.store`)
migrates the file and composes its roles over this object.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from remem.errors import StoreError
from remem.forksafe import ForkSafeLock, after_fork_in_child
from remem.store.errors import SQLITE, sqlite_translated
from remem.store.flows.backend import ListBinder, Row, Tx, sqlite_lists
from remem.store.flows.vector_fit import VECTOR_FIT
from remem.store.values import Clock
from remem.timeutil import from_db, to_db

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


class SQLiteBackend:
    """One connection to the SQLite file at `path` (WAL), shared by every role of its store.

    Safe to share between threads: statements run under `lock`; a write transaction
    also takes this process's turn on the file (`_Turns`), waiting up to
    `busy_timeout` seconds for it and then for another process's lock."""

    lists: ListBinder = staticmethod(sqlite_lists)
    # the statements a write of vectors runs first (`remem.store.flows.vector_fit`)
    vector_fit_sql: tuple[str, ...] = (VECTOR_FIT,)

    def __init__(self, path: str, *, busy_timeout: float, clock: Clock) -> None:
        """Open the connection and set its pragmas (the store migrates the file)."""
        self.path = path
        self.clock = clock
        self.busy_ms = max(0, round(busy_timeout * 1000))
        self.lock = threading.RLock()
        # `:memory:` is a database of this connection alone
        self.writer = _Turns() if path == ":memory:" else _file_writer(path)
        self.conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
        )
        self.conn.row_factory = sqlite3.Row
        self.conn.execute(f"PRAGMA busy_timeout = {self.busy_ms}")
        _set_wal(self.conn)
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        # deleted rows and freed pages are overwritten with zeros, so an erasure
        # leaves no copy in the file's free space (see `scrub_files`)
        self.conn.execute("PRAGMA secure_delete = ON")
        # reads map the file instead of copying each page through SQLite's 2 MB cache:
        # BM25 over a 100,000-record scope took 1.45 ms CPU, 1.0 mapped
        self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once so writers queue instead of failing."""
        with self.lock, sqlite_translated():
            if not self.writer.acquire(timeout=self.busy_ms / 1000):
                raise SQLITE["SQLITE_BUSY"].raise_as()
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                self.writer.began(True)  # a fork now leaves SQLite's lock held in the child
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                else:
                    self.conn.execute("COMMIT")
            finally:
                self.writer.release()

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        """The rows of one statement, under the connection's lock."""
        with self.lock, sqlite_translated():
            return list(self.conn.execute(sql, params).fetchall())

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()

    # -- `remem.store.flows.backend.Backend` -------------------------------------------------

    def transaction(self, tenant: str | None) -> AbstractContextManager[sqlite3.Connection]:
        """The file's write transaction (`tx`), whatever the tenant."""
        return self.tx()

    def bind(self, db: Tx, tenant: str) -> None:
        """Nothing: one file is one trust domain."""

    @contextmanager
    def reading(self, tenant: str | None) -> Iterator[sqlite3.Connection]:
        """The connection under its lock: reads that see one another."""
        with self.lock, sqlite_translated():
            yield self.conn

    def read(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
        """The rows of one reading statement."""
        return self.rows(sql, params)

    def ahead(self, tenant: str, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """`Backend.ahead`: nothing (a read here makes no round trip)."""

    def read_many(
        self, tenant: str | None, statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Sequence[sqlite3.Row]]:
        """The rows of each of several reading statements, under the lock, in order, in one
        read transaction (BEGIN ... COMMIT unless one is open): each statement alone would
        see a commit another connection (another process) made after the one before."""
        with self.reading(tenant) as db:
            if db.in_transaction:
                return [db.execute(sql, params).fetchall() for sql, params in statements]
            db.execute("BEGIN")
            try:
                return [db.execute(sql, params).fetchall() for sql, params in statements]
            finally:
                db.execute("COMMIT")

    def write(self, tenant: str | None, sql: str, params: Mapping[str, Any]) -> list[sqlite3.Row]:
        """The rows (RETURNING) of one writing statement, in its own write transaction."""
        with self.tx() as db:
            return list(db.execute(sql, params).fetchall())

    def each(self, db: Tx, sql: str, rows: Sequence[Mapping[str, Any]]) -> list[Row | None]:
        """Run `sql` once per row of parameters; the first row each returned, or None."""
        out: list[Row | None] = []
        for params in rows:
            returned = db.execute(sql, params).fetchall()
            out.append(returned[0] if returned else None)
        return out

    def at(self, t: datetime | None) -> str | None:
        """A time as sortable UTC text."""
        return to_db(t)

    def time(self, value: Any) -> datetime:
        """A stored time (UTC text) as an aware datetime."""
        return from_db(value)

    def json_param(self, value: Any) -> str:
        """A JSON value as text."""
        return json.dumps(value)

    def json_value(self, value: Any) -> Any:
        """A stored JSON text, decoded."""
        return json.loads(value)

    def list_param(self, items: Sequence[str]) -> str:
        """A list column's value: JSON text."""
        return json.dumps(list(items))

    def list_value(self, value: Any) -> list[str]:
        """A stored list column's items."""
        return list(json.loads(value))


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
