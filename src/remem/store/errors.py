"""Driver errors as remem's: one table per backend, applied at the store boundary.

No `sqlite3.*` or `psycopg.*` exception leaves a store: each backend's
transaction and statement runners pass what the driver raised through
`from_sqlite` or `from_postgres`, which look it up here. A message says what
was wrong and what to do, and never names a file path, a connection string,
a role or the driver's own text (which can quote the request's values): it
may reach an HTTP or MCP client. The store logs the driver's text instead.

SQLite is looked up by its primary result code (`SQLITE_BUSY` for
`SQLITE_BUSY_SNAPSHOT`), with the extended code first where it matters
(`SQLITE_CONSTRAINT_UNIQUE`); PostgreSQL by SQLSTATE, then its class (the
first two characters); an error with neither (a connection the client found
closed, a pool that gave none in time) by its DB-API class, which both
drivers name alike.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remem.errors import (
    ConflictError,
    InvalidInput,
    RememError,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
)

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True, slots=True)
class Meaning:
    """What a driver error means to a caller: the error to raise, and its message."""

    error: type[RememError]
    message: str

    def raise_as(self) -> RememError:
        """The remem error to raise for it (the caller chains the driver's with `from`)."""
        return self.error(self.message)


CONFLICT = Meaning(ConflictError, "a concurrent writer got there first; retry")
# raised by the audit log's triggers (sqlite/migrations/0012, postgres/migrations/0016)
APPEND_ONLY = Meaning(
    StoreError,
    "the audit log is append-only: the database refuses to change a row, or to remove one "
    "younger than 30 days (the shortest retention); nothing was changed",
)
NOT_UNICODE = Meaning(
    InvalidInput,
    "a text value is not valid Unicode (it holds a lone surrogate such as \\ud800); "
    "nothing was stored",
)

SQLITE: dict[str, Meaning] = {
    "SQLITE_BUSY": Meaning(
        StoreUnavailable,
        "the SQLite database is locked: another connection (perhaps another process) holds "
        "a write transaction for longer than this store waits; nothing was stored: retry, "
        "or end that writer",
    ),
    "SQLITE_READONLY": Meaning(
        StoreError,
        "the SQLite database is read-only to this process (the file's or its folder's "
        "permissions, an immutable file or a read-only disk); nothing was stored: make the "
        "file and its folder writable, or open a writable copy",
    ),
    "SQLITE_FULL": Meaning(
        StoreError,
        "the disk that holds the SQLite database is full; nothing was stored: free space "
        "there, then retry",
    ),
    "SQLITE_IOERR": Meaning(
        StoreError,
        "the SQLite database could not read or write its file (an I/O error); check the "
        "disk, then retry",
    ),
    "SQLITE_CANTOPEN": Meaning(
        StoreError,
        "the SQLite database cannot open its file or its journal; check that the file and "
        "its folder exist and are writable",
    ),
    "SQLITE_CORRUPT": Meaning(
        StoreCorrupt, "the SQLite database file is damaged; restore a backup"
    ),
    "SQLITE_NOTADB": Meaning(
        StoreCorrupt, "the SQLite database file is not a database; restore a backup"
    ),
    "SQLITE_CONSTRAINT_UNIQUE": CONFLICT,
    "SQLITE_CONSTRAINT_PRIMARYKEY": CONFLICT,
    "SQLITE_CONSTRAINT_TRIGGER": APPEND_ONLY,  # only the audit log's triggers RAISE
    "SQLITE_CONSTRAINT": Meaning(
        StoreError,
        "the database refused a row that breaks one of its rules (a constraint); nothing "
        "was stored; the log says which",
    ),
}
SQLITE["SQLITE_LOCKED"] = SQLITE["SQLITE_BUSY"]
SQLITE_OTHER = Meaning(StoreError, "the SQLite database refused the operation; the log says why")
SQLITE_CLOSED = Meaning(StoreError, "the database was closed (Memory.close); open it again")

PG_UNAVAILABLE = Meaning(
    StoreUnavailable,
    "the PostgreSQL database cannot answer right now (the connection was lost or the "
    "server is busy); retry later (the server's log says why)",
)
POSTGRES: dict[str, Meaning] = {
    "40001": CONFLICT,  # serialization_failure
    "23505": CONFLICT,  # unique_violation
    "23R01": APPEND_ONLY,  # remem's own, raised by the audit log's trigger
    "23": Meaning(
        StoreError,
        "the database refused a row that breaks one of its rules (a constraint); nothing "
        "was stored; the server's log says which",
    ),
    "22": Meaning(
        InvalidInput,
        "PostgreSQL cannot hold a value of this request (out of range or malformed); "
        "nothing was stored",
    ),
    "25006": Meaning(
        StoreError,
        "the PostgreSQL database is read-only (a standby, or default_transaction_read_only "
        "is on); nothing was stored: point remem at the primary, or turn read-only off",
    ),
    "53100": Meaning(
        StoreError,
        "the PostgreSQL server's disk is full; nothing was stored: free space on the "
        "server, then retry",
    ),
    "53": PG_UNAVAILABLE,  # insufficient_resources: out of memory or connections
    "57": PG_UNAVAILABLE,  # operator_intervention: the server shut the session down
    "08": PG_UNAVAILABLE,  # connection_exception
    "40": PG_UNAVAILABLE,  # transaction_rollback: a deadlock, retried whole
    "55P03": PG_UNAVAILABLE,  # lock_not_available
}
PG_NUL = Meaning(
    InvalidInput,
    "a text value contains a NUL character (\\x00), which PostgreSQL cannot store; "
    "remove it (nothing was stored)",
)
PG_OTHER = Meaning(
    StoreError, "the PostgreSQL database refused the operation; the server's log says why"
)
# errors the tables above do not name, e.g. without a SQLSTATE: the client found the
# connection closed, the pool gave none in time
BY_CLASS: dict[str, Meaning] = {
    "OperationalError": PG_UNAVAILABLE,
    "DataError": POSTGRES["22"],
    "IntegrityError": POSTGRES["23"],
}


def sqlite_meaning(exc: sqlite3.Error) -> Meaning:
    """What an error of Python's sqlite3 means (`SQLITE_OTHER` when the table is silent)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    primary = "_".join(name.split("_")[:2])
    if not name and isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
        return SQLITE_CLOSED  # sqlite3's own check: no SQLite error code to read
    return SQLITE.get(name) or SQLITE.get(primary) or SQLITE_OTHER


def from_sqlite(exc: sqlite3.Error) -> RememError:
    """The remem error to raise for an error of Python's sqlite3."""
    return sqlite_meaning(exc).raise_as()


def postgres_meaning(exc: psycopg.Error) -> Meaning:
    """What an error of psycopg means (`PG_OTHER` when the table is silent)."""
    classes = [c.__name__ for c in type(exc).__mro__]
    if "DataError" in classes and "NUL" in str(exc):
        return PG_NUL  # psycopg refuses it before sending it
    state = str(exc.sqlstate or "")
    found = POSTGRES.get(state) or POSTGRES.get(state[:2]) if state else None
    if found is not None:
        return found
    for name in classes:
        if name in BY_CLASS:
            return BY_CLASS[name]
    return PG_OTHER


def from_postgres(exc: psycopg.Error) -> RememError:
    """The remem error to raise for an error of psycopg (an operation's, not opening's)."""
    return postgres_meaning(exc).raise_as()


_sqlite_log = logging.getLogger("remem.store.sqlite.store")


@contextmanager
def sqlite_translated() -> Iterator[None]:
    """Driver errors of a SQLite operation as remem's, which may reach an HTTP or MCP
    client: they say what happened, never the file's path or the driver's text (logged)."""
    try:
        yield
    except UnicodeEncodeError:
        raise NOT_UNICODE.raise_as() from None
    except sqlite3.Error as exc:
        _sqlite_log.warning("SQLite: %s: %s", type(exc).__name__, exc)
        raise from_sqlite(exc) from exc
