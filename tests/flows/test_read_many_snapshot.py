"""`Backend.read_many`: several reading statements in one transaction that sees them all.

On SQLite the statements ran under the connection's lock only, each in a transaction
of its own: a commit by another connection (another process: `remem serve --workers
2`, a `remem worker`) between them was seen by the later ones and not the earlier. A
commit is made here from a second connection at the moment the second statement
starts (SQLite's trace callback), so the interleaving is certain, not left to timing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from remem.store.sqlite.backend import SQLiteBackend
from tests.support.clock import Clock

COUNT = "SELECT count(*) AS n FROM notes"


def test_a_commit_between_the_statements_of_read_many_is_not_half_seen(tmp_path: Path) -> None:
    path = str(tmp_path / "snap.db")
    backend = SQLiteBackend(path, busy_timeout=5, clock=Clock())
    other = sqlite3.connect(path, isolation_level=None)
    try:
        with backend.tx() as db:
            db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
            db.execute("INSERT INTO notes (text) VALUES ('first')")
        started: list[str] = []

        def commit_from_elsewhere(sql: str) -> None:
            if sql.startswith("SELECT count"):
                started.append(sql)
                if len(started) == 2:  # the second statement is about to run
                    other.execute("INSERT INTO notes (text) VALUES ('second')")

        backend.conn.set_trace_callback(commit_from_elsewhere)
        first, second = backend.read_many(None, [(COUNT, {}), (COUNT, {})])
        backend.conn.set_trace_callback(None)
        assert len(started) == 2
        assert first[0]["n"] == second[0]["n"] == 1  # one snapshot: before the commit
        assert backend.read(None, COUNT, {})[0]["n"] == 2  # and the commit is there after
    finally:
        other.close()
        backend.close()
