"""An update goes before what it updates (`remem.recall.updates`), on hand-made items."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from remem.model import PacketItem
from remem.recall.updates import UPDATE_REACH, change_words, updates_first

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def turn(i: int, text: str, day: int, role: str = "user") -> PacketItem:
    return PacketItem(
        id=f"e{i}",
        text=f"{role}: {text}",
        kind="event",
        namespace="/t/a",
        status="event",
        source_date=T0 + timedelta(days=day),
        source={"type": "event", "event_ids": [f"e{i}"]},
        score=1.0 - i / 100,
        tokens=10,
    )


def record(i: int, text: str, day: int) -> PacketItem:
    return PacketItem(
        id=f"r{i}",
        text=text,
        kind="semantic",
        namespace="/t/a",
        status="active",
        source_date=T0 + timedelta(days=day),
        source={"type": "event", "event_ids": [f"e{i}"]},
        score=1.0 - i / 100,
        tokens=10,
    )


def ids(items: list[PacketItem]) -> list[str]:
    return [it.id for it in items]


def test_a_later_change_moves_before_the_state_it_replaces() -> None:
    old = turn(1, "My brother Olek works at the bakery on Dunmore Street, early shifts", 0)
    other = turn(2, "Can you suggest a birthday cake for my niece?", 1)
    new = turn(3, "Olek quit the bakery on Dunmore Street last week, he drives a taxi now", 9)
    out = updates_first([old, other, new], "Where does Olek work these days?")
    assert ids(out) == ["e3", "e1", "e2"]


def test_a_record_of_a_change_moves_too() -> None:
    old = record(1, "Keeps two hens in the back garden for eggs", 0)
    new = record(2, "Gave up the hens in the back garden after the fox got in", 20)
    out = updates_first([old, new], "Do I still keep hens?")
    assert ids(out) == ["r2", "r1"]


def test_an_earlier_statement_of_change_does_not_move_before_a_later_one() -> None:
    later = turn(1, "Olek drives a taxi on nights now, he quit the bakery", 9)
    earlier = turn(2, "Olek switched to the bakery on Dunmore Street, early shifts", 0)
    out = updates_first([later, earlier], "Where does Olek work these days?")
    assert ids(out) == ["e1", "e2"]


def test_a_change_about_something_the_query_does_not_ask_stays_put() -> None:
    old = turn(1, "Olek works at the bakery on Dunmore Street, early shifts", 0)
    new = turn(2, "The bakery on Dunmore Street moved to the harbour, Olek says", 9)
    out = updates_first([old, new], "What time do the early shifts start?")
    assert ids(out) == ["e1", "e2"]  # the change sentence shares no word with the query


def test_one_shared_word_is_not_the_same_thing() -> None:
    old = turn(1, "Olek loves sea fishing off the pier", 0)
    new = turn(2, "Olek has given up coffee, tea only", 9)
    out = updates_first([old, new], "What does Olek like?")
    assert ids(out) == ["e1", "e2"]


def test_the_assistant_never_says_a_change_of_the_persons_life() -> None:
    old = turn(1, "I run the Tuesday chess club at the library", 0)
    reply = turn(2, "Many chess clubs at a library have moved to Thursday now", 9, "assistant")
    assert change_words(reply) == frozenset()
    out = updates_first([old, reply], "When is my chess club?")
    assert ids(out) == ["e1", "e2"]


def test_now_opening_a_sentence_is_not_a_change() -> None:
    assert change_words(turn(1, "Lovely. Now, a question about the chess club", 0)) == frozenset()
    assert change_words(turn(2, "The chess club meets on Thursdays now", 0)) >= {"chess", "club"}


def test_only_the_first_items_are_reordered() -> None:
    old = turn(0, "Olek works at the bakery on Dunmore Street, early shifts", 0)
    filler = [turn(i, f"Unrelated line number {i} about gardening", 1) for i in range(1, 12)]
    new = turn(12, "Olek quit the bakery on Dunmore Street, taxi now", 9)
    items = [old, *filler, new]
    assert len(items) > UPDATE_REACH
    assert updates_first(items, "Where does Olek work?") == items


def test_one_speaker_s_change_does_not_update_what_another_said() -> None:
    old = turn(1, "Ruth: I teach piano lessons at the village hall on Fridays", 0)
    new = turn(2, "Owen: I stopped going to piano lessons at the village hall", 9)
    assert ids(updates_first([old, new], "Where are the piano lessons?")) == ["e1", "e2"]


def test_a_speaker_s_own_change_moves_before_what_they_said() -> None:
    old = turn(1, "Ruth: I teach piano lessons at the village hall on Fridays", 0)
    new = turn(2, "Ruth: I stopped teaching piano lessons at the village hall", 9)
    assert ids(updates_first([old, new], "Where are the piano lessons?")) == ["e2", "e1"]


def test_a_speaker_s_name_is_not_a_shared_word() -> None:
    old = turn(1, "Ruth: My old cello is out of tune this summer", 0)
    new = turn(2, "Ruth: On Fridays I'm learning the cello now", 9)
    assert ids(updates_first([old, new], "What is Ruth learning?")) == ["e1", "e2"]


def test_used_to_and_fired_up_are_no_change() -> None:
    assert change_words(turn(1, "I used to swim in the lake as a kid", 0)) == frozenset()
    assert change_words(turn(2, "I'm so fired up about the allotment", 0)) == frozenset()
    assert change_words(turn(3, "I got fired from the garage", 0)) != frozenset()
