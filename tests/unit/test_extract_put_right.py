"""What a person says in passing is read as meant: "is ok" is said, not signed off; a
request after a statement leaves the statement; a heading before a colon is no subject;
a word put right ("actually it's Tuesday, not Monday") corrects the statement it is in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.extract import extract_offline
from remem.model import Candidate, Event, Role

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def said(*turns: str) -> list[Candidate]:
    """The candidates of the last turn, the earlier ones its session (user turns; an
    assistant's starts with "A: ")."""
    events = [
        Event(
            f"ev-{i}", "t", "a", "s",
            Role.ASSISTANT if text.startswith("A: ") else Role.USER,
            text.removeprefix("A: "), T + timedelta(minutes=i),
        )
        for i, text in enumerate(turns)
    ]  # fmt: skip
    return extract_offline(events[-1], events[:-1])


def texts(*turns: str) -> list[str]:
    return [c.text for c in said(*turns)]


def test_ok_after_a_verb_of_being_is_part_of_the_statement() -> None:
    (c,) = said("I'm lactose intolerant too but a bit of cheese is ok")
    assert c.text == "Is lactose intolerant too but a bit of cheese is ok"
    assert c.field == "diet:lactose_intolerant"
    assert texts("I'm vegan, ok") == ["Is vegan"]  # a sign-off still goes


def test_a_rhetorical_question_in_the_past_is_not_kept() -> None:
    assert texts("we've invited the whole class, what was I thinking.") == [
        "The user says they have invited the whole class"
    ]


@pytest.mark.parametrize(
    ("turn", "text", "field"),
    [
        ("Also I'm dyslexic, so please keep your answers short.", "Is dyslexic",
         "condition:dyslexia"),
        # a statement a rule reads whole keeps its request: nothing said is lost
        ("I'm allergic to sesame - please check menus for it",
         "Is allergic to sesame - please check menus for it", "allergy:sesame"),
        ("I'm vegetarian, so please no meat.", "Is vegetarian, so please no meat", "diet"),
    ],
)  # fmt: skip
def test_a_request_after_a_statement_leaves_the_statement(turn: str, text: str, field: str) -> None:
    assert [(c.text, c.field) for c in said(turn)][:1] == [(text, field)]


def test_a_statement_with_nothing_else_to_keep_keeps_its_request() -> None:
    assert texts("I'm teetotal myself so please don't suggest a pub crawl") == [
        "Is teetotal themselves so please do not suggest a pub crawl"
    ]


@pytest.mark.parametrize(
    ("turn", "field"),
    [("I'm autistic", "condition:autism"), ("I have ADHD", "condition:adhd"),
     ("I have IBS", "condition:ibs"), ("I'm dyspraxic", "condition:dyspraxia")],
)  # fmt: skip
def test_long_term_conditions_said_in_one_word(turn: str, field: str) -> None:
    (c,) = said(turn)
    assert c.field == field and c.value == "has"


@pytest.mark.parametrize(
    ("turn", "text"),
    [
        ("Family info for you: my wife is Ana.", "Wife is Ana"),
        ("Quick health note: I'm allergic to shellfish", "Is allergic to shellfish"),
    ],
)
def test_a_heading_before_a_colon_is_not_read_as_the_statement(turn: str, text: str) -> None:
    assert texts(turn) == [text]


def test_a_colon_after_the_speakers_own_words_is_kept() -> None:
    assert texts("My allergies: peanuts and shellfish") == ["Allergies: peanuts and shellfish"]


def test_a_word_put_right_corrects_the_statement_on_its_field() -> None:
    (c,) = said(
        "My yoga class is on Monday evenings at 7",
        "A: Okay, I'll keep Monday 7pm free.",
        "actually it's Tuesday not Monday, they changed it this term",
    )
    assert (c.text, c.field, c.value) == (
        "Yoga class is on Tuesday evenings at 7", "date:yoga_class", "Tuesday evenings at 7"
    )  # fmt: skip
    assert c.is_correction
    assert c.source.event_ids == ("ev-0", "ev-2")  # the turn put right, then the correction


def test_a_word_put_right_corrects_a_plain_fact() -> None:
    (c,) = said("My rent is due on the 1st of each month", "sorry, I meant the 5th, not the 1st")
    assert c.text == "Rent is due on the 5th of each month" and c.is_correction


def test_a_correction_of_a_word_no_statement_holds_makes_nothing() -> None:
    assert said("My yoga class is on Monday evenings", "actually it's red, not blue") == []
    assert said("it's Tuesday not Monday") == []
