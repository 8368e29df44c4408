"""How recall ranks.

Only what it may return counts: superseded, expired or future candidates
neither set the scale of the scores nor lend a neighbouring turn a bonus.
Turns next to a match earn a share of its score, halving with each step
away. A speaker the query names favours what they said over what was said
to them; a date the query names favours what happened then.

Lexical only (no embedder), on real SQLite files, so the scores are the
normalised BM25 of `remem.recall.fusion` plus the bonuses of
`remem.recall.events` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from remem import Memory, PacketItem
from remem.ids import counter_ids
from remem.recall.events import ASKS_ONLY_SHARE
from remem.recall.query import DATE_BONUS, SPEAKER_BONUS
from tests.support.clock import T0, Clock, at


@pytest.fixture
def mem(db_path: Path, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=None, clock=clock, ids=counter_ids()) as m:
        yield m


def say(mem: Memory, text: str, day: float, session: str = "s1", speaker: str | None = None) -> str:
    meta = {"speaker": speaker} if speaker else None
    return mem.add_event(
        actor="alice", session=session, role="user", text=text, time=at(day), metadata=meta
    )


def by_id(items: tuple[PacketItem, ...], item_id: str) -> PacketItem:
    return next(it for it in items if it.id == item_id)


def test_the_current_record_outranks_its_raw_event(mem: Memory) -> None:
    old_event = say(mem, "Our budget for the trip is $500", 0)
    new_event = say(mem, "Our budget increased to $750", 4)
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget", explain=True)
    top = packet.records[0]
    assert top.kind == "semantic" and top.source["event_ids"] == [new_event]
    # the event and its record are one memory: the packet carries it once
    ids = [it.id for it in packet.records]
    assert new_event not in ids and old_event not in ids
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons[new_event] == "represented by a record made from it"
    assert reasons[old_event] == "its records were superseded or removed"


def test_a_superseded_record_does_not_set_the_scale(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500", 0)
    say(mem, "Our budget increased to $750", 4)
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget", include_events=False)
    # the old record matched more words, but it cannot be returned: the best word
    # match that can be returned scores 1
    assert ["$750" in it.text for it in packet.records] == [True]
    assert packet.records[0].score == pytest.approx(1.0)


def test_an_expired_record_does_not_weigh_the_words(
    mem: Memory, clock: Clock, tmp_path: Path
) -> None:
    clock.now = T0
    mem.remember(actor="alice", text="The trip budget is $500",
                 valid_until=(T0 + timedelta(days=1)).isoformat())  # fmt: skip
    mem.remember(actor="alice", text="Budget: ask Bob")
    clock.advance(days=2)
    packet = mem.recall(actor="alice", query="budget", include_events=False)
    assert [it.text for it in packet.records] == ["Budget: ask Bob"]
    # it scores as if the expired record had never been there
    with Memory.open(tmp_path / "alone.db", embedder=None, clock=clock) as alone:
        alone.remember(actor="alice", text="Budget: ask Bob")
        expected = alone.recall(actor="alice", query="budget", include_events=False)
    assert packet.records[0].score == pytest.approx(expected.records[0].score)


def test_a_future_event_does_not_weigh_the_words_of_an_as_of_recall(
    mem: Memory, clock: Clock, tmp_path: Path
) -> None:
    early = say(mem, "budget talk", 0)
    say(mem, "the budget, the budget", 5, session="s2")
    packet = mem.recall(actor="alice", query="budget talk tomorrow", valid_at=at(1))
    assert [it.id for it in packet.records] == [early]
    # it scores as if the later turn had never been said
    with Memory.open(tmp_path / "alone.db", embedder=None, clock=clock) as alone:
        alone.add_event(actor="alice", session="s1", role="user", text="budget talk", time=at(0))
        expected = alone.recall(actor="alice", query="budget talk tomorrow", valid_at=at(1))
    assert packet.records[0].score == pytest.approx(expected.records[0].score)


def test_a_superseded_event_lends_its_neighbour_no_bonus(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500", 0)
    beside = say(mem, "hmm, the trip budget", 0.01)  # right after the superseded event
    say(mem, "Our budget increased to $750", 4, session="s2")
    # the same words, alone (not the same text: the packet would keep one of them)
    elsewhere = say(mem, "Hmm... the trip budget!", 5, session="s3")
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget")
    assert by_id(packet.records, beside).score == pytest.approx(
        by_id(packet.records, elsewhere).score
    )


def test_a_current_neighbour_still_lends_its_bonus(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $750", 0)
    beside = say(mem, "hmm, the trip budget?", 0.01)
    elsewhere = say(mem, "Hmm... the trip budget!", 5, session="s3")
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget")
    assert by_id(packet.records, beside).score > by_id(packet.records, elsewhere).score


def test_turns_either_side_of_a_match_earn_a_share_that_halves_with_each_step(
    mem: Memory,
) -> None:
    turns = ["Morning!", "Did you sleep well?", "Where did you go hiking?",
             "Let me think.", "Mount Rainier, last week.", "Nice.", "Coffee?"]  # fmt: skip
    ids = [say(mem, text, i / 24) for i, text in enumerate(turns)]
    packet = mem.recall(actor="alice", query="hiking")
    scores = {it.id: it.score for it in packet.records}
    # the answer shares no word with the query, yet comes back two turns away; the
    # match and the turn before it only ask, so they keep ASKS_ONLY_SHARE of their scores
    ask = ASKS_ONLY_SHARE
    assert scores == pytest.approx(
        {ids[2]: 1.0 * ask, ids[1]: 0.5 * ask, ids[3]: 0.5, ids[0]: 0.25, ids[4]: 0.25}
    )


def test_explain_names_the_turns_that_only_ask(mem: Memory) -> None:
    turns = ["Morning!", "Did you sleep well?", "Where did you go hiking?",
             "Let me think.", "Mount Rainier, last week."]  # fmt: skip
    ids = [say(mem, text, i / 24) for i, text in enumerate(turns)]
    packet = mem.recall(actor="alice", query="hiking", explain=True)
    assert packet.explain is not None
    why = f"only asks: ranked at {ASKS_ONLY_SHARE} of its score"
    # the two questions, and no statement, whether or not it made the packet
    assert sorted(r["id"] for r in packet.explain["only_ask"]) == sorted([ids[1], ids[2]])
    assert {r["reason"] for r in packet.explain["only_ask"]} == {why}


def test_a_neighbour_that_cannot_be_returned_is_not(mem: Memory) -> None:
    asked = say(mem, "Shall we fly to Rome?", 0)
    superseded = say(mem, "Our budget for the trip is $500", 0.01)
    later = say(mem, "Rome it is, then.", 2)  # same session, after the as-of time below
    say(mem, "Our budget increased to $750", 4, session="s2")
    mem.process()
    packet = mem.recall(actor="alice", query="fly", explain=True)
    assert superseded not in [it.id for it in packet.records]
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons[superseded] == "its records were superseded or removed"
    past = mem.recall(actor="alice", query="fly", valid_at=at(1), explain=True)
    assert [it.id for it in past.records] == [asked]
    assert past.explain is not None
    assert {"id": later, "reason": "said after valid_at"} in past.explain["rejected"]


def test_what_the_named_speaker_said_outranks_what_was_said_to_them(mem: Memory) -> None:
    mem.catch_up = 0  # the raw turns are ranked here, not records extracted from them
    to_her = say(mem, "Melanie, your painting is lovely, Melanie!", 0, "s1", "Caroline")
    by_her = say(mem, "I painted a lake at sunrise", 5, "s2", "Melanie")
    packet = mem.recall(actor="alice", query="What has Melanie painted?", explain=True)
    assert [it.id for it in packet.records] == [by_her, to_her]
    # the name left the word query: both match "painted" alone, and she said one of them
    assert by_id(packet.records, by_her).score == pytest.approx(1.0 + SPEAKER_BONUS)
    assert by_id(packet.records, to_her).score == pytest.approx(1.0)
    assert packet.explain is not None
    assert packet.explain["understood"]["speakers"] == ["melanie"]
    assert packet.explain["understood"]["words"] == "What has painted"


@pytest.mark.parametrize("include_events", [True, False])
def test_a_record_is_said_by_whoever_said_the_turn_it_came_from(
    mem: Memory, include_events: bool
) -> None:
    say(mem, "I love painting portraits of my friends", 0, "s1", "Caroline")
    hers = say(mem, "I love painting landscapes", 5, "s2", "Melanie")
    mem.process()
    packet = mem.recall(
        actor="alice", query="What does Melanie love painting?", include_events=include_events
    )
    top = packet.records[0]
    assert top.kind == "preference" and top.source["event_ids"] == [hers]
    assert top.score == pytest.approx(1.0 + SPEAKER_BONUS)


def test_a_date_in_the_query_favours_what_happened_that_day(mem: Memory) -> None:
    mem.catch_up = 0  # the raw turns are ranked here, not records extracted from them
    earlier = say(mem, "We talked about the budget, the whole budget", 0)
    that_day = say(mem, "The budget again", 3, session="s2")
    plain = mem.recall(actor="alice", query="budget")
    assert [it.id for it in plain.records] == [earlier, that_day]  # more words match
    when = (T0 + timedelta(days=3)).strftime("%d %B %Y")  # "04 March 2026"
    packet = mem.recall(actor="alice", query=f"What about the budget on {when}?", explain=True)
    assert [it.id for it in packet.records] == [that_day, earlier]
    assert by_id(packet.records, that_day).score == pytest.approx(
        by_id(plain.records, that_day).score + DATE_BONUS
    )
    assert by_id(packet.records, earlier).score == pytest.approx(
        by_id(plain.records, earlier).score
    )
    assert packet.explain is not None
    assert packet.explain["understood"]["time_spans"] == [
        f"{(T0 + timedelta(days=3)).date()} to {(T0 + timedelta(days=4)).date()} (exclusive)"
    ]


def test_a_record_stands_in_for_its_turn_where_the_turn_ranks(mem: Memory) -> None:
    # (a user's question: an assistant's question back holds no fact and takes no slot)
    asked = mem.add_event(actor="alice", session="s1", role="user", time=at(0),
                          text="Which seat is best on long flights?")  # fmt: skip
    answer = say(mem, "I prefer aisle seats on long flights.", 0.01)
    mem.process()
    packet = mem.recall(actor="alice", query="aisle seats", explain=True)
    top, second = packet.records
    # the turn scores its own match (1) plus half its neighbour's; the record made from
    # it scores 1, close enough to be shown instead, at the turn's place and score
    assert top.kind == "preference" and top.source["event_ids"] == [answer]
    assert second.id == asked
    # the asking turn's own match (it only asks, so it ranks at ASKS_ONLY_SHARE)
    neighbour_alone = second.score / ASKS_ONLY_SHARE - 0.5
    assert top.score == pytest.approx(1.0 + 0.5 * neighbour_alone)
    assert packet.explain is not None
    assert {"id": answer, "reason": "represented by a record made from it"} in packet.explain[
        "rejected"
    ]


def test_the_record_that_superseded_a_match_ranks_where_the_match_did(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $2500", 0)
    say(mem, "Good news: our budget increased to $3200", 4)
    mem.process()
    mem.remember(actor="alice", text="The trip is to Japan in April")
    # the question shares words with the old budget only; its successor is the answer
    packet = mem.recall(actor="alice", query="money for the trip", include_events=False,
                        explain=True)  # fmt: skip
    texts = [it.text for it in packet.records]
    assert any("$3200" in t for t in texts) and not any("$2500" in t for t in texts)
    assert packet.explain is not None
    (heir,) = packet.explain["inherited"]
    current = next(it for it in packet.records if "$3200" in it.text)
    assert heir["id"] == current.id
    old = mem.get(heir["from"])
    assert old.superseded_by == current.id and "$2500" in old.text
    # it scores as the old one matched: the best word match, like the Japan record
    japan = next(it for it in packet.records if "Japan" in it.text)
    assert current.score == pytest.approx(japan.score)


def test_an_as_of_recall_returns_the_match_itself_and_passes_nothing_on(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $2500", 0)
    say(mem, "Good news: our budget increased to $3200", 4)
    mem.process()
    packet = mem.recall(actor="alice", query="money for the trip", include_events=False,
                        valid_at=at(2), explain=True)  # fmt: skip
    assert ["$2500" in it.text for it in packet.records] == [True]
    assert packet.explain is not None and packet.explain["inherited"] == []


def test_a_turn_made_into_several_records_is_not_replaced_by_one_of_them(
    mem: Memory,
) -> None:
    turn = say(mem, "I'm vegetarian, so food matters a lot. And I can't stand cilantro.", 0)
    single = say(mem, "I prefer aisle seats on long flights.", 0.5, session="s2")
    mem.process()
    made = [r for r in mem.records(actor="alice") if r.source.event_ids == (turn,)]
    assert len(made) == 2  # the precondition: the offline extractor made two records of it
    packet = mem.recall(actor="alice", query="vegetarian food", explain=True)
    top = packet.records[0]
    # the record about food ranks first, but the turn holds the cilantro too: it
    # comes up to the record's rank in its place
    assert top.id == turn and "cilantro" in top.text
    assert all(turn not in it.source.get("event_ids", []) for it in packet.records[1:])
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    food = next(r for r in made if "vegetarian" in r.text.lower())
    assert reasons[food.id] == "its turn, made into several records, stands for them"
    # a turn made into one record is still shown as that record
    seats = mem.recall(actor="alice", query="aisle seats")
    assert seats.records[0].kind == "preference"
    assert seats.records[0].source["event_ids"] == [single]


def test_the_same_words_said_twice_come_back_once(mem: Memory) -> None:
    first = say(mem, "Tell me the fastest car in the world", 0, session="s1")
    again = say(mem, "tell me the fastest car in the world", 3, session="s2")
    say(mem, "My car is a blue hatchback", 4, session="s3")
    packet = mem.recall(actor="alice", query="fastest car in the world", explain=True)
    texts = [" ".join(it.text.lower().split()) for it in packet.records]
    assert texts.count("user: tell me the fastest car in the world") == 1
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    kept = next(it.id for it in packet.records if "fastest" in it.text)
    dropped = again if kept == first else first
    assert reasons[dropped] == f"says the same as {kept}"
