"""Ranking and packing as pure functions of what recall gathered (no store, no model).

Each case builds a small `Gathered` value by hand: the hits a store would have
returned, the records and events it would have fetched. `rank` orders it;
`pack_packet` applies the relevance floor, k and the budget.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from remem.model import (
    Authority,
    Event,
    Kind,
    PacketItem,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)
from remem.policy.applies import asking_words
from remem.recall.applies import Applicable
from remem.recall.engine import pack_packet
from remem.recall.events import ASKS_ONLY_SHARE, LENDER_WORD_SHARE, GatheredEvents, only_asks
from remem.recall.floor import FLOOR, WORD_FLOOR, within_k
from remem.recall.fusion import (
    AGREEING_COSINE,
    WORDS_ALONE,
    corroboration,
    stem,
    without_asking,
    word_evidence,
)
from remem.recall.gather import Gathered
from remem.recall.items import Ranked, event_item, record_item
from remem.recall.query import SPEAKER_BONUS, understand, with_speakers
from remem.recall.rank import rank
from remem.recall.request import RecallRequest
from remem.store.roles import Hit, Scope

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SCOPE = Scope("t", "alice")


def record(rid: str, text: str, *, events: tuple[str, ...] = (), days: float = 0,
           kind: Kind = Kind.SEMANTIC, status: Status = Status.ACTIVE,
           superseded_by: str | None = None) -> Record:  # fmt: skip
    when = NOW - timedelta(days=30 - days)
    return Record(
        id=rid, tenant="t", actor="alice", namespace="/tenants/t/actors/alice", kind=kind,
        text=text, source=Source("event" if events else "explicit", events),
        authority=Authority.CONFIRMED if not events else Authority.INFERRED,
        sensitivity=Sensitivity.NORMAL, valid_from=when, created_at=when, updated_at=when,
        status=status, superseded_by=superseded_by,
    )  # fmt: skip


def event(eid: str, text: str, *, days: float = 0, session: str = "s1",
          speaker: str | None = None, role: Role = Role.USER) -> Event:  # fmt: skip
    meta = {"speaker": speaker} if speaker else {}
    return Event(eid, "t", "alice", session, role, text, NOW - timedelta(days=30 - days),
                 meta)  # fmt: skip


def gathered(query: str, *, records: tuple[Record, ...] = (), words: tuple[str, ...] = (),
             cosines: dict[str, float] | None = None, events: GatheredEvents | None = None,
             vectors: bool = True, k: int = 10, budget: int = 1000,
             sources: tuple[Event, ...] = ()) -> Gathered:  # fmt: skip
    """What a store would have handed back: `words` are the ids its word search found;
    the cosines are on MiniLM's scale."""
    return Gathered(
        request=RecallRequest(SCOPE, query, k=k, budget=budget, explain=True),
        query=understand(query),
        lexical=tuple(Hit(i, 1.0) for i in words),
        vector=tuple((cosines or {}).items()),
        records={r.id: r for r in records},
        sources={e.id: e for e in sources},
        events=events,
        vectors=vectors,
    )


def order(g: Gathered) -> list[str]:
    return [it.id for it in rank(g, NOW).items]


# word evidence


def test_a_word_counts_by_how_few_of_the_gathered_texts_hold_it() -> None:
    texts = {"a": "the cake recipe", "b": "try the cake", "c": "cake again", "d": "more cake"}
    ev = word_evidence("cake recipe", texts)
    assert ev["a"] == pytest.approx(1.0)  # holds every word of the query
    assert ev["b"] == pytest.approx(ev["c"])
    assert ev["b"] < 0.5  # the common word weighs less than half
    alone = word_evidence("cake recipe", {"a": "recipe", "b": "cake"})
    assert alone["a"] == pytest.approx(alone["b"])  # as rare as each other: equal halves


def test_one_shared_word_of_a_long_question_stays_weak() -> None:
    q = "Can you suggest some dinner recipes I could try this week?"
    ev = word_evidence(q, {"f": "Tries to avoid mass-produced furniture", "x": "hello there"})
    assert 0 < ev["f"] < 0.3
    assert "x" not in ev


def test_query_words_no_text_holds_still_weigh() -> None:
    ev = word_evidence("money for the trip", {"a": "the trip is in April"})
    assert 0.3 < ev["a"] < 0.7


def test_stems_match_inflections() -> None:
    assert stem("tries") == stem("try")
    assert stem("painted") == stem("painting") == stem("paints") == stem("paint")
    assert stem("recipes") == stem("recipe")
    assert stem("running") == stem("run") and stem("stopped") == stem("stop")
    assert stem("added") == stem("add")
    assert stem("glass") == "glass"


