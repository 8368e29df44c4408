"""`remem eval prefeval` and the write-quality figures: construction, hit@k, checks, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.eval.prefeval import (
    DISTRACTORS_PER_SESSION,
    build,
    event_rows,
    first_hit,
    hits,
    load,
)
from remem.eval.quality import Made, Said, check_records, speaker_named, unknown_words
from tests.support.eval import PREFEVAL_TINY

REAL = Path("/work/shared/datasets/prefeval/prefeval-dev.json")


# -- loading and construction ---------------------------------------------------------------


def test_tiny_file_loads_items_and_user_turns_only() -> None:
    data = load(PREFEVAL_TINY)
    assert data.topics == {"food": 2, "music": 2, "travel": 2}
    # user turns only, the empty one skipped (as is the item without a statement)
    assert len(data.distractors) == 5 and data.skipped == 2
    assert not any("halves the sorted range" in d for d in data.distractors)


def test_construction_is_fixed_by_the_seed() -> None:
    data = load(PREFEVAL_TINY)
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


# -- hit@k ------------------------------------------------------------------------------------


def test_hit_is_the_first_item_standing_for_the_statement() -> None:
    ranked = [(), ("s1:2",), ("s1:3", "s1:4"), ("s1:4",)]
    assert first_hit(ranked, "s1:4") == 3
    assert first_hit(ranked, "s2:4") is None
    fig = hits([("a", 3), ("a", None), ("b", 1)], [1, 3])
    assert fig["overall"] == {"questions": 3, "hit@1": 0.3333, "hit@3": 0.6667}
    assert fig["topics"]["a"] == {"questions": 2, "hit@1": 0.0, "hit@3": 0.5}
    assert fig["topics"]["b"] == {"questions": 1, "hit@1": 1.0, "hit@3": 1.0}


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


@pytest.mark.skipif(not REAL.exists(), reason="the PrefEval development file is not here")
def test_real_file_builds_reproducibly() -> None:
    data = load(REAL)
    assert len(data.items) == 495 and len(data.distractors) == 129
    actors = build(data, 10, seed=0)
    assert actors == build(data, 10, seed=0)
    assert [len(a.items) for a in actors] == [10] * 49 + [5]
    assert {it.topic for a in actors[:3] for it in a.items} != {actors[0].items[0].topic}
    assert sum(len(a.off_topic) for a in actors) > 0
