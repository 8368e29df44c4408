"""The conformance suite: every test here runs on every store backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.store.base import Store
from remem.store.sqlite import SQLiteStore

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s = SQLiteStore(tmp_path / "conformance.db")
    else:  # pragma: no cover - a backend listed without a fixture
        raise AssertionError(request.param)
    yield s
    s.close()