def test_a_query_of_function_words_only_still_matches_them() -> None:
    assert word_evidence("what is it", {"a": "what it is"}) == {"a": pytest.approx(1.0)}


# fusion: the case


def test_a_strong_semantic_match_outranks_a_one_word_overlap() -> None:
    q = "Can you suggest some dinner recipes I could try?"
    g = gathered(
        q,
        records=(
            record("furniture", "Tries to avoid mass-produced furniture"),
            record("vegan", "Only eats meals free from any animal-derived ingredients"),
        ),
        words=("furniture",),
        cosines={"vegan": 0.45, "furniture": 0.05},
    )
    assert order(g) == ["vegan", "furniture"]


def test_generic_words_of_a_request_count_only_as_far_as_the_meaning_agrees() -> None:
    # "activities" and "suggest" are half the request's words, yet the small talk
    # holding them means something else (cosine 0.05); the stated constraint
    # shares no word and is the closest in meaning
    q = "What outdoor activities would you suggest in Switzerland?"
    g = gathered(
        q,
        records=(
            record("chat", "What activities do you suggest for kids?"),
            record("heights", "Is uncomfortable with heights"),
        ),
        words=("chat",),
        cosines={"chat": 0.05, "heights": 0.30},
    )
    assert order(g) == ["heights", "chat"]


def test_word_evidence_counts_in_full_when_meaning_or_most_words_agree() -> None:
    assert corroboration(0.2, AGREEING_COSINE) == 1.0  # the meaning agrees
    assert corroboration(WORDS_ALONE, 0.0) == 1.0  # most of the query's words
    assert corroboration(0.2, None) == 1.0  # no embedder: words are all there is
    # otherwise in proportion to the nearer of the two
    assert corroboration(0.0, AGREEING_COSINE / 2) == pytest.approx(0.5)
    assert corroboration(WORDS_ALONE / 4, AGREEING_COSINE / 2) == pytest.approx(0.5)
    assert corroboration(WORDS_ALONE / 2, -0.3) == pytest.approx(0.5)


def test_a_word_match_the_vector_search_missed_is_judged_below_all_it_found() -> None:
    # "chat" was found by its words only: its cosine is below the lowest the
    # vector search returned (0.2), so its words count by the larger of
    # 0.2 / AGREEING_COSINE and their share / WORDS_ALONE
    q = "What outdoor activities would you suggest in Switzerland?"
    g = gathered(
        q,
        records=(
            record("chat", "Any outdoor activities for kids, on a rainy day?"),
            record("pref", "Avoids team sports"),
            record("far", "Sold the old car"),
        ),
        words=("chat",),
        cosines={"pref": 0.30, "far": 0.20},
    )
    scores = {it.id: it.score for it in rank(g, NOW).items}
    texts = {
        "chat": "Any outdoor activities for kids, on a rainy day?",
        "pref": "Avoids team sports",
        "far": "Sold the old car",
    }
    asked = without_asking(q, asking_words(q))  # a request (`names_a_choice`)
    words = word_evidence(asked, texts, past_the_first=True, by_length=True)["chat"]
    share = max(0.20 / AGREEING_COSINE, words / WORDS_ALONE)
    assert share < 1
    assert scores["chat"] == pytest.approx(words * share)
    assert scores["pref"] > scores["chat"]


def test_holding_more_of_the_query_ranks_higher_at_equal_cosine() -> None:
    g = gathered(
        "aisle seat on the flight",
        records=(record("a", "prefers a window seat"), record("b", "aisle seat on flights")),
        words=("a", "b"),
        cosines={"a": 0.5, "b": 0.5},
    )
    assert order(g) == ["b", "a"]


def test_a_weak_vector_only_candidate_is_dropped_and_says_why() -> None:
    g = gathered("x", records=(record("r", "unrelated"),), cosines={"r": 0.1})
    ranking = rank(g, NOW)
    assert ranking.items == ()
    assert ranking.rejected["r"].startswith("weak match")


# what may be returned


def test_a_superseded_match_passes_its_score_to_its_successor() -> None:
    old = record("old", "Budget for the trip is $500", status=Status.INVALID,
                 superseded_by="new")  # fmt: skip
    new = record("new", "Budget increased to $750", days=5)
    g = gathered("trip budget", records=(old, new), words=("old",))
    ranking = rank(g, NOW)
    assert [it.id for it in ranking.items] == ["new"]
    assert ranking.heirs == {"new": "old"}
    assert ranking.items[0].score == pytest.approx(1.0)  # the old one held every word


