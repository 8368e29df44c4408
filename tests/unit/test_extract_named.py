"""Someone the speaker introduced by name ("my daughter Mia") and later names alone ("Mia is
allergic to peanuts") or as "she": the record says whose they are, as a "my daughter"
record does. Whatever could be misread stays as it was: a name never introduced, a
name for two people, the speaker's or the listener's own name, a "she" for two women."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.extract import extract_offline
from remem.extract.offline.named import People, introduced
from remem.model import Event, Role

T = datetime(2026, 4, 2, 18, 0, tzinfo=UTC)


def _event(n: int, said: str, role: Role = Role.USER, speaker: str | None = None) -> Event:
    meta = {"speaker": speaker} if speaker else {}
    return Event(f"ev-{n}", "t", "a", "s", role, said, T + timedelta(minutes=n), meta)


def texts(*turns: str | tuple[str, str | None], speaker: str | None = None) -> list[str]:
    """The records of the last turn, the turns before it its context. A turn given as
    (text, who) is said by `who` (an assistant's when who is "assistant")."""
    events: list[Event] = []
    for n, turn in enumerate(turns):
        said, who = (turn, speaker) if isinstance(turn, str) else turn
        role = Role.ASSISTANT if who == "assistant" else Role.USER
        events.append(_event(n, said, role, None if who == "assistant" else who))
    return [c.text for c in extract_offline(events[-1], events[:-1])]


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        (("My daughter Mia turns 7 on Saturday.", "Mia is allergic to peanuts."),
         "Daughter Mia is allergic to peanuts"),
        (("My son Will was diagnosed last year.", "Will is also autistic."),
         "Son Will is also autistic"),
        (("Sofia, my niece, is staying with us this week.", "Sofia can't have eggs."),
         "Niece Sofia cannot have eggs"),
        (("My son, Leo, is nine now.", "Leo wants to do archery."),
         "Son Leo wants to do archery"),
        (("My sister Ana came over for lunch. She lives in Bristol.",),
         "Sister Ana lives in Bristol"),
        (("My brother Tom called. He's a nurse in Leeds.",), "Brother Tom is a nurse in Leeds"),
        (("My sister Ana came over for lunch. Her birthday is on May 3.",),
         "Sister Ana's birthday is on May 3"),
    ],
)  # fmt: skip
def test_a_named_person_said_again_is_recorded_as_whose_they_are(
    turns: tuple[str, ...], record: str
) -> None:
    assert record in texts(*turns)


def test_a_named_speaker_s_person_is_theirs() -> None:
    said = texts("My daughter Mia turns 7.", "Mia is allergic to peanuts.", speaker="Priya")
    assert said == ["Priya's daughter Mia is allergic to peanuts"]


def test_an_assistant_turn_between_keeps_the_introduction() -> None:
    said = texts(
        "My daughter Mia turns 7 on Saturday.",
        ("Happy birthday to her! Any plans?", "assistant"),
        "Mia is allergic to peanuts, so no cake with nuts.",
    )
    assert any(s.startswith("Daughter Mia is allergic to peanuts") for s in said)


@pytest.mark.parametrize(
    "turns",
    [
        ("Mia is allergic to peanuts.",),  # never introduced
        ("Will is also autistic.",),  # "Will" is a name only when introduced as one
        ("My friend June lives nearby.", "Rose is allergic to peanuts."),  # another name
        # one name for two relations
        ("My daughter Mia turns 7. My best friend Mia is visiting.", "Mia is allergic to peanuts."),
        # the speaker's own name, and the assistant's
        ("My name is Mia. My cousin Mia was named after me.", "Mia is allergic to peanuts."),
        ("I'll call you Max. My dog Max is a beagle.", "Max is allergic to chicken."),
        (("Hi, I am Max.", "assistant"), "My dog Max is a beagle.", "Max is allergic to chicken."),
        # "she": two people, or someone else named, or a relation that says no woman
        ("My sister Ana met my mom for lunch. She lives in Bristol.",),
        ("My sister Ana met Laura for lunch. She lives in Bristol.",),
        ("My friend Ana came over for lunch. She lives in Bristol.",),
        ("My brother Tom came over for lunch. She lives in Bristol.",),
        ("My sister Ana came over for lunch.", "She lives in Bristol."),  # another turn
    ],
)
def test_what_could_be_misread_changes_nothing(turns: tuple[str | tuple[str, str], ...]) -> None:
    said = texts(*turns)
    assert not any(w in s for s in said for w in ("Mia is", "Will is", "Rose", "Max is", "Ana li"))


def test_a_name_after_a_modal_s_place_is_no_subject() -> None:
    said = texts("My son Will turns 9 soon.", "Will you remind me to book his party?")
    assert not any("Will" in s for s in said)
    said = texts("My boss Mark is strict.", "Mark the date: I fly to Oslo on May 3.")
    assert not any("Mark" in s for s in said)


def test_the_other_speaker_s_people_and_names_are_never_rewritten() -> None:
    """Two named speakers talk about each other and about their own people."""
    melanie_s = texts(
        ("My son Leo loves the beach.", "Melanie"),
        ("Leo wants to do archery this summer.", "Caroline"),
    )
    assert not any("Leo" in s for s in melanie_s)
    listener = texts(
        ("Hey Caroline, how are you?", "Melanie"),
        ("My friend Melanie is amazing.", "Caroline"),
        ("Melanie is always so supportive of my painting.", "Caroline"),
    )
    assert not any("friend Melanie" in s for s in listener)


def test_introductions_are_read_off_what_the_speaker_said() -> None:
    people = introduced(["my son, Leo, is nine", "Sofia, my niece, is here", "my boss Mark Jones"])
    assert {n: p.said for n, p in people.by_name.items()} == {
        "Leo": "my son Leo",
        "Sofia": "my niece Sofia",
        "Mark": "my boss Mark Jones",
    }
    assert introduced(["my kids Mia and Leo"]).by_name == {}  # no one kid is named
    assert introduced(["Thanks, my friend."]).by_name == {}
    assert introduced(["Tom, my brother, and Ana"]).by_name == {}  # a list of three


def test_a_clause_is_read_as_said_of_the_person_only_at_its_start() -> None:
    people = introduced(["my daughter Mia"])
    assert people.named("Mia is allergic to peanuts") == "my daughter Mia is allergic to peanuts"
    assert people.named("Mia and I baked bread") == "my daughter Mia and I baked bread"
    assert people.named("Mia and Leo baked bread") == "Mia and Leo baked bread"
    assert people.named("Mia Jones is my boss") == "Mia Jones is my boss"
    assert people.named("I love Mia") == "I love Mia"
    assert People().named("Mia is here") == "Mia is here"


def test_a_name_is_a_content_word_even_when_it_is_a_common_one() -> None:
    """ "Will" counts as a word of what a plain fact is about, as "Mia" does."""
    assert texts("My son Will is also autistic.") == ["Son Will is also autistic"]
    assert texts("My son will be late.") == []
