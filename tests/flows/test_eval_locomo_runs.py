"""The LoCoMo evaluation run end to end: remem answering from a SQLite file, and the
`remem eval locomo` command (the loaders and scoring, pure, are in
tests/unit/test_eval_locomo.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.eval.locomo import Dataset, load
from remem.eval.runner import RememBackend, RememSystem
from tests.support.eval import LOCOMO_TINY, conv


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load(LOCOMO_TINY)


@pytest.mark.parametrize("mode", ["events", "records", "both"])
def test_remem_answers_from_its_own_conversation_only(
    data: Dataset, tmp_path: Path, mode: str
) -> None:
    backend = RememBackend(tmp_path / "e.db", HashEmbedder(), process=mode != "events")
    system = RememSystem(backend, mode)
    try:
        for c in data.conversations:
            assert system.ingest(c) > 0
        one, two = conv(data, "tiny-1"), conv(data, "tiny-2")
        known = {t.dia_id for t in two.turns}
        got = system.search(two, "beagle cello puppy fridge vet", 20)
        assert got and all(t in known for r in got for t in r.turns)
        if mode != "records":
            top = system.search(one, "How many bowls did Ana sell?", 3)
            assert "D2:4" in {t for r in top for t in r.turns}
        if mode != "events":
            assert sum(backend.processed[one.actor].values()) > 0
    finally:
        backend.close()
    assert system.name == f"remem:{mode}"
    with pytest.raises(ValueError, match="mode"):
        RememSystem(backend, "nope")


def invoke(args: list[str]) -> tuple[int, str]:
    from remem.cli.eval import eval_group
    from remem.cli.kit import Ctx

    # the help options remem's own root gives: click caches a command's help option
    # on first use, so a bare root here would change `remem eval ... --help` for
    # every later test (tests/hygiene/test_docs.py renders it)
    root = click.Group("remem", context_settings={"help_option_names": ["-h", "--help"]})
    root.add_command(eval_group)
    result = CliRunner().invoke(root, args, obj=Ctx(None, "default", False))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_cli_json_document_has_figures_for_remem_and_baselines(tmp_path: Path) -> None:
    png = tmp_path / "chart.png"
    code, out = invoke(
        ["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "hash", "--baselines",
         "--k", "1,3", "--budget", "40", "--png", str(png)]
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert set(doc["systems"]) == {"remem:both", "bm25", "dense", "bm25+dense"}
    assert doc["ks"] == [1, 3] and doc["budget"] == 40
    assert doc["dataset"] == doc["dataset"] | {"conversations": 2, "turns": 13, "questions": 12}
    assert doc["dataset"]["skipped"]["malformed_evidence"] == 2
    assert doc["config"]["mode"] == "both" and doc["config"]["embedder"] == "hash-256"
    assert doc["extraction"]["jobs_done"] == 13
    for fig in doc["systems"].values():
        overall = fig["categories"]["overall"]
        assert {"recall@1", "recall@3", "hit@1", "hit@3", "budget_recall", "compression"} <= set(
            overall
        )
        assert 0 <= overall["recall@1"] <= overall["recall@3"] <= 1
        assert 0 < overall["compression"] < 1
        assert set(fig["latency"]) == {"p50_ms", "p95_ms", "mean_ms"}
        assert fig["ingest_seconds"] >= 0 and "5" in fig["categories"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert doc["png"] is None and any("matplotlib" in n for n in doc["notes"])
    else:
        assert doc["png"] == str(png) and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_human_report_and_modes(tmp_path: Path) -> None:
    code, out = invoke(["eval", "locomo", str(LOCOMO_TINY), "--embedder", "none",
                        "--mode", "events", "--limit-questions", "3"])  # fmt: skip
    assert code == 0, out
    assert "Evidence recall@k" in out and "remem:events" in out and "evidence skipped" in out
    code, out = invoke(["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "none",
                        "--mode", "records"])  # fmt: skip
    doc = json.loads(out)
    assert list(doc["systems"]) == ["remem:records"] and doc["notes"]


def test_cli_refuses_bad_k() -> None:
    with pytest.raises(InvalidInput, match="--k"):
        invoke(["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "none", "--k", "5,x"])
    with pytest.raises(InvalidInput, match="between 1 and 1000"):
        invoke(["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "none", "--k", "0"])


def test_cli_measures_packets_on_and_off_topic() -> None:
    # off topic: each question asked of the other conversation's actor
    code, out = invoke(["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "none"])
    assert code == 0, out
    packets = json.loads(out)["packets"]
    on, off = packets["on_topic"], packets["off_topic"]
    assert packets["k"] == 10 and on["questions"] == off["questions"] == 12
    assert 0 <= off["mean_items"] < on["mean_items"] <= 10
    assert off["mean_tokens"] < on["mean_tokens"]
    code, out = invoke(["eval", "locomo", str(LOCOMO_TINY), "--embedder", "none"])
    assert code == 0, out
    assert "remem packets at k=10" in out and "off topic" in out
