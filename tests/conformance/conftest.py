"""The conformance suite: every test here runs on every store backend.

PostgreSQL runs on a real server (see `tests.support.pg`): one per session,
a fresh database per test.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.embed.minilm.embedder import MiniLMEmbedder
from remem.store.roles import ROLES, Store
from remem.store.sqlite.store import SQLiteStore
from tests.support import pg
from tests.support.embed import minilm_or_skip
from tests.support.store import CLOCK_TIME

BACKENDS = ["sqlite", "postgres"]


def _open(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SQLiteStore(tmp_path / "conformance.db", **options)
        yield s
        s.close()
    elif request.param == "postgres":
        from remem.store.postgres.store import PostgresStore

        admin = request.getfixturevalue("pg_admin_dsn")
        with pg.fresh_database(admin) as dsn:
            pg_store = PostgresStore(dsn, max_size=4, **options)
            yield pg_store
            pg_store.close()
    else:  # pragma: no cover - a backend listed without a fixture
        raise AssertionError(request.param)


_ROLE_CALL = re.compile(r"\.(" + "|".join(ROLES) + r")\.")


@pytest.fixture(autouse=True)
def _skip_what_the_backend_lacks(request: pytest.FixtureRequest) -> None:
    """Skip a case on a backend that declares it lacks a role the case calls
    (`store.jobs.claim_jobs(...)` calls `jobs`; `Store.lacks`)."""
    names = {"store", "clocked_store"} & set(request.fixturenames)
    if not names:
        return
    store = request.getfixturevalue(names.pop())
    called = set(_ROLE_CALL.findall(inspect.getsource(request.function)))
    lacking = sorted(called & store.lacks)
    if lacking:
        pytest.skip(f"{type(store).__name__} declares it lacks {', '.join(lacking)}")


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2, for the cases that need its meaning (skipped without it)."""
    return minilm_or_skip()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from _open(request, tmp_path)


@pytest.fixture(params=BACKENDS)
def clocked_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store given a clock that always says `CLOCK_TIME`."""
    yield from _open(request, tmp_path, clock=lambda: CLOCK_TIME)
