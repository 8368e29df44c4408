"""`remem eval locomo`: lenient loading, metrics on hand-checked rankings, baselines, CLI."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.eval.baselines import BM25Index, BM25System, DenseSystem, RRFSystem, rrf
from remem.eval.locomo import (
    Conversation,
    Dataset,
    Skipped,
    canonical_dia_id,
    event_rows,
    load,
    parse,
    parse_evidence,
    parse_session_date,
)
from remem.eval.metrics import Retrieved, by_category, latency, score_question
from remem.eval.runner import run, search_depth
from tests.support.eval import LOCOMO_TINY, conv


@pytest.fixture(scope="module")
def data() -> Dataset:
    return load(LOCOMO_TINY)


# -- loading ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 Jan, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("10:00 AM on 17 March 2024", datetime(2024, 3, 17, 10, 0, tzinfo=UTC)),
        ("8 May 2023", datetime(2023, 5, 8, tzinfo=UTC)),
        ("not a date", None),
        ("1:56 pm on 31 February, 2023", None),
        (None, None),
    ],
)
def test_session_dates_are_read_leniently(text: str | None, expected: datetime | None) -> None:
    assert parse_session_date(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("D3:7", "D3:7"), ("D30:05", "D30:5"), (" D1:1 ", "D1:1"), ("D", None), ("D:11:26", None)],
)
def test_dia_ids_are_unpadded_and_malformed_ones_refused(raw: str, expected: str | None) -> None:
    assert canonical_dia_id(raw) == expected


def test_evidence_splits_several_ids_and_counts_what_it_skips() -> None:
    skipped = Skipped()
    known = {"D8:6", "D9:17", "D30:5", "D1:1"}
    got = parse_evidence(["D8:6; D9:17", "D30:05", "D", "D:11:26", "D99:1", "D8:6"], known, skipped)
    assert got == ("D8:6", "D9:17", "D30:5")
    assert skipped.malformed_evidence == ["D", "D:11:26"]
    assert skipped.missing_evidence == ["D99:1"]
    assert parse_evidence("D1:1", known, skipped) == ("D1:1",)
    assert parse_evidence(None, known, skipped) == ()


def test_tiny_file_loads_sessions_turns_captions_and_questions(data: Dataset) -> None:
    one, two = conv(data, "tiny-1"), conv(data, "tiny-2")
    assert len(data.conversations) == 2 and data.n_turns == 13
    # session_4 has a date and no turns: it is not a session
    assert sorted(one.session_dates) == [1, 2, 3]
    assert one.speakers == ("Ana", "Ben")
    biscuit = one.turns[1]
    assert biscuit.dia_id == "D1:2" and biscuit.caption == "a photo of a small beagle on a couch"
    assert biscuit.as_text() == (
        "Ben: Nice! I adopted a puppy named Biscuit last week. "
        "[image: a photo of a small beagle on a couch]"
    )
    # turns keep their order inside a session and sessions follow their dates
    times = [t.time for t in one.turns]
    assert times == sorted(times) and times[0] == datetime(2024, 3, 3, 14, 15, 1, tzinfo=UTC)
    # an unreadable session date falls back to the day after the previous session
    assert two.session_dates[2] == datetime(2024, 6, 2, 8, 5, tzinfo=UTC)
    assert data.skipped.bad_dates == 1
    qs = {q.text: q for q in one.questions}
    assert qs["Which instrument did Ben play at the wedding, and when did he start learning it?"]\
        .evidence == ("D1:4", "D3:2")  # fmt: skip
    assert qs["How many bowls did Ana sell?"].evidence == ("D2:4",)
    assert qs["How many bowls did Ana sell?"].answer == "3"
    assert qs["What hobby might Ana enjoy besides running?"].evidence == ("D1:1",)
    assert qs["What did Ana cook on Sunday?"].evidence == ()
    assert qs["Did Ben run a half marathon?"].answer == "yes, in May"
    # "D:2:2" was the only evidence of its question, which is then not scored
    assert data.skipped.malformed_evidence == ["D", "D:2:2"]
    assert data.skipped.missing_evidence == ["D9:9"]


def test_event_rows_are_one_actor_with_unique_ids_and_speaker_metadata(data: Dataset) -> None:
    one = conv(data, "tiny-1")
    rows = list(event_rows(one))
    assert {r["actor"] for r in rows} == {"tiny-1"}
    assert rows[1]["event_id"] == "tiny-1:D1:2" and one.dia_id("tiny-1:D1:2") == "D1:2"
    assert one.dia_id("tiny-2:D1:2") is None
    assert rows[1]["metadata"]["speaker"] == "Ben" and rows[1]["role"] == "user"
    assert rows[0]["session"] == "tiny-1:s1" and rows[-1]["session"] == "tiny-1:s3"
    alternate = [r["role"] for r in event_rows(one, roles="alternate")]
    assert alternate[:2] == ["user", "assistant"]


def test_not_a_locomo_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(InvalidInput, match="no 'conversation' object"):
        load(bad)
    bad.write_text("[1, 2")
    with pytest.raises(InvalidInput, match="not JSON"):
        load(bad)
    with pytest.raises(InvalidInput, match="expected a list"):
        parse([])


def test_duplicate_sample_ids_still_get_distinct_actors() -> None:
    item = {"sample_id": "x", "conversation": {"session_1": [{"speaker": "A", "text": "hi"}]}}
    data = parse([item, item])
    assert [c.actor for c in data.conversations] == ["x", "x-1"]
    assert data.conversations[0].turns[0].dia_id == "D1:1"  # a turn without dia_id gets one


# -- metrics --------------------------------------------------------------------------------


def items(*turns: tuple[str, ...] | str, tokens: int = 10) -> list[Retrieved]:
    return [Retrieved((t,) if isinstance(t, str) else t, tokens) for t in turns]


def test_recall_hit_budget_and_compression_on_a_hand_checked_ranking() -> None:
    ranked = items("D1:1", "D5:5", ("D2:2", "D3:3"), "D4:4", "D6:6")
    s = score_question(ranked, ["D2:2", "D4:4", "D9:9"], category=1, ks=[1, 3, 5],
                       budget=35, conversation_tokens=700)  # fmt: skip
    assert s.recall == {1: 0.0, 3: pytest.approx(1 / 3), 5: pytest.approx(2 / 3)}
    assert s.hit == {1: 0.0, 3: 0.0, 5: 0.0}
    # 35 tokens hold the first three items (10 each): only D2:2 is in them
    assert s.budget_recall == pytest.approx(1 / 3) and s.budget_tokens == 30
    assert s.compression == pytest.approx(30 / 700)
    full = score_question(ranked, ["D3:3", "D1:1"], category=4, ks=[3], budget=10,
                          conversation_tokens=100)  # fmt: skip
    assert full.recall == {3: 1.0} and full.hit == {3: 1.0}
    assert full.budget_recall == 0.5 and full.budget_hit == 0.0


def test_budget_packing_skips_a_long_item_and_keeps_later_short_ones() -> None:
    ranked = [Retrieved(("D1:1",), 50), Retrieved(("D1:2",), 5)]
    s = score_question(ranked, ["D1:2"], category=2, ks=[1], budget=20, conversation_tokens=100)
    assert s.recall == {1: 0.0} and s.budget_recall == 1.0 and s.budget_tokens == 5


def test_categories_overall_leaves_out_adversarial() -> None:
    def one(cat: int, hit: bool) -> object:
        return score_question(items("a" if hit else "b"), ["a"], category=cat, ks=[1],
                              budget=100, conversation_tokens=100)  # fmt: skip

    scores = [one(1, True), one(2, False), one(4, True), one(4, False), one(5, True)]
    figs = by_category(scores, [1])  # type: ignore[arg-type]
    assert figs["overall"]["questions"] == 4 and figs["overall"]["recall@1"] == 0.5
    assert figs["5"]["recall@1"] == 1.0 and figs["4"]["recall@1"] == 0.5
    assert figs["3"] == {"questions": 0}
    with pytest.raises(ValueError, match="without evidence"):
        score_question(items("a"), [], category=1, ks=[1], budget=1, conversation_tokens=1)


def test_latency_percentiles_and_search_depth() -> None:
    lat = latency([float(i) for i in range(1, 101)])
    assert lat["p50_ms"] == pytest.approx(50.5) and lat["p95_ms"] == pytest.approx(95.05)
    assert latency([]) == {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
    assert search_depth([5, 10, 20], 1000) == 100 and search_depth([200], 100) == 200


class Scripted:
    """A system whose rankings the test writes: question text -> turn ids."""

    name = "scripted"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.ingested: list[str] = []

    def ingest(self, conv: Conversation) -> float:
        self.ingested.append(conv.sample_id)
        return 0.5

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        return items(*self.answers.get(question, []))[:depth]


def test_runner_scores_a_scripted_system_per_category(data: Dataset) -> None:
    system = Scripted(
        {
            "What is the name of Ben's puppy?": ["D1:2"],
            "What did Ben's puppy chew?": ["D2:1", "D9:9", "D1:2"],
            "When did Ana run twenty kilometres?": ["D1:1", "D3:1"],
            "Did Ben run a half marathon?": ["D1:3"],
        }
    )
    result = run(data, [system], ks=[1, 3], budget=15)
    fig = result["systems"]["scripted"]
    assert system.ingested == ["tiny-1", "tiny-2"] and fig["ingest_seconds"] == 1.0
    cats = fig["categories"]
    # single-hop: puppy 1/1, bowls 0, pottery 0, beagle 0, Pepper 0
    assert cats["4"]["questions"] == 5 and cats["4"]["recall@1"] == pytest.approx(0.2)
    # multi-hop: the chew question gets D2:1 at 1 and D1:2 at 3; the cello one nothing
    assert cats["1"]["recall@1"] == pytest.approx(0.25) and cats["1"]["recall@3"] == 0.5
    assert cats["1"]["hit@3"] == 0.5
    assert cats["2"]["recall@1"] == 0.0 and cats["2"]["recall@3"] == 1.0
    assert cats["2"]["budget_recall"] == 0.0  # one 10-token item fits in 15
    assert cats["5"]["recall@1"] == 1.0 and cats["overall"]["questions"] == 9
    assert fig["questions_unscored"] == 2  # no usable evidence id
    assert result["dataset"]["questions"] == 12
    limited = run(data, [Scripted({})], ks=[1], budget=15, limit_questions=1)
    assert limited["dataset"]["questions"] == 2


# -- baselines ----------------------------------------------------------------------------


def test_bm25_ranks_by_rare_words_and_ignores_function_words() -> None:
    index = BM25Index(["the cat sat", "the dog sat on the mat", "a bird", "the the the"])
    assert index.rank("cat", 5) == [0]
    assert index.rank("which dog sat?", 5)[:2] == [1, 0]
    assert index.rank("zebra", 5) == []
    assert rrf([[1, 2, 3], [3, 1]]) == [1, 3, 2]


def test_baselines_run_and_find_the_obvious_turn(data: Dataset) -> None:
    emb = HashEmbedder()
    one = conv(data, "tiny-1")
    for system in (BM25System(), DenseSystem(emb), RRFSystem(emb)):
        assert system.ingest(one) >= 0
        got = system.search(one, "What is the name of Ben's puppy Biscuit?", 3)
        assert 1 <= len(got) <= 3 and all(len(r.turns) == 1 for r in got)
        assert got[0].turns == ("D1:2",) or "D1:2" in {t for r in got for t in r.turns}
    bm25 = BM25System()
    bm25.ingest(one)
    # plain BM25 does not stem: "sell" finds "Do you sell them?", not "I sold three bowls"
    assert bm25.search(one, "How many bowls did Ana sell?", 1)[0].turns == ("D2:3",)
    assert bm25.search(one, "bowls sold at the market", 1)[0].turns == ("D2:4",)


# -- remem as a system ---------------------------------------------------------------------


# -- the command ---------------------------------------------------------------------------


# -- prototypes of proposed recall changes -----------------------------------------------------


def test_neighbours_stay_inside_a_session_and_speaker_needs_one_name(data: Dataset) -> None:
    import numpy as np

    from remem.eval.prototypes import named_speaker, with_neighbours

    got = with_neighbours(np.array([1.0, 0.0, 0.0, 4.0]), [1, 1, 2, 2], 0.5)
    assert got.tolist() == [1.0, 0.5, 2.0, 4.0]
    one = conv(data, "tiny-1")
    assert named_speaker(one, "Where did ana take a class?") == "Ana"
    assert named_speaker(one, "Did Ana and Ben meet?") is None
    assert named_speaker(one, "Where did Banana go?") is None


def test_prototype_ladder_runs_and_neighbours_reach_the_answer_turn(data: Dataset) -> None:
    from remem.eval.baselines import TurnVectors
    from remem.eval.prototypes import ProposedEvents, prototype_systems

    ladder = prototype_systems(TurnVectors(HashEmbedder()))
    assert [s.name for s in ladder] == [
        "proto:lex", "proto:lex+vec", "proto:lex+vec+nb", "proto:lex+vec+nb+spk"
    ]  # fmt: skip
    result = run(data, ladder, ks=[1, 3], budget=100)
    assert set(result["systems"]) == {s.name for s in ladder}
    one = conv(data, "tiny-1")
    lexical, neighbours = ProposedEvents(None), ProposedEvents(None, neighbours=True)
    for system in (lexical, neighbours):
        system.ingest(one)
    # "Do you sell them?" matches; the answer after it shares no word but is its neighbour
    assert "D2:4" not in {t for r in lexical.search(one, "sell", 5) for t in r.turns}
    assert "D2:4" in {t for r in neighbours.search(one, "sell", 5) for t in r.turns}