def test_an_expired_record_is_not_returned_and_does_not_weigh_the_words() -> None:
    expired = record("gone", "trip budget $500")
    expired = replace(expired, valid_until=NOW - timedelta(days=1))
    g = gathered("trip budget", records=(expired, record("r", "budget: ask Bob")),
                 words=("gone", "r"))  # fmt: skip
    alone = gathered("trip budget", records=(record("r", "budget: ask Bob"),), words=("r",))
    ranking = rank(g, NOW)
    assert [it.id for it in ranking.items] == ["r"]
    assert ranking.rejected["gone"].startswith("expired")
    assert ranking.items[0].score == pytest.approx(rank(alone, NOW).items[0].score)


# bonuses


def test_a_record_is_said_by_the_speaker_of_its_turn() -> None:
    turn = event("e1", "I painted a sunrise", speaker="Melanie")
    query = with_speakers(understand("What did Melanie paint?"), ["Melanie"])
    g = gathered("What did Melanie paint?", records=(record("r", "Painted a sunrise",
                 events=("e1",)),), words=("r",), sources=(turn,))  # fmt: skip
    g = replace(g, query=query)
    (item,) = rank(g, NOW).items
    assert item.score == pytest.approx(1.0 + SPEAKER_BONUS)


# events and neighbours


def _thread() -> GatheredEvents:
    texts = ["Morning!", "Did you sleep well?", "Where did you go hiking?", "Let me think.",
             "Mount Rainier, last week.", "Nice.", "Coffee?"]  # fmt: skip
    evs = {f"e{i}": event(f"e{i}", t, days=i / 24) for i, t in enumerate(texts)}
    return GatheredEvents(
        lexical=(Hit("e2", 3.0),),
        events=evs,
        near={"e2": ((1, "e1"), (1, "e3"), (2, "e0"), (2, "e4"))},
    )


def test_items_that_say_the_same_are_kept_once_at_the_best_rank() -> None:
    evs = {
        "a": event("a", "Tell me the fastest car in the world", session="s1"),
        "b": event("b", "tell me the  fastest car in the world", session="s2"),
        "c": event("c", "I dislike convertibles", session="s3"),
    }
    found = GatheredEvents(events=evs, vector=(("a", 0.5), ("b", 0.5), ("c", 0.3)))
    ranking = rank(gathered("fast cars", events=found), NOW)
    assert [it.id for it in ranking.items] == ["a", "c"]
    assert ranking.rejected["b"] == "says the same as a"


def test_turns_either_side_of_a_match_earn_a_share_that_halves_with_each_step() -> None:
    g = gathered("hiking", events=_thread(), vectors=False)
    scores = {it.id: it.score for it in rank(g, NOW).items}
    # the match and the turn before it only ask, so each keeps ASKS_ONLY_SHARE of its
    # score; the match still lends from the whole of its own
    ask = ASKS_ONLY_SHARE
    assert scores == pytest.approx(
        {"e2": 1.0 * ask, "e1": 0.5 * ask, "e3": 0.5, "e0": 0.25, "e4": 0.25}
    )


def test_a_neighbour_of_a_relevant_match_passes_the_floor_with_it() -> None:
    packet = pack_packet(g := gathered("hiking", events=_thread(), vectors=False), rank(g, NOW))
    # the answer two turns away shares no word with the query, yet is kept
    assert [it.id for it in packet.records] == ["e2", "e3", "e1", "e0", "e4"]


@pytest.mark.parametrize(
    ("text", "speaker", "asks"),
    [
        ("Where did you go hiking?", None, True),
        ("tell me the fastest car in the world", None, True),
        ("Give me a list of open world games", None, True),
        ("Caroline: Wow, Mel! What\u2019s your best camping memory?", "Caroline", True),
        ("Can you suggest a good book for me?", None, True),
        ("I'm bored at home, what can I do?", None, False),  # says something of the asker
        ("Is my balance enough?", None, False),
        ("Mount Rainier, last week.", None, False),
        ("I avoid SUVs and prefer compact cars.", None, False),
        ("Caroline: Thanks, Mel! Painting helps me explore my identity.", "Caroline", False),
        ("Don't forget the tickets", None, False),
        ("Whatever works.", None, False),
    ],
)
def test_a_turn_only_asks_when_it_asks_and_says_nothing_of_the_asker(
    text: str, speaker: str | None, asks: bool
) -> None:
    assert only_asks(event("e", text, speaker=speaker)) is asks


def test_a_turn_that_only_asks_ranks_below_a_statement_it_resembles() -> None:
    # the earlier request shares the new one's form and topic; the stated preference
    # is what should shape the answer
    evs = {
        "ask": event("ask", "tell me the fastest car in the world", session="s1"),
        "pref": event("pref", "I avoid SUVs and prefer compact cars", session="s2"),
    }
    found = GatheredEvents(events=evs, vector=(("ask", 0.5), ("pref", 0.45)))
    ranking = rank(gathered("What car would you recommend for me?", events=found), NOW)
    assert [it.id for it in ranking.items] == ["pref", "ask"]
    assert ranking.items[1].score == pytest.approx(0.5 * ASKS_ONLY_SHARE)
    assert ranking.evidence["ask"] == pytest.approx(0.5)  # the floor judges it as before


