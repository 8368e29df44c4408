"""`remem bench` on a PostgreSQL URL and on a SQLite URL, at a toy size.

Speed is not asserted here (the machine's load decides it); these tests prove
that the benchmark runs against either backend named by a URL, reports the
same figures, finds what it stored, and refuses a database it did not build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.embed.base import HashEmbedder
from remem.errors import InvalidInput
from remem.eval.bench.synthetic import run_bench
from remem.memory.memory import Memory
from tests.support import pg

FIGURES = {
    "records", "scope_records", "embedder", "load_records_per_s", "recall_p50_ms",
    "recall_p95_ms", "first_recall_ms", "first_recall_after_add_ms", "add_event_per_s",
    "extract_per_s", "cold_recall_s", "db_size_mb", "peak_rss_mb", "vector_files_mb",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # the cold-recall subprocess would load MiniLM; lexical recall is enough here
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def bench(db: str) -> dict[str, object]:
    return run_bench(
        db=db, records=300, scope=None, queries=10, events=100, progress=False,
        embedder=HashEmbedder(64),
    )  # fmt: skip


def found(db: str) -> int:
    with Memory.open(db, embedder=HashEmbedder(64)) as mem:
        packet = mem.recall(actor="bench-main", query="which seat should I book", k=10)
        return len(packet.records)


def test_bench_runs_on_postgresql_and_refuses_a_used_database(pg_admin_dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        url = pg.as_url(dsn)
        figures = bench(url)
        assert set(figures) == FIGURES
        assert figures["records"] == 300 and figures["embedder"] == "hash-64"
        assert isinstance(figures["db_size_mb"], float) and figures["db_size_mb"] > 1
        assert found(url) > 0
        with pytest.raises(InvalidInput, match=r"already holds \d+ records"):
            bench(url)


def test_bench_takes_a_sqlite_url_and_refuses_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "bench.db"
    figures = bench(f"sqlite:///{path}")
    assert set(figures) == FIGURES and path.exists()
    assert isinstance(figures["db_size_mb"], float) and figures["db_size_mb"] > 0
    assert found(str(path)) > 0
    with pytest.raises(InvalidInput, match="exists"):
        bench(str(path))


def test_both_backends_take_turns_on_the_same_records(pg_admin_dsn: str, tmp_path: Path) -> None:
    from remem.eval.bench.pair import run_http_pair

    with pg.fresh_database(pg_admin_dsn) as dsn:
        # 48 requests: /proc counts CPU in clock ticks (10 ms), sampled per process, so a
        # few light retrieves may add up to no tick (as in tests/surfaces/http/test_bench_http.py)
        figures = run_http_pair(
            records=200, concurrencies=(1, 2), requests=48, sqlite_db=str(tmp_path / "pair.db"),
            postgres_db=pg.as_url(dsn), progress=False,
        )  # fmt: skip
        held = [Memory.open(pg.as_url(dsn), embedder=None)]
        held.append(Memory.open(str(tmp_path / "pair.db"), embedder=None))
        for mem in held:  # the same records on both
            with mem:
                assert mem.store.stats()["records"] >= 200
    assert figures["backend"] == "both" and figures["errors"] == 0
    assert figures["embedder"] == "hash-256"  # no model here: the bench's own
    assert [row["concurrency"] for row in figures["http"]] == [1, 2]
    for row in figures["http"]:
        sq, pgs = row["sqlite"], row["postgres"]
        for side in (sq, pgs):
            assert side["errors"] == 0 and side["retrieve_p95_ms"] >= side["retrieve_p50_ms"] > 0
            assert side["retrieve_server_cpu_ms"] > 0
        assert "retrieve_db_cpu_ms" not in sq  # PostgreSQL's own CPU, where its server is local
        ratio = pgs["retrieve_p50_ms"] / sq["retrieve_p50_ms"]
        assert row["postgres_to_sqlite_p50"] == pytest.approx(ratio, abs=0.01)
