"""Backing up and restoring a SQLite database with SQLite's online backup API (on
PostgreSQL, pg_dump and pg_restore do it: docs/operations.md).

`backup(db, dest)` copies a live database, page by page, while other connections
keep reading and writing it (a write during the copy restarts it), into one new
self-contained file (rollback journal, no WAL beside it). The vector files beside
the database (`<db>.vectors/`) are not copied: they are derived from the rows and
written again on the first recall.

`restore(source, db)` writes a backup over the database at `db` through the same
API, as one transaction of the destination; the processes that use `db` must be
stopped first. It removes the vector files (derived from the rows being replaced)
and checkpoints the WAL into the file, leaving it empty. Erasures that happened
after the backup are not in it: the caller reads the tombstones of the database
being replaced first and replays them after (`remem.lifecycle.restore`,
`remem restore`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from remem.errors import InvalidInput, SchemaTooNew, StoreCorrupt
from remem.store.sqlite.store import APPLICATION_ID, SCHEMA_VERSION

PAGES_PER_STEP = 1024  # pages copied between two looks at the source (4 MB at 4 KB pages)


def backup(db: str, dest: str) -> dict[str, int | str]:
    """Copy the remem database `db` into the new file `dest` while it is in use; what
    was written (path, bytes, schema). Refuses an existing `dest`, never overwriting."""
    version = header(db)
    target = Path(dest).expanduser()
    if target.exists():
        raise InvalidInput(f"{dest} exists; a backup never overwrites a file: name a new one")
    if not target.parent.is_dir():
        raise InvalidInput(f"directory {target.parent} does not exist; create it first")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(_read_only(db), uri=True)
    try:
        out = sqlite3.connect(partial)
        try:
            src.backup(out, pages=PAGES_PER_STEP)
            out.execute("PRAGMA journal_mode = DELETE")  # one file, no WAL beside it
        finally:
            out.close()
    finally:
        src.close()
    os.replace(partial, target)  # a backup is whole or absent
    return {"backup": str(target), "bytes": target.stat().st_size, "schema": version}


def restore(source: str, db: str) -> int:
    """Write the backup `source` over the database `db` (created if missing), drop the
    vector files beside it and empty its WAL; the backup's schema version. Refuses a
    file that is not a remem database or is newer than this remem."""
    version = header(source)
    folder = Path(db).expanduser().resolve().parent
    if not folder.is_dir():
        raise InvalidInput(f"directory {folder} does not exist; create it first")
    src = sqlite3.connect(_read_only(source), uri=True)
    try:
        out = sqlite3.connect(db, timeout=30.0)
        try:
            src.backup(out, pages=PAGES_PER_STEP)
            out.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            out.close()
    finally:
        src.close()
    vectors = Path(db).expanduser().resolve().parent / (Path(db).name + ".vectors")
    shutil.rmtree(vectors, ignore_errors=True)  # derived from the rows just replaced
    return version


def header(path: str) -> int:
    """The schema version of the remem database at `path`, read without writing to it;
    InvalidInput when there is no file, StoreCorrupt when it is not a remem database,
    SchemaTooNew when a newer remem wrote it."""
    if not Path(path).expanduser().is_file():
        raise InvalidInput(f"no database file at {path}")
    try:
        conn = sqlite3.connect(_read_only(path), uri=True)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreCorrupt(f"{path} is not a readable SQLite database ({exc})") from exc
    if app_id != APPLICATION_ID:
        raise StoreCorrupt(f"{path} is not a remem database")
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} was written by a newer remem (schema {version}, this remem knows up "
            f"to {SCHEMA_VERSION}); upgrade remem to restore it"
        )
    return version


def _read_only(path: str) -> str:
    """A read-only URI of `path` (its characters quoted as a URI needs)."""
    return Path(path).expanduser().resolve().as_uri() + "?mode=ro"