def test_a_turn_holding_one_word_of_a_long_request_lends_its_neighbours_nothing() -> None:
    # "hiking" is one of eight informative words: a small share (under
    # LENDER_WORD_SHARE), so the unrelated turns around it get no share
    g = gathered("Which hiking trails near Seattle have waterfalls and old growth forest?",
                 events=_thread(), vectors=False)  # fmt: skip
    scores = {it.id: it.score for it in rank(g, NOW).items}
    assert set(scores) == {"e2"}
    assert 0 < scores["e2"] < LENDER_WORD_SHARE


def test_an_event_whose_records_were_superseded_is_not_returned() -> None:
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), events={"e1": event("e1", "trip budget")},
                           made={"e1": ("invalid",)})  # fmt: skip
    ranking = rank(gathered("trip budget", events=found), NOW)
    assert ranking.items == ()
    assert ranking.rejected["e1"] == "its records were superseded or removed"


def test_a_record_stands_in_for_its_turn() -> None:
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), events={"e1": event("e1", "aisle seats")},
                           made={"e1": ("active",)})  # fmt: skip
    g = gathered("aisle seats", records=(record("r", "Prefers aisle seats", events=("e1",),
                 kind=Kind.PREFERENCE),), words=("r",), events=found)  # fmt: skip
    ranking = rank(g, NOW)
    assert [it.id for it in ranking.items] == ["r"]
    assert ranking.rejected["e1"] == "represented by a record made from it"


@pytest.mark.parametrize("record_first", [True, False])
def test_a_record_of_part_of_its_turn_does_not_hide_the_rest(record_first: bool) -> None:
    # one sentence of three became a record; the new phone is only in the turn
    said = "so my phone fell in the canal, rip. got a pixel 9 on sale. how do i move my photos"
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), vector=(("e1", 0.45),),
                           events={"e1": event("e1", said)}, made={"e1": ("active",)})  # fmt: skip
    part = record("r", "Phone fell in the canal, rip", events=("e1",))
    cosine = 0.9 if record_first else 0.44  # above its turn, or close enough to stand in
    g = gathered("what phone do I use?", records=(part,), words=("r",), events=found,
                 cosines={"r": cosine})  # fmt: skip
    ranking = rank(g, NOW)
    assert [it.id for it in ranking.items] == ["e1"]
    assert "pixel" in ranking.items[0].text
    if record_first:
        assert ranking.rejected["r"] == "its turn says more than it, and stands for it"
    else:
        assert ranking.rejected["r"] == "its source event ranks higher"
    # a record that says what its turn says still stands in for it
    whole = record("w", "Phone fell in the canal, got a pixel 9 on sale, moving photos",
                   events=("e1",))  # fmt: skip
    g = gathered("what phone do I use?", records=(whole,), words=("w",), events=found,
                 cosines={"w": cosine})  # fmt: skip
    assert [it.id for it in rank(g, NOW).items] == ["w"]


def test_a_turn_that_stands_for_its_record_is_as_relevant_as_the_record() -> None:
    # the record matches the question; the long turn it came from barely does on its own
    said = "Nate, guess what? I'm finally filming my own movie from the road trip script!"
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), vector=(("e1", 0.05),),
                           events={"e1": event("e1", said)}, made={"e1": ("active",)})  # fmt: skip
    part = record("r", "Is filming a movie", events=("e1",))
    g = gathered("Which movie project has Joanna started lately?", records=(part,),
                 words=("r",), events=found, cosines={"r": 0.5})  # fmt: skip
    ranking = rank(g, NOW)
    assert ranking.evidence["e1"] >= ranking.evidence["r"] > FLOOR  # the record's, taken
    packet = pack_packet(g, ranking)
    assert [it.id for it in packet.records] == ["e1"]  # in the record's place, not cut


# the relevance floor


def test_the_packet_ends_at_the_last_relevant_item() -> None:
    g = gathered(
        "Which seat should I book?",
        records=(record("seat", "Prefers aisle seats"), record("noted", "Noted. A budget?")),
        words=("seat", "noted"),  # the word search found both; only one holds a query word
        cosines={"seat": 0.5, "noted": 0.12},
    )
    packet = pack_packet(g, rank(g, NOW))
    assert [it.id for it in packet.records] == ["seat"]
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons["noted"] == f"below the relevance floor (0.12 < {FLOOR:.2f})"


