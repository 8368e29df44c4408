"""`Memory.open` takes a libpq keyword/value string as well as a postgresql:// URL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from tests.support import pg


@pytest.fixture(scope="module")
def app_dsn() -> Iterator[str]:
    admin = pg.acquire()
    try:
        with pg.fresh_database(admin) as dsn:
            yield dsn
    finally:
        pg.release()


def test_a_keyword_dsn_opens_postgresql(app_dsn: str) -> None:
    assert "=" in app_dsn and not app_dsn.startswith("postgresql://")
    with Memory.open(app_dsn, embedder=HashEmbedder()) as mem:
        assert type(mem.store).__name__ == "PostgresStore"
        rec = mem.remember(actor="ana", text="Ana keeps bees")
        assert mem.get(rec.id).text == "Ana keeps bees"
        rows = list(mem.export(actor="ana"))  # no thread state on PostgreSQL: none exported
        assert {r["type"] for r in rows} == {"record"}


def test_summaries_are_regenerated_and_their_events_kept_on_postgresql(app_dsn: str) -> None:
    from remem.config.config import ConfigFile, build

    config = build(
        ConfigFile.model_validate({"strategies": {"offline": {}, "offline-summary": {}}}),
        "test",
        Path.cwd(),
    )
    with Memory.open(app_dsn, embedder=HashEmbedder(), config=config, tenant="sums") as mem:
        turns = ["I live in Lisbon.", "Book a table for Friday, please.", "I am vegetarian."]
        for i, text in enumerate(turns):
            mem.add_event(actor="ana", session="s1", role="user", text=text,
                          time=f"2024-05-01T10:0{i}:00Z", event_id=f"p{i}")  # fmt: skip
        mem.process()
        home = next(r for r in mem.records(actor="ana") if r.field == "home city")
        assert mem.forget(record_id=home.id).deleted["summaries"] == 1
        texts = {e.id: e.text for e in mem.events(actor="ana")}
        assert texts["p0"] == "" and texts["p1"] and texts["p2"]  # only the forgotten one
        mem.process()
        (summary,) = [r for r in mem.records(actor="ana") if r.kind.value == "summary"]
        assert "Lisbon" not in summary.text and set(summary.source.event_ids) == {"p1", "p2"}
