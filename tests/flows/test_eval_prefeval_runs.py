"""The PrefEval evaluation run end to end: packets from a SQLite file and the
`remem eval prefeval` command (the loaders and scoring, pure, are in
tests/unit/test_eval_prefeval.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from remem.embed import HashEmbedder
from remem.eval.prefeval import (
    build,
    event_rows,
    first_hit,
    load,
    packet_turns,
)
from remem.memory.memory import Memory
from tests.support.cli import err
from tests.support.eval import LOCOMO_TINY, PREFEVAL_TINY


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


def test_bad_files_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"conversation": {}}]))
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(bad))
    assert e["code"] == "invalid_input" and "PrefEval-shaped" in e["message"]
    bad.write_text("{not json")
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(bad))
    assert e["code"] == "invalid_input" and "not JSON" in e["message"]
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(PREFEVAL_TINY), "--per-actor", "0")
    assert e["code"] == "invalid_input" and "--per-actor" in e["message"]


def test_a_packet_is_one_ranked_list_of_records_and_events(tmp_path: Path) -> None:
    (actor,) = build(load(PREFEVAL_TINY), 6, seed=0)
    vinyl = next(i for i, it in enumerate(actor.items) if "vinyl" in it.question)
    statement = actor.event_id(actor.statement(vinyl).dia_id)
    with Memory.open(tmp_path / "m.db", tenant="t", embedder=HashEmbedder()) as memory:
        memory.import_events(event_rows(actor))
        memory.process()
        packet = memory.recall(actor=actor.actor, query=actor.items[vinyl].question, k=10)
    ranked = packet_turns(actor, packet)
    assert len(ranked) == len(packet.records)
    rank = first_hit(ranked, actor.statement(vinyl).dia_id)
    assert rank is not None
    # the item at that rank is the statement's event or a record made from it
    assert statement in packet.records[rank - 1].source["event_ids"]
    assert not any(statement in it.source["event_ids"] for it in packet.records[: rank - 1])


def test_cli_json_document_with_baselines_and_hand_checked_bm25(tmp_path: Path) -> None:
    png = tmp_path / "chart.png"
    code, out = invoke(
        ["eval", "prefeval", str(PREFEVAL_TINY), "--json", "--embedder", "hash", "--baselines",
         "--per-actor", "2,6", "--k", "1,3", "--png", str(png)]
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert set(doc) >= {"dataset", "ks", "sizes", "config", "png", "notes"}
    assert doc["ks"] == [1, 3] and list(doc["sizes"]) == ["2", "6"]
    assert doc["dataset"]["preferences"] == 6 and doc["dataset"]["distractor_user_turns"] == 5
    for size in ("2", "6"):
        fig = doc["sizes"][size]
        assert list(fig["systems"]) == ["remem", "bm25", "dense", "bm25+dense"]
        assert fig["questions"] == 6 and fig["events"] == 6 * 4
        for s in fig["systems"].values():
            assert set(s["topics"]) == {"food", "music", "travel"}
            assert 0 <= s["overall"]["hit@1"] <= s["overall"]["hit@3"] <= 1
            assert set(s["latency"]) == {"p50_ms", "p95_ms", "mean_ms"}
        # only the peanuts and vinyl questions share a word with their statement and no
        # other turn: BM25 finds those two first and nothing for the other four
        bm25 = fig["systems"]["bm25"]
        assert bm25["overall"]["hit@1"] == bm25["overall"]["hit@3"] == 0.3333
        assert bm25["topics"]["travel"]["hit@3"] == 0.0
        assert bm25["topics"]["food"]["hit@1"] == bm25["topics"]["music"]["hit@1"] == 0.5
        q = fig["write_quality"]
        assert q["statements"] == 6 and q["distractor_turns"] == 18
        assert 0 <= q["statement_share"] <= 1 and q["records"] >= q["statements_with_record"]
        assert set(q) >= {"records_per_100_distractor_turns", "flagged_words", "flagged_examples"}
    # one actor per topic at 2 a head: every question has an off-topic twin; at 6 none
    assert doc["sizes"]["2"]["off_topic_questions"] == 6
    assert doc["sizes"]["6"]["off_topic_questions"] == 0
    on = doc["sizes"]["2"]["packets"]["on_topic"]
    assert on["questions"] == 6 and 0 < on["mean_items"] <= 3 and on["mean_tokens"] > 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert doc["png"] is None and any("matplotlib" in n for n in doc["notes"])
    else:
        assert doc["png"] == str(png) and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_human_report_lexical_and_limited() -> None:
    code, out = invoke(["eval", "prefeval", str(PREFEVAL_TINY), "--embedder", "none", "--per-actor",
                        "2", "--limit-questions", "1"])  # fmt: skip
    assert code == 0, out
    assert "2 preferences per actor: 3 actors, 3 questions" in out
    assert "hit@5 per topic" in out and "off topic" in out and "statements" in out
    assert "no embedder" in out


def test_help_names_the_options() -> None:
    code, out = invoke(["eval", "prefeval", "--help"])
    assert code == 0
    for option in ("--per-actor", "--k", "--baselines", "--embedder", "--limit-questions",
                   "--seed", "--png", "--json"):  # fmt: skip
        assert option in out


def test_locomo_extraction_reports_write_quality() -> None:
    code, out = invoke(["eval", "locomo", str(LOCOMO_TINY), "--json", "--embedder", "hash"])
    assert code == 0, out
    ex = json.loads(out)["extraction"]
    assert ex["records"] == ex["records_added"] > 0
    assert ex["records_per_100_turns"] == round(100 * ex["records"] / 13, 2)
    # every LoCoMo turn has a speaker, so every record counts for the share
    assert ex["from_named_speaker"] == ex["records"]
    assert ex["speaker_named_share"] == round(ex["name_their_speaker"] / ex["records"], 4)
    assert isinstance(ex["flagged_examples"], list)
