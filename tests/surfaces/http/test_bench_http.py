"""`run_http_bench` against a real `remem serve` on loopback, with tiny counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.errors import InvalidInput
from remem.eval.bench.http import run_http_bench, run_http_compare


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
    figures = run_http_compare(
        records=300, concurrencies=(1, 3), workers=2, requests=12, progress=False
    )
    assert figures["records"] == 300 and figures["workers"] == 2
    assert figures["inprocess_recall_p50_ms"] > 0
    assert [row["concurrency"] for row in figures["http"]] == [1, 3]
    for row in figures["http"]:
        assert row["errors"] == 0, row
        assert row["retrieve_p95_ms"] >= row["retrieve_p50_ms"] > 0
        ratio = row["retrieve_p50_ms"] / figures["inprocess_recall_p50_ms"]
        assert row["p50_to_inprocess"] == pytest.approx(ratio, abs=0.01)


def test_http_compare_refuses_unbounded_counts() -> None:
    with pytest.raises(InvalidInput, match="records"):
        run_http_compare(records=10, progress=False)
    with pytest.raises(InvalidInput, match="concurrency"):
        run_http_compare(records=100, concurrencies=(0,), progress=False)
