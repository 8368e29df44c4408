"""Records of everyday chat come out whole: no adverb conjugated as a verb, no list item
that goes on about the allergy, no fragment without its object, no unknown "she", and
the speaker named where "my" would leave it unclear whose."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.model import Event, Role

T = datetime(2026, 4, 2, 18, 0, tzinfo=UTC)


def found(said: str, speaker: str | None = None) -> list[tuple[str, str | None]]:
    meta = {"speaker": speaker} if speaker else {}
    event = Event("ev-1", "t", "a", "s", Role.USER, said, T, meta)
    return [(c.text, c.field) for c in extract_offline(event)]


def texts(said: str, speaker: str | None = None) -> list[str]:
    return [text for text, _ in found(said, speaker)]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("i only ever used excel for budgets", "Only ever used excel for budgets"),
        ("I once sailed from Oban to Mull", "Once sailed from Oban to Mull"),
        ("I literally own three kettles", "Literally owns three kettles"),
        ("I basically live on toast and tea", "Basically lives on toast and tea"),
    ],
)  # fmt: skip
def test_an_adverb_before_the_verb_is_not_conjugated(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_an_allergy_list_ends_where_the_sentence_goes_on_about_it() -> None:
    said = "im allergic to kiwi, like hives-everywhere allergic, found out at a wedding"
    assert found(said) == [("Is allergic to kiwi", "allergy:kiwi")]


def test_an_allergy_list_of_several_things_still_splits() -> None:
    assert [f for _, f in found("I'm allergic to latex, kiwi, and bananas")] == [
        "allergy:latex",
        "allergy:kiwi",
        "allergy:banana",
    ]


@pytest.mark.parametrize(
    "said",
    [
        "Is rowing fine at this stage? I go twice a week",
        "We did it on Monday",
        "I've been going every Saturday for years",
    ],
)
def test_a_statement_of_when_without_what_stores_nothing(said: str) -> None:
    assert texts(said) == []


def test_a_statement_of_when_with_what_is_kept() -> None:
    assert texts("I go rowing twice a week") == ["Goes rowing twice a week"]


def test_a_verbless_thing_to_remember_says_it_was_asked() -> None:
    assert texts("Remember Biscuit") == ["Asked to remember Biscuit"]
    assert texts("remember my wrists, nothing fiddly") == [
        "Asked to remember their wrists, nothing fiddly"
    ]


def test_remember_said_to_another_person_in_a_named_thread_stores_nothing() -> None:
    assert texts("Remember, slow and steady wins the race.", speaker="Ola") == []


def test_between_two_things_is_not_cut_into_a_clause() -> None:
    assert texts("between the move and our own wedding I'm exhausted") == []


def test_an_unknown_she_is_cut_from_the_end_of_a_statement() -> None:
    assert texts("money's gonna be tight til she finds a new job") == ["Money is going to be tight"]


def test_a_she_named_before_stays() -> None:
    (text,) = texts("my sister Ines moved to Oslo and she loves the light there")
    assert "Ines" in text and "she loves" in text


def test_a_she_after_a_named_person_s_relative_stays() -> None:
    (text,) = texts("My cousin had a rough year, so I'm helping her find a flat.", speaker="Jo")
    assert text.startswith("Jo's cousin had a rough year") and "her" in text


def test_two_people_who_changed_their_diet_together_are_both_named() -> None:
    said = "big news: Sam and I read a book on fishing quotas and we've both gone fully vegetarian"
    assert found(said)[-1] == ("The user and Sam have both gone fully vegetarian", "diet")


def test_a_diet_with_an_aside_after_a_comma_is_still_the_diet() -> None:
    assert found("I'm vegetarian, eggs maybe once a week")[0][1] == "diet"
    assert found("I'm vegan, except for honey")[0][1] is None


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("my wrists ache after typing, is that normal", "Wrists ache after typing"),
        ("I just started at the bike shop so gotta go", "Just started at the bike shop"),
        ("I work nights at the depot, ttyl", "Works nights at the depot"),
    ],
)  # fmt: skip
def test_a_question_or_goodbye_after_a_statement_is_left_out(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_street_named_bye_is_no_goodbye() -> None:
    assert texts("My aunt lives on Bye Lane in Truro") == ["Aunt lives on Bye Lane in Truro"]


def test_other_news_opens_a_clause_as_big_news_does() -> None:
    said = "other news: Sam and I adopted a greyhound called Pip"
    assert texts(said) == ["The user and Sam adopted a greyhound called Pip"]
