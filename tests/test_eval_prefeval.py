"""`remem eval prefeval` and the write-quality figures: construction, hit@k, checks, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from remem.embed import HashEmbedder
from remem.eval.prefeval import (
    DISTRACTORS_PER_SESSION,
    build,
    event_rows,
    first_hit,
    hits,
    load,
    packet_turns,
)
from remem.eval.quality import Made, Said, check_records, speaker_named, unknown_words
from remem.memory import Memory
from tests.cli_helpers import err

TINY = Path(__file__).parent / "data" / "prefeval-tiny.json"
LOCOMO_TINY = Path(__file__).parent / "data" / "locomo-tiny.json"
REAL = Path("/work/shared/datasets/prefeval/prefeval-dev.json")


def invoke(args: list[str]) -> tuple[int, str]:
    from remem.clikit import Ctx
    from remem.eval.cli import eval_group

    root = click.Group("remem")
    root.add_command(eval_group)
    result = CliRunner().invoke(root, args, obj=Ctx(None, "default", False))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


# -- loading and construction ---------------------------------------------------------------


def test_tiny_file_loads_items_and_user_turns_only() -> None:
    data = load(TINY)
    assert data.topics == {"food": 2, "music": 2, "travel": 2}
    # user turns only, the empty one skipped (as is the item without a statement)
    assert len(data.distractors) == 5 and data.skipped == 2
    assert not any("halves the sorted range" in d for d in data.distractors)


def test_construction_is_fixed_by_the_seed() -> None:
    data = load(TINY)
    one, again, other = build(data, 4, seed=3), build(data, 4, seed=3), build(data, 4, seed=4)
    assert one == again
    assert one != other
    # every preference is stated exactly once, actors of 4 and what is left
    stated = [it for a in one for it in a.items]
    assert sorted(stated, key=lambda i: (i.topic, i.index)) == sorted(
        data.items, key=lambda i: (i.topic, i.index)
    )
    assert [len(a.items) for a in one] == [4, 2]
    for actor in one:
        sessions = {t.session for t in actor.turns}
        assert sessions == set(range(1, len(actor.items) + 1))
        for s in sessions:
            turns = [t for t in actor.turns if t.session == s]
            # distractor user turns first, then the statement
            assert len(turns) == DISTRACTORS_PER_SESSION + 1
            assert all(t.text in data.distractors for t in turns[:-1])
            assert turns[-1].text == actor.items[s - 1].preference
        times = [t.time for t in actor.turns]
        assert times == sorted(times) and len(set(times)) == len(times)
        # off-topic questions come from topics the actor stated nothing about, as many
        # as it has on-topic ones when there are enough
        unstated = [it for it in data.items if it.topic not in {i.topic for i in actor.items}]
        assert len(actor.off_topic) == min(len(actor.items), len(unstated))
        assert set(actor.off_topic) <= set(unstated)
    rows = [r for a in one for r in event_rows(a)]
    assert len({r["event_id"] for r in rows}) == len(rows)


def test_bad_files_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"conversation": {}}]))
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(bad))
    assert e["code"] == "invalid_input" and "PrefEval-shaped" in e["message"]
    bad.write_text("{not json")
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(bad))
    assert e["code"] == "invalid_input" and "not JSON" in e["message"]
    e = err(capsys, tmp_path / "x.db", "eval", "prefeval", str(TINY), "--per-actor", "0")
    assert e["code"] == "invalid_input" and "--per-actor" in e["message"]


# -- hit@k ------------------------------------------------------------------------------------


def test_hit_is_the_first_item_standing_for_the_statement() -> None:
    ranked = [(), ("s1:2",), ("s1:3", "s1:4"), ("s1:4",)]
    assert first_hit(ranked, "s1:4") == 3
    assert first_hit(ranked, "s2:4") is None
    fig = hits([("a", 3), ("a", None), ("b", 1)], [1, 3])
    assert fig["overall"] == {"questions": 3, "hit@1": 0.3333, "hit@3": 0.6667}
    assert fig["topics"]["a"] == {"questions": 2, "hit@1": 0.0, "hit@3": 0.5}
    assert fig["topics"]["b"] == {"questions": 1, "hit@1": 1.0, "hit@3": 1.0}


def test_a_packet_is_one_ranked_list_of_records_and_events(tmp_path: Path) -> None:
    (actor,) = build(load(TINY), 6, seed=0)
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


# -- write quality ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "source", "flagged"),
    [
        ("Stronglies dislike jazz", "I strongly dislike jazz.", ("Stronglies",)),
        ("Firmlies believe in naps", "I firmly believe in naps", ("Firmlies",)),
        ("Exclusivelies buy used books", "I exclusively buy used books", ("Exclusivelies",)),
        ("Dislikes crowded beachs", "I dislike crowded beaches", ()),  # -s of beach is fine
        ("Enjoys hikign in the hills", "I enjoy hiking in the hills", ("hikign",)),
        ("Tries to avoid flying and has stopped it", "I try not to fly; I stop.", ()),
        ("Remembers that their locker is 4471", "I remember that my locker is 4471", ()),
        ("Loves their families and replies to letters", "I love my family, I reply to letters", ()),
        ("Is allergic to cats", "I am allergic to cats", ()),
    ],
)
def test_unknown_words_flag_mangling_and_pass_inflections(
    record: str, source: str, flagged: tuple[str, ...]
) -> None:
    assert unknown_words(record, [source]) == flagged


def test_check_records_counts_flagged_records_and_named_speakers() -> None:
    turns = {
        "e1": Said("Ana: I strongly dislike jazz.", "Ana"),
        "e2": Said("Ben: I adopted a puppy.", "Ben"),
        "e3": Said("no speaker here"),
    }
    made = [
        Made("r1", "Stronglies dislike jazz", ("e1",)),
        Made("r2", "Ben adopted a puppy", ("e2",)),
        Made("r3", "Here", ("e3",)),
    ]
    fig = check_records(made, turns)
    assert fig["records"] == 3 and fig["flagged_words"] == 1
    assert fig["flagged_examples"][0]["id"] == "r1"
    assert fig["flagged_examples"][0]["words"] == ["Stronglies"]
    assert fig["from_named_speaker"] == 2 and fig["speaker_named_share"] == 0.5
    assert speaker_named("Caroline went hiking", ["Caroline Smith"])
    assert not speaker_named("Went hiking with Carolina", ["Caroline"])


# -- the commands -----------------------------------------------------------------------------


def test_cli_json_document_with_baselines_and_hand_checked_bm25(tmp_path: Path) -> None:
    png = tmp_path / "chart.png"
    code, out = invoke(
        ["eval", "prefeval", str(TINY), "--json", "--embedder", "hash", "--baselines",
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
    code, out = invoke(["eval", "prefeval", str(TINY), "--embedder", "none", "--per-actor",
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


@pytest.mark.skipif(not REAL.exists(), reason="the PrefEval development file is not here")
def test_real_file_builds_reproducibly() -> None:
    data = load(REAL)
    assert len(data.items) == 495 and len(data.distractors) == 129
    actors = build(data, 10, seed=0)
    assert actors == build(data, 10, seed=0)
    assert [len(a.items) for a in actors] == [10] * 49 + [5]
    assert {it.topic for a in actors[:3] for it in a.items} != {actors[0].items[0].topic}
    assert sum(len(a.off_topic) for a in actors) > 0
