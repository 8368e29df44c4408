"""`remem eval everyday`: loading, the scorer's rules, a run through the library, the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.eval.everyday import (
    EQuestion,
    event_rows,
    figures,
    load,
    packet_items,
    parse,
    run,
    score,
)
from remem.eval.metrics import Retrieved
from remem.memory.memory import Memory
from tests.support import DATA

TINY = DATA / "everyday-tiny.json"


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


def item(text: str, *turns: str) -> Retrieved:
    return Retrieved(tuple(turns), 10, text)


# -- loading ------------------------------------------------------------------------------------


def test_tiny_file_loads_turns_times_ids_and_fillers() -> None:
    data = load(TINY)
    assert [p.actor for p in data.personas] == ["t01", "t02", "t03"]
    assert data.n_turns == 30 and data.n_questions == 16
    first = data.personas[0].turns
    assert first[0].dia_id == "t01-s1-0" and first[2].dia_id == "t01-s1-2"
    assert first[2].time == datetime(2025, 3, 2, 10, 2, tzinfo=UTC)  # start + i minutes
    assert first[0].as_text().startswith("user: hiya")
    assert data.personas[0].fillers == {"t01-s1-1", "t01-s1-5", "t01-s2-1", "t01-s2-5"}
    q = data.personas[0].questions[2]
    assert (q.type, q.must, q.stale) == ("current", (("Bath",),), (("Cardiff",),))
    rows = list(event_rows(data.personas[1]))
    assert rows[3]["role"] == "assistant" and rows[3]["event_id"] == "t02-s1-3"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ([], "expected an object with 'personas'"),
        ({"personas": []}, "has no personas"),
        ({"personas": [{"sessions": []}]}, "needs an 'actor'"),
        ({"personas": [{"actor": "a", "sessions": [
            {"session": "a-s1", "start": "2025-01-01T00:00:00Z",
             "turns": [{"role": "bot", "text": "hi"}]}]}]}, "role, user or assistant"),
        ({"personas": [{"actor": "a", "sessions": [
            {"session": "a-s1", "start": "yesterday", "turns": []}]}]}, "ISO 8601"),
        ({"personas": [{"actor": "a", "questions": [
            {"type": "direct", "ask": "what?"}]}]}, "no 'must' groups"),
        ({"personas": [{"actor": "a", "questions": [
            {"type": "direct", "ask": "what?", "must": ["flat"]}]}]}, "lists of strings"),
        ({"personas": [{"actor": "a", "questions": [
            {"type": "gossip", "ask": "what?"}]}]}, "needs a type"),
    ],
)  # fmt: skip
def test_bad_files_are_clear_errors(raw: object, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        parse(raw, "f.json")


# -- the scorer -----------------------------------------------------------------------------------


def test_hit_needs_every_group_and_coverage_counts_them() -> None:
    q = EQuestion("q", "applies", "dinner?", (("vegetarian", "meat"), ("peanut",)))
    both = score(q, [item("Is VEGETARIAN"), item("user: allergic to peanuts")])
    assert both.hit and both.coverage == 1.0
    half = score(q, [item("no meat for me"), item("loves jazz")])
    assert not half.hit and half.coverage == 0.5
    empty = score(q, [])
    assert not empty.hit and empty.coverage == 0.0 and empty.items == 0


def test_current_ok_needs_the_new_state_before_a_stale_only_item() -> None:
    q = EQuestion("q", "current", "where now?", (("Porto",),), (("Lisbon",),))
    assert score(q, [item("Lives in Porto"), item("Lives in Lisbon")]).current_ok
    late = score(q, [item("Lives in Lisbon"), item("Lives in Porto")])
    assert late.hit and not late.current_ok
    # an item holding both states is not stale-only: the move itself
    assert score(q, [item("moved from Lisbon to Porto"), item("Porto flat")]).current_ok
    assert not score(q, [item("Lives in Lisbon")]).current_ok
    assert score(EQuestion("d", "direct", "?", (("x",),)), [item("x")]).current_ok is None


def test_filler_counts_items_standing_for_filler_turns_only() -> None:
    q = EQuestion("q", "offtopic", "sky?")
    fillers = frozenset({"s-1", "s-3"})
    s = score(
        q,
        [item("assistant: Got it!", "s-1"), item("record", "s-1", "s-2"), item("x", "s-3"),
         item("user: hi", "s-2"), item("pinned")],
        fillers,
    )  # fmt: skip
    assert s.fillers == 2 and s.hit and s.current_ok is None
    fig = figures([s, score(EQuestion("a", "direct", "?", (("hi",),)), [item("user: hi", "s-2")])])
    assert fig["all"]["filler_per_100"] == 100.0  # 2 filler items over 2 packets
    assert fig["types"]["offtopic"]["mean_items"] == 5.0
    assert "hit" not in fig["types"]["offtopic"]  # off topic has nothing to hit
    assert fig["answerable"]["hit"] == 1.0 and fig["answerable"]["empty"] == 0


def test_a_real_packet_scores_a_hit_and_a_miss(tmp_path: Path) -> None:
    data = load(TINY)
    tomasz = data.personas[1]
    with Memory.open(tmp_path / "m.db", tenant="t", embedder=HashEmbedder()) as memory:
        memory.add_events(event_rows(tomasz))
        memory.process()
        asked = EQuestion("p", "episode", "passport taxi consulate", (("taxi", "consulate"),))
        packet = memory.recall(actor="t02", query=asked.ask)
        items = packet_items(packet)
        assert any("taxi" in it.text for it in items)
        assert score(asked, items, tomasz.fillers).hit
        # the same packet cannot answer what Tomasz never said
        never = EQuestion("n", "direct", "passport taxi consulate", (("Lisbon",),))
        assert not score(never, items, tomasz.fillers).hit


# -- the run and the CLI ----------------------------------------------------------------------


def test_run_with_baselines_scores_the_same_questions(tmp_path: Path) -> None:
    result = run(TINY, embedder=HashEmbedder(), with_baselines=True, workdir=tmp_path)
    assert list(result["systems"]) == ["remem", "dense", "bm25"]
    assert result["dataset"]["types"] == {
        "applies": 4, "direct": 3, "current": 3, "episode": 3, "offtopic": 3
    }  # fmt: skip
    bm25 = result["systems"]["bm25"]
    # hand-checked: "Which laptop should I go for?" shares "laptop" with the turn saying
    # 900 pounds; "Why is the sky blue?" shares no word with any turn
    assert "t02-q2" not in bm25["misses"]
    assert bm25["types"]["offtopic"]["mean_items"] == 0.0
    dense = result["systems"]["dense"]
    assert dense["answerable"]["empty"] == 0  # top k of the raw turns is never empty
    assert result["systems"]["remem"]["processed"]["jobs_done"] > 0


def test_cli_prints_tables_and_json(tmp_path: Path) -> None:
    code, out = invoke(["eval", "everyday", str(TINY), "--embedder", "hash", "--baselines"])
    assert code == 0, out
    assert "Hit rate" in out and "answerable" in out and "filler per" in out
    assert "remem" in out and "dense" in out and "bm25" in out
    code, out = invoke(["eval", "everyday", str(TINY), "--json", "--embedder", "none", "--k", "3"])
    assert code == 0, out
    doc = json.loads(out)
    assert doc["k"] == 3 and doc["budget"] == 1000
    assert list(doc["systems"]) == ["remem"]
    assert doc["systems"]["remem"]["answerable"]["mean_items"] <= 3
    assert "no embedder" in doc["notes"][0]


def test_cli_rejects_a_file_of_another_shape(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"conversation": {}}]))
    with pytest.raises(InvalidInput, match="not an everyday-shaped file"):
        invoke(["eval", "everyday", str(other), "--embedder", "none"])