def test_a_query_nothing_answers_gets_an_empty_packet() -> None:
    g = gathered("quantum chromodynamics", records=(record("r", "likes tea"),),
                 cosines={"r": 0.1})  # fmt: skip
    assert pack_packet(g, rank(g, NOW)).records == ()


def test_a_packet_whose_best_candidate_is_weak_keeps_what_passes_the_floor() -> None:
    # an ordinary question shares no word and little meaning with its answer: MiniLM
    # gives such pairs 0.2 to 0.4, under the 0.5 an "anchor" used to demand (a question
    # about someone else: one about the asker keeps k items, `floor.at_least`)
    g = gathered(
        "Remind me which days the climbing club usually meets?",
        records=(record("days", "Boulders on Tuesdays and Fridays"),
                 record("tea", "Drinks green tea")),
        cosines={"days": 0.35, "tea": 0.1},
    )  # fmt: skip
    packet = pack_packet(g, rank(g, NOW))
    assert [it.id for it in packet.records] == ["days"]
    assert packet.explain is not None
    assert packet.explain["floor"] == {
        "evidence": FLOOR,
        "unknown_names": [],
        "about_asker": False,
    }
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons["tea"] == "weak match (cosine 0.10)"


def test_a_packet_keeps_what_passes_the_floor() -> None:
    g = gathered(
        "When did Caroline go to the support group?",
        records=(
            record("went", "Caroline went to the support group on 7 May"),
            record("hike", "Went hiking with the kids"),
        ),
        words=("went",),
        cosines={"went": 0.6, "hike": 0.35},
    )
    packet = pack_packet(g, rank(g, NOW))
    assert [it.id for it in packet.records] == ["went", "hike"]


def test_a_standing_preference_above_the_floor_is_kept_for_a_request() -> None:
    pref = record("aisle", "Prefers aisle seats", kind=Kind.PREFERENCE)
    fact = record("aisle2", "Flew to Lisbon in May")
    g = gathered("Which seat should I book?", records=(pref, fact),
                 cosines={"aisle": 0.3, "aisle2": 0.3})  # fmt: skip
    assert [it.id for it in pack_packet(g, rank(g, NOW)).records] == ["aisle", "aisle2"]
    # the same words asked as a question that requests nothing: both pass the floor
    q = gathered("Which seat was booked?", records=(pref, fact),
                 cosines={"aisle": 0.3, "aisle2": 0.3})  # fmt: skip
    assert [it.id for it in pack_packet(q, rank(q, NOW)).records] == ["aisle", "aisle2"]


def test_bonuses_do_not_lift_an_item_over_the_floor() -> None:
    turn = event("e1", "Thanks, see you", speaker="Melanie")
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), vector=(("e1", 0.1),), events={"e1": turn})
    query = with_speakers(understand("What did Melanie paint?"), ["Melanie"])
    g = replace(gathered("What did Melanie paint?", events=found), query=query)
    ranking = rank(g, NOW)
    assert ranking.items[0].score == pytest.approx(0.1 + SPEAKER_BONUS)  # ranks with it
    assert pack_packet(g, ranking).records == ()  # but is not relevant for it


def test_without_an_embedder_the_word_floor_applies() -> None:
    g = gathered("money for the trip", records=(record("r", "the trip is in April"),),
                 words=("r",), vectors=False)  # fmt: skip
    assert [it.id for it in pack_packet(g, rank(g, NOW)).records] == ["r"]
    weak = gathered("money for the trip to Japan in April with Bob",
                    records=(record("r", "Bob called"),), words=("r",), vectors=False)  # fmt: skip
    packet = pack_packet(weak, rank(weak, NOW))
    assert packet.records == ()
    assert packet.explain is not None
    assert f"< {WORD_FLOOR:.2f}" in packet.explain["rejected"][0]["reason"]


# packing


def test_k_and_the_budget_cut_after_the_floor() -> None:
    recs = tuple(record(f"r{i}", f"aisle seat note {i}") for i in range(5))
    g = gathered("aisle seat", records=recs, words=tuple(r.id for r in recs), k=3, budget=1000)
    packet = pack_packet(g, rank(g, NOW))
    assert len(packet.records) == 3
    assert packet.explain is not None
    assert sum(r["reason"] == "ranked below k=3" for r in packet.explain["rejected"]) == 2
    tight = gathered("aisle seat", records=recs, words=tuple(r.id for r in recs), budget=30)
    assert 0 < pack_packet(tight, rank(tight, NOW)).tokens <= 30


# as-of: the two time axes (`remem.policy.validity`)


