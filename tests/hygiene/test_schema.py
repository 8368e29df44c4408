"""A migrated database holds exactly the committed schema of its backend.

The snapshots (tests/data/schema/sqlite.txt, postgres.txt; see `tests.support.schema`
for what they hold) change only with a migration, in the same commit; a difference is
printed as a diff. Regenerate them with `PYTHONPATH=src python -m tests.support.schema`.
"""

from __future__ import annotations

import difflib
import sqlite3
from pathlib import Path

import pytest

from remem.store.sqlite.store import APPLICATION_ID, SQLiteStore, _migrations
from tests.support.schema import (
    REGENERATE,
    SNAPSHOTS,
    fresh_postgres_schema,
    sqlite_schema,
)


def _same(name: str, migrated: str) -> None:
    snapshot = (SNAPSHOTS / name).read_text()
    if migrated != snapshot:
        diff = "".join(
            difflib.unified_diff(
                snapshot.splitlines(keepends=True),
                migrated.splitlines(keepends=True),
                f"tests/data/schema/{name}",
                "migrated",
            )
        )
        pytest.fail(
            f"a migrated database differs from tests/data/schema/{name}:\n{diff}\n"
            f"if the migration meant it, regenerate the snapshots: {REGENERATE}",
            pytrace=False,
        )


def test_a_fresh_sqlite_file_and_one_migrated_from_version_1_hold_the_snapshot(
    tmp_path: Path,
) -> None:
    SQLiteStore(tmp_path / "fresh.db").close()
    _same("sqlite.txt", sqlite_schema(tmp_path / "fresh.db"))
    # a file of schema 1, as the first remem left it, then opened by this remem
    stepwise = tmp_path / "step.db"
    conn = sqlite3.connect(stepwise)
    conn.executescript(_migrations()[0][1])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.commit()
    conn.close()
    SQLiteStore(stepwise).close()  # applies whatever migrations remain
    _same("sqlite.txt", sqlite_schema(stepwise))


def test_a_fresh_postgresql_database_holds_the_snapshot(pg_admin_dsn: str) -> None:
    _same("postgres.txt", fresh_postgres_schema(pg_admin_dsn))
