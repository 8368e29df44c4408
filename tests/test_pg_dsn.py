"""`Memory.open` takes a libpq keyword/value string as well as a postgresql:// URL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from tests import pg_helpers


@pytest.fixture(scope="module")
def app_dsn() -> Iterator[str]:
    admin = pg_helpers.acquire()
    try:
        with pg_helpers.fresh_database(admin) as dsn:
            yield dsn
    finally:
        pg_helpers.release()


def test_a_keyword_dsn_opens_postgresql(app_dsn: str) -> None:
    assert "=" in app_dsn and not app_dsn.startswith("postgresql://")
    with Memory.open(app_dsn, embedder=HashEmbedder()) as mem:
        assert type(mem.store).__name__ == "PostgresStore"
        rec = mem.remember(actor="ana", text="Ana keeps bees")
        assert mem.get(rec.id).text == "Ana keeps bees"
        rows = list(mem.export(actor="ana"))  # no thread state on PostgreSQL: none exported
        assert {r["type"] for r in rows} == {"record"}