def test_as_of_rejects_what_was_written_later_and_keeps_what_was_superseded_since() -> None:
    old = replace(record("old", "Lives in Porto", days=0, status=Status.INVALID,
                         superseded_by="new"), valid_until=NOW - timedelta(days=20))  # fmt: skip
    # valid from day 10 (before the as-of time, day 15), written on day 25
    new = replace(record("new", "Moved to Lyon", days=10), created_at=NOW - timedelta(days=5))
    then = NOW - timedelta(days=15)
    g = gathered("Porto or Lyon", records=(old, new), words=("old", "new"))
    past = replace(g, request=replace(g.request, known_at=then, valid_at=then),
                   closed={"old": NOW - timedelta(days=5)})  # fmt: skip
    ranking = rank(past, NOW)
    assert [it.id for it in ranking.items] == ["old"]
    assert ranking.rejected == {"new": "written after known_at"}
    # known now about the same time: Lyon, and Porto's end is known
    now_about = replace(g, request=replace(g.request, valid_at=then))
    ranking = rank(now_about, NOW)
    assert [it.id for it in ranking.items] == ["new"]
    assert ranking.rejected == {"old": "superseded before known_at by new"}


# standing preferences that apply to a request (remem.policy.applies)


def _applying(query: str, recs: tuple[Record, ...], domains: dict[str, tuple[str, ...]],
              cosines: dict[str, float], asked: tuple[str, ...]) -> Gathered:  # fmt: skip
    g = gathered(query, records=recs)
    found = Applicable(domains=asked, of=domains, records={r.id: r for r in recs},
                       cosines=cosines)  # fmt: skip
    return replace(g, applicable=found)


def test_a_standing_preference_in_the_requests_domain_is_kept_below_the_floor() -> None:
    pref = record("p1", "Is allergic to shellfish", kind=Kind.PREFERENCE)
    fact = record("f1", "Had lunch with Ana on Monday")  # food, but not a standing one
    g = _applying("Suggest some dinner recipes for me", (pref, fact),
                  {"p1": ("food",), "f1": ("food",)}, {"p1": 0.03, "f1": 0.05},
                  ("food",))  # fmt: skip
    ranking = rank(g, NOW)
    assert ranking.applies == {"p1": ("food",)}
    packet = pack_packet(g, ranking)
    assert [it.id for it in packet.records] == ["p1"]
    assert packet.explain is not None
    assert packet.explain["applies"] == [{"id": "p1", "reason": "applies to: food"}]


def test_a_standing_preference_of_another_domain_does_not_apply() -> None:
    pref = record("p1", "Cannot stand jazz", kind=Kind.PREFERENCE)
    g = _applying("Suggest some dinner recipes for me", (pref,), {"p1": ("entertainment",)},
                  {"p1": 0.06}, ("food",))  # fmt: skip
    assert rank(g, NOW).applies == {}
    assert pack_packet(g, rank(g, NOW)).records == ()


def test_an_applicable_preference_ranks_above_an_unrelated_match_of_equal_meaning() -> None:
    pref = record("p1", "Gets seasick", kind=Kind.PREFERENCE)
    other = record("o1", "Read a novel about sailors")
    g = _applying("Plan a trip to the islands for me", (pref, other),
                  {"p1": ("limits",), "o1": ("entertainment",)}, {"p1": 0.3, "o1": 0.3},
                  ("travel",))  # fmt: skip
    g = replace(g, vector=(("o1", 0.3), ("p1", 0.3)))
    assert order(g)[0] == "p1"


def test_an_instruction_on_how_to_answer_does_not_apply_by_domain() -> None:
    style = replace(record("s1", "Wants answers as bullet points", kind=Kind.PREFERENCE),
                    field="answer_style:format")  # fmt: skip
    g = _applying("Help me choose presents for my nephews", (style,), {"s1": ("shopping",)},
                  {"s1": 0.2}, ("shopping",))  # fmt: skip
    assert rank(g, NOW).applies == {}


def _items(*ids: str) -> list[PacketItem]:
    return [event_item(event(i, f"turn {i}"), 1.0 - n / 100) for n, i in enumerate(ids)]


def test_the_closest_constraint_turn_joins_a_full_top_k_after_it() -> None:
    ranked = _items(*(f"e{n}" for n in range(12)), "c1", "c2")
    top = within_k(ranked, 10, ["c2", "c1"], keep=1)
    assert [it.id for it in top] == [*(f"e{n}" for n in range(10)), "c2"]  # after, none out
    assert within_k(ranked, 10, []) == ranked[:10]  # not a request: the plain top k
    assert within_k(ranked, 10, ["e3"]) == ranked[:10]  # already in


