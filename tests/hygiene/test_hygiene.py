"""The tools enforce the hygiene: ruff, strict mypy, and migrations in order (the schema they
build is compared with its snapshot in tests/hygiene/test_schema.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from remem.errors import SchemaTooNew
from remem.store.sqlite.store import SCHEMA_VERSION, SQLiteStore, _migrations
from tests.support import ROOT


@pytest.mark.parametrize(
    "cmd",
    [["ruff", "check", "src", "tests"], ["ruff", "format", "--check", "src", "tests"], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_tool_passes(cmd: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_migrations_are_numbered_in_order_and_reach_the_schema_version() -> None:
    numbers = [n for n, _ in _migrations()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert numbers[-1] == SCHEMA_VERSION


def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from remem.model import Event, Role

    s = SQLiteStore(tmp_path / "m.db")
    s.events.add_events([Event("e1", "t", "a", "s", Role.USER, "hi", datetime.now(UTC))], [])
    s.close()
    s = SQLiteStore(tmp_path / "m.db")
    assert len(s.events.list_events("t", "a")) == 1
    s.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "m.db").close()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(SchemaTooNew, match="newer remem"):
        SQLiteStore(tmp_path / "m.db")


def test_many_processes_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "fresh.db"
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            SQLiteStore(path).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
