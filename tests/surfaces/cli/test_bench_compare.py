"""`remem bench --compare --sizes`: baselines, ratios and cold figures, at toy sizes.

Speed is not asserted (the machine's load decides it): these check that the
command runs through the CLI, reports one set of figures per size with the
baselines measured beside recall, and refuses what it cannot do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.cli.main import main
from tests.support.cli import err


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # the cold subprocesses would load MiniLM; the hash embedder is enough here
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def test_compare_over_two_sizes_reports_baselines_ratios_and_cold_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["bench", "--sizes", "200,400", "--queries", "10", "--events", "100", "--compare"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [run["records"] for run in out["sizes"]] == [200, 400]
    for run in out["sizes"]:
        assert set(run["baselines"]) == {"embed", "numpy_scan", "bm25"}
        for part in run["baselines"].values():
            assert set(part) == {"p50_ms", "p95_ms"} and 0 <= part["p50_ms"] <= part["p95_ms"]
        assert set(run["ratios"]) == {
            "recall_p50_to_embed_plus_scan", "recall_p95_to_embed_plus_scan",
            "first_recall_to_embed_plus_scan",
        }  # fmt: skip
        assert all(r > 0 for r in run["ratios"].values())
        assert run["cold_first_recall_ms"] > 0 and run["cold_open_ms"] > 0
        assert run["cold_first_recall_after_add_ms"] > 0 and run["first_recall_after_add_ms"] > 0
        assert run["cold_recall_s"] > 0 and run["vector_files_mb"] >= 0


def test_sizes_refuses_a_named_database_and_bad_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "b.db"
    assert "leave out --db" in err(capsys, db, "bench", "--sizes", "200,300")["message"]
    assert "record counts" in err(capsys, db, "bench", "--sizes", "ten")["message"]
    assert "at least 100" in err(capsys, db, "bench", "--sizes", "50")["message"]
    assert not db.exists()


def test_both_backends_goes_with_records_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "b.db"
    for args in (["--http"], ["--http", "--records", "200", "--mixed"]):
        message = err(capsys, db, "bench", *args, "--backend", "both")["message"]
        assert "--backend both goes with --http --records N" in message
    assert not db.exists()