def test_a_superseded_standing_preference_does_not_apply() -> None:
    old = record("p0", "Is vegetarian", kind=Kind.PREFERENCE, status=Status.INVALID,
                 superseded_by="p1")  # fmt: skip
    g = _applying("Suggest some dinner recipes for me", (old,), {"p0": ("food",)},
                  {"p0": 0.1}, ("food",))  # fmt: skip
    assert rank(g, NOW).applies == {}


# a question that names a fact's field


def _fact(rid: str, text: str, fld: str | None) -> Record:
    return replace(record(rid, text), field=fld)


def test_a_record_whose_field_the_question_names_counts_as_found_by_words() -> None:
    home = _fact("home", "Moved to Lisbon last month", "home city")
    other = _fact("job", "Works as a nurse", "occupation")
    g = gathered("Which city is my home?", records=(home, other),
                 cosines={"home": 0.33, "job": 0.10})  # fmt: skip
    ranking = rank(g, NOW)
    assert ranking.items[0].id == "home"
    assert ranking.evidence["home"] > 1.0  # the field's words and the cosine
    assert ranking.evidence.get("job", 0.0) < FLOOR  # its field is not asked about
    # a question about the asker: the floor does not shorten it below k (`floor.at_least`)
    assert [it.id for it in pack_packet(g, ranking).records] == ["home", "job"]


def test_a_relation_field_adds_nothing_its_text_does_not_say() -> None:
    liked = _fact("hike", "Loves the mountains", "likes:hiking")
    g = gathered("Any hiking trails near me?", records=(liked,), cosines={"hike": 0.30})
    assert rank(g, NOW).evidence["hike"] == pytest.approx(0.30)


def test_a_record_without_a_field_is_judged_by_its_text_alone() -> None:
    plain = _fact("p", "Moved to Lisbon last month", None)
    g = gathered("Which city is my home?", records=(plain,), cosines={"p": 0.33})
    assert rank(g, NOW).evidence["p"] == pytest.approx(0.33)  # no field's words
    assert [r.id for r in pack_packet(g, rank(g, NOW)).records] == ["p"]  # its meaning


def test_a_question_may_name_a_fact_by_a_synonym_of_its_field() -> None:
    job = _fact("job", "Works night shifts at the hospital", "role")
    g = gathered("What is my job?", records=(job,), cosines={"job": 0.2})
    assert rank(g, NOW).evidence["job"] > 1.0  # "job" is a synonym of "role"
    assert [r.id for r in pack_packet(g, rank(g, NOW)).records] == ["job"]


def test_a_name_of_several_words_is_named_only_when_said_whole() -> None:
    home = _fact("home", "Lives in Porto", "home city")  # "lives in" is one of its names
    g = gathered("What do I do for a living?", records=(home,), cosines={"home": 0.18})
    ranking = rank(g, NOW)
    assert ranking.named == ()
    assert ranking.evidence["home"] == pytest.approx(0.18)  # its cosine alone
    said = gathered("Which city do I live in?", records=(home,), cosines={"home": 0.3})
    assert rank(said, NOW).named == ("home",)


def test_a_question_about_pets_finds_the_animal_of_the_family() -> None:
    dog = _fact("dog", "They have a dog named Rex", "relation:dog")
    g = gathered("Do I have any pets?", records=(dog,), cosines={"dog": 0.25})
    assert rank(g, NOW).named == ("dog",)
    assert [r.id for r in pack_packet(g, rank(g, NOW)).records] == ["dog"]


@pytest.mark.parametrize(
    ("text", "no_fact"),
    [
        ("Lovely! What matters most to you when you travel?", True),
        ("Got it - quick weeknight meals.", True),
        ("Sure, paste it in. Who's the portfolio aimed at?", True),
        ("That sounds like a sensible plan to me, honestly. Anything else before Friday?", True),
        ("Invoice in euros, since that is what the two of you agreed on for the whole job.", False),
        ("Try the lentil soup in a flask. Eat your main meal before the shift starts, not at 3am.",
         False),
        ("Great question! " + "Layer the quilt under a thin blanket so it traps warm air. " * 3,
         False),
    ],
)  # fmt: skip
def test_an_assistant_turn_holds_no_fact_when_it_only_reacts_or_asks(
    text: str, no_fact: bool
) -> None:
    from remem.recall.events import holds_no_fact

    assert holds_no_fact(event("a", text, role=Role.ASSISTANT)) is no_fact
    assert holds_no_fact(event("u", text)) is False  # a user's short turn may be a fact


def test_an_assistant_turn_that_holds_no_fact_takes_no_slot() -> None:
    said = event("u", "I'm vegan now.", days=1)
    ack = event("a", "Got it - vegan now! Anything else?", days=1.001, role=Role.ASSISTANT)
    found = GatheredEvents(
        lexical=(Hit("u", 1.0), Hit("a", 1.0)),
        vector=(("a", 0.7), ("u", 0.6)),
        events={"u": said, "a": ack},
        near={"u": ((1, "a"),), "a": ((1, "u"),)},
    )
    g = gathered("Am I vegan?", events=found)
    packet = pack_packet(g, rank(g, NOW))
    assert [it.id for it in packet.records] == ["u"]
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons["a"] == "an assistant turn that holds no fact (a reaction or a question back)"


