"""A reindex on PostgreSQL (issue 36): the new model's HNSW indexes are built, valid, after
the switch, and the store searches the new vectors through them."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.postgres import sql as q
from tests.support import pg

VALID = "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%(name)s)"


@pytest.fixture
def url(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        yield pg.as_url(dsn)


def test_the_new_models_indexes_are_built_valid_after_the_switch(url: str) -> None:
    old, new = HashEmbedder(64), HashEmbedder(128)
    with Memory.open(url, embedder=old) as mem:
        mem.remember(actor="ann", text="Ann is allergic to peanuts")
        mem.add_event(actor="ann", session="s1", role="user", text="I moved to Lisbon")
        mem.process()
    indexes = [q.VectorIndex(t, new.name, 128) for t in ("record_vectors", "event_vectors")]
    with Memory.open(url, embedder=new) as mem:
        mem.reindex(max_batches=1)
        with psycopg.connect(url) as conn:  # none while the reindex is pending
            assert [conn.execute(VALID, {"name": ix.name}).fetchall() for ix in indexes] == [
                [],
                [],
            ]
        assert mem.reindex().switched
        with psycopg.connect(url) as conn:
            assert [conn.execute(VALID, {"name": ix.name}).fetchall() for ix in indexes] == [
                [(True,)],
                [(True,)],
            ]
        packet = mem.recall(actor="ann", query="what is ann allergic to?", explain=True)
        assert packet.explain is not None and packet.explain["vector"]
