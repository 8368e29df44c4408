"""`run_http_bench` against a real `remem serve` on loopback, with tiny counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.errors import InvalidInput
from remem.eval.bench.http import _prepare, run_http_bench, run_http_compare, run_http_mixed
from remem.eval.bench.mixed import OPS, _lost, _Thread
from tests.support.servers import running_server


def test_http_bench_reports_add_and_retrieve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")  # the child server: lexical, light
    figures = run_http_bench(requests=20, concurrency=4, lexical=True, progress=False)
    assert figures["requests"] == 20 and figures["concurrency"] == 4
    assert figures["errors"] == 0
    for op in ("add", "retrieve"):
        for field in ("per_s", "p50_ms", "p95_ms"):
            assert figures[f"{op}_{field}"] > 0, (op, field, figures)
        assert figures[f"{op}_p95_ms"] >= figures[f"{op}_p50_ms"]


def test_http_bench_refuses_unbounded_counts() -> None:
    with pytest.raises(InvalidInput):
        run_http_bench(requests=0, progress=False)
    with pytest.raises(InvalidInput):
        run_http_bench(requests=10, concurrency=0, progress=False)


def test_http_bench_refuses_an_existing_file(tmp_path: Path) -> None:
    used = tmp_path / "used.db"
    used.write_bytes(b"")
    with pytest.raises(InvalidInput, match="exists"):
        run_http_bench(db=f"sqlite:///{used}", requests=10, progress=False)


def test_http_compare_puts_http_beside_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")  # lexical on both sides, light
    # 48 requests: /proc counts CPU in clock ticks (10 ms), sampled per process, and 12
    # lexical retrieves over two processes once added up to no tick at all (CI, load 6)
    figures = run_http_compare(
        records=300, concurrencies=(1, 3), workers=2, requests=48, progress=False
    )
    assert figures["records"] == 300 and figures["workers"] == 2
    assert figures["inprocess_recall_p50_ms"] > 0
    # the in-process side's CPU per recall, measured in its own process
    assert figures["inprocess_recall_cpu_ms"] > 0 and figures["inprocess_load_1m"] >= 0
    assert [row["concurrency"] for row in figures["http"]] == [1, 3]
    for row in figures["http"]:
        assert row["errors"] == 0, row
        assert row["retrieve_p95_ms"] >= row["retrieve_p50_ms"] > 0
        # CPU per request of both sides, beside the load they were measured at
        assert row["retrieve_server_cpu_ms"] > 0 and row["retrieve_client_cpu_ms"] > 0, row
        assert row["retrieve_load_1m"] >= 0
        ratio = row["retrieve_p50_ms"] / figures["inprocess_recall_p50_ms"]
        assert row["p50_to_inprocess"] == pytest.approx(ratio, abs=0.01)
        cpu_ratio = row["retrieve_server_cpu_ms"] / figures["inprocess_recall_cpu_ms"]
        assert row["server_cpu_to_inprocess"] == pytest.approx(cpu_ratio, abs=0.01)


def test_http_compare_refuses_unbounded_counts() -> None:
    with pytest.raises(InvalidInput, match="records"):
        run_http_compare(records=10, progress=False)
    with pytest.raises(InvalidInput, match="concurrency"):
        run_http_compare(records=100, concurrencies=(0,), progress=False)


def test_mixed_run_loses_nothing_on_two_processes(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")  # lexical, light
    figures = run_http_mixed(records=300, seconds=4, concurrency=6, workers=2, db=db,
                             progress=False)  # fmt: skip
    assert figures["backend"] == ("postgres" if db.startswith("postgresql:") else "sqlite")
    assert figures["errors"] == 0 and figures["server_errors"] == 0, figures["failures"]
    assert figures["lost"] == {"records_missing": 0, "forgotten_listed": 0, "events_missing": 0}
    assert figures["verified"] is True
    for op in OPS:
        assert figures[op]["n"] > 0, (op, figures)
        assert figures[op]["p95_ms"] >= figures[op]["p50_ms"] > 0


def test_the_mixed_check_finds_what_was_lost(tmp_path: Path) -> None:
    """The read-back counts a record said written but not listed, a forgotten one still
    listed, and an event said accepted but not listed."""
    with running_server(str(tmp_path / "lost.db")) as server:
        kept = server.client("agent").remember(actor="mixed-0", text="Sam lent me a kayak").id
        t = _Thread(0)
        t.kept = ["rec_never_written"]
        t.forgotten = [kept]
        t.events = ["evt_never_sent"]
        lost = _lost(server.url, {"Authorization": f"Bearer {server.keys['agent']}"}, [t])
    assert lost == {"records_missing": 1, "forgotten_listed": 1, "events_missing": 1}


def test_http_compare_starts_its_own_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    figures = run_http_compare(
        records=200, concurrencies=(2,), backend="postgres", requests=6, progress=False
    )
    assert figures["backend"] == "postgres"
    assert figures["http"][0]["errors"] == 0 and figures["http"][0]["retrieve_p50_ms"] > 0
    # PostgreSQL's own CPU beside each side's (read in clock ticks of 10 ms: a few
    # small requests may spend less than one)
    assert figures["inprocess_db_cpu_ms"] >= 0 and figures["http"][0]["retrieve_db_cpu_ms"] >= 0


def test_the_bench_vacuums_a_postgresql_database_it_loaded(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No autovacuum of the load runs beside the timed part: the load is vacuumed first."""
    if not db.startswith("postgresql:"):
        pytest.skip("PostgreSQL's VACUUM")
    import psycopg

    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    _prepare(db, 200, lambda _: None)
    with psycopg.connect(db) as conn:
        done = conn.execute(
            "SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL "
            "FROM pg_stat_user_tables WHERE relname IN ('records', 'record_terms')"
        ).fetchall()
    assert sorted(done) == [("record_terms", True, True), ("records", True, True)]


def test_bench_refuses_an_unknown_backend() -> None:
    with pytest.raises(InvalidInput, match="backend"):
        run_http_compare(records=100, backend="mysql", progress=False)
    with pytest.raises(InvalidInput, match="seconds"):
        run_http_mixed(records=100, seconds=0, progress=False)