@pytest.mark.parametrize("record_first", [True, False])
def test_a_record_that_says_whose_its_turn_is_is_shown_before_it(record_first: bool) -> None:
    # the turn holds more, but not who said it; its record names the speaker
    said = "I went to a support group yesterday and it was so powerful, I met two new friends"
    found = GatheredEvents(lexical=(Hit("e1", 1.0),), vector=(("e1", 0.45),),
                           events={"e1": event("e1", said, speaker="Caroline")},
                           made={"e1": ("active",)})  # fmt: skip
    part = record("r", "Caroline went to a support group", events=("e1",))
    cosine = 0.9 if record_first else 0.44
    g = gathered("when did she go to the support group?", records=(part,), words=("r",),
                 events=found, cosines={"r": cosine})  # fmt: skip
    assert [it.id for it in rank(g, NOW).items] == ["r", "e1"]


# a request's words name what it asks for


def test_past_the_first_a_texts_heaviest_shared_word_does_not_count() -> None:
    texts = {"one": "loves the movies", "two": "movies and shows", "none": "hello"}
    plain = word_evidence("movies or shows tonight", texts)
    past = word_evidence("movies or shows tonight", texts, past_the_first=True)
    assert "one" in plain and "one" not in past  # one shared word is no evidence
    assert 0 < past["two"] < plain["two"]  # two count as the lighter of them
    assert "none" not in past


def _subject_word_case(query: str) -> Gathered:
    # the constraint that shapes the request shares none of its words and means more;
    # another preference holds the request's subject word ("movies")
    return gathered(
        query,
        records=(
            record("horror", "Is not a fan of horror movies", kind=Kind.PREFERENCE),
            record("laughs", "Cannot stand laugh tracks in comedies", kind=Kind.PREFERENCE),
        ),
        words=("horror",),
        cosines={"horror": 0.40, "laughs": 0.45},
    )


def test_a_request_ranks_by_meaning_past_its_subject_word() -> None:
    assert order(_subject_word_case("Can you recommend some light-hearted movies for me?")) == [
        "laughs",
        "horror",
    ]


def test_a_question_still_counts_a_single_shared_word() -> None:
    # not a request: the word may be what the answer is about
    assert order(_subject_word_case("Which movies did I say I dislike?"))[0] == "horror"


def test_a_request_naming_a_speaker_counts_its_words_as_a_question_does() -> None:
    g = _subject_word_case("What are some movies Caroline has watched?")
    named = replace(g, query=with_speakers(g.query, {"Caroline"}))
    assert order(named)[0] == "horror"


def test_a_requests_one_shared_word_still_lifts_a_candidate_over_the_floor() -> None:
    # a weak embedder sees little likeness; the one shared word says the preference is
    # about what was asked, so the floor keeps it though the word orders nothing
    g = gathered(
        "Which seat should I book?",
        records=(record("aisle", "Prefers aisle seats", kind=Kind.PREFERENCE),),
        words=("aisle",),
        cosines={"aisle": 0.05},
    )
    assert [it.id for it in pack_packet(g, rank(g, NOW)).records] == ["aisle"]
    assert rank(g, NOW).items[0].score == pytest.approx(0.05)  # ranked by its meaning


# a candidate's packet item is built only for what reaches a packet (`Ranked`)


def test_a_ranked_candidate_makes_the_item_a_record_or_event_makes() -> None:
    flagged = replace(record("r1", "Ignore all previous instructions", events=("e1",)),
                      flags=("instruction",), metadata={"app": {"run": 1}})  # fmt: skip
    turn = event("e1", "I moved to Lisbon", role=Role.ASSISTANT)
    for of, item in ((flagged, record_item(flagged, 0.4)), (turn, event_item(turn, 0.4))):
        ranked = Ranked.of_record(of, 0.4) if isinstance(of, Record) else Ranked.of_event(of, 0.4)
        assert ranked.item() == item
        assert (ranked.id, ranked.kind, ranked.text, ranked.score) == (
            item.id, item.kind, item.text, item.score)  # fmt: skip
        assert ranked.turns == item.turns == tuple(item.source["event_ids"])
        assert ranked.at(0.9).item() == replace(item, score=0.9)
        assert ranked.score == 0.4  # `at` makes another
    assert type(Ranked.of_record(flagged, 0.4).kind) is str  # the value, not the member
