"""Shared fixtures: real SQLite files in a temporary directory, a fixed clock, and the
session's PostgreSQL server (started on first use, see `tests.support.pg`).

Three ways to put a test on both backends, by what it takes: `db` (a SQLite path or a
PostgreSQL URL, always both), `mem` and `db_path` under the `both_backends` mark
(`tests.support.backends`; SQLite alone without it), and the conformance suite's `store`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.memory.memory import open_store
from tests.support import order
from tests.support.clock import Clock

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# PYTHONDONTWRITEBYTECODE (set on the machines the suite runs on) left src/remem and the
# tests without .pyc files, so every process the tests start (a `remem serve`, a CLI
# run, a worker) compiled the package from source again: 57 s against 35 s for the MCP
# and CLI-file tests from a clean clone (docs/decisions/suite-time.md). Here, and in the
# processes the tests start, which inherit this environment, bytecode is written.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


# --- workers: pyproject's addopts ask for `-n auto --dist loadfile` (pytest-xdist) -------


@pytest.hookimpl(optionalhook=True)  # xdist's hook: `-p no:xdist -o addopts=` still runs
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` starts. None (the tests run in this process) when the
    paths asked for are in tests/unit, the fast path, or name a single file (or tests in
    it): a worker costs seconds to start, and `--dist loadfile` keeps a file on one
    worker anyway. Otherwise xdist's own choice: a worker per CPU, or
    `PYTEST_XDIST_AUTO_NUM_WORKERS`."""
    unit = (config.rootpath / "tests" / "unit").resolve()
    here = config.invocation_params.dir
    asked = {(here / arg.split("::")[0]).resolve() for arg in config.args}
    rest = {path for path in asked if not path.is_relative_to(unit)}
    if asked and (not rest or (len(rest) == 1 and rest.pop().is_file())):
        return 0
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist's workers, the longest files first (`tests.support.order`); a stable
    sort, so a file's tests and the other files keep their order."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: order.rank(item.nodeid))


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    """The admin DSN of the session's PostgreSQL server."""
    from tests.support import pg

    dsn = pg.acquire()
    yield dsn
    pg.release()


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new database on each backend, as `Memory.open` and `create_app` take it: a
    SQLite file's path, or the URL of a fresh database of the session's PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "test.db")
        return
    from tests.support import pg

    with pg.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
        yield pg.as_url(dsn)


@pytest.fixture
def db_backend(request: pytest.FixtureRequest) -> str:
    """The backend of `db_path` and `mem`: "sqlite", or each of "sqlite" and "postgres"
    for a test marked `both_backends` (`tests.support.backends`)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 6, 1, tzinfo=UTC))


@pytest.fixture
def db_path(
    request: pytest.FixtureRequest, db_backend: str, tmp_path: Path
) -> Iterator[Path | str]:
    """A new SQLite file's path; under `both_backends`, on PostgreSQL the URL of a fresh
    database of the session's server in its place (what `Memory.open` takes)."""
    if db_backend == "sqlite":
        yield tmp_path / "memory.db"
        return
    from tests.support import pg

    with pg.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
        yield pg.as_url(dsn)


@pytest.fixture
def mem(db_path: Path | str, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
        yield m


@pytest.fixture
def mems(db: str) -> Iterator[list[Memory]]:
    """Three `Memory` on one database, each backend (for races between them)."""
    opened = [Memory(open_store(db), embedder=HashEmbedder()) for _ in range(3)]
    yield opened
    for m in opened:
        m.close()
