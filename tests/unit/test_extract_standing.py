"""Standing things said in passing inside other requests: how to answer, money being
tight, and a condition followed by a question about it (the offline extractor)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.model import Authority, Event, Kind, Role

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def extract(text: str, speaker: str | None = None) -> list[tuple[str, str | None, Kind]]:
    meta = {"speaker": speaker} if speaker else {}
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, text, T, meta)
    return [(c.text, c.field, c.kind) for c in extract_offline(event)]


@pytest.mark.parametrize(
    ("said", "text", "aspect"),
    [
        ("Sort my inbox rules. Numbered list please, I'm on a train", "Wants answers as "
         "numbered steps", "format"),
        ("Compare these two mortgages, in a table please", "Wants answers as a table", "format"),
        ("Which laptop? Lead with the verdict, I can read the why later", "Wants the answer "
         "first, then the explanation", "order"),
        ("Explain index funds. Keep it short, I have two minutes", "Wants short answers",
         "length"),
        ("What is a heat pump? No jargon please", "Wants plain words, without jargon", "wording"),
        ("Tell me about ISAs in plain English", "Wants plain words, without jargon", "wording"),
        ("Review my essay and skip the pleasantries", "Wants direct answers, without small "
         "talk", "tone"),
        ("From now on reply to me in Portuguese", "Wants answers in Portuguese", "language"),
    ],
)  # fmt: skip
def test_an_instruction_on_how_to_answer_is_a_standing_preference(
    said: str, text: str, aspect: str
) -> None:
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, said, T, {})
    made = [c for c in extract_offline(event) if c.field == f"answer_style:{aspect}"]
    assert [c.text for c in made] == [text]
    assert made[0].kind is Kind.PREFERENCE and made[0].authority is Authority.CONFIRMED


@pytest.mark.parametrize(
    "said",
    [
        "I wrote a list of bullet points for my talk",
        "We sat at a table for two by the window",
        "I answered first in the pub quiz",
        "She speaks in French to her mother",
        "The answer first appeared in a 1970s textbook",
    ],
)
def test_a_sentence_that_only_mentions_a_list_or_an_answer_is_none(said: str) -> None:
    assert not [f for _, f, _ in extract(said) if f and f.startswith("answer_style:")]


def test_in_a_conversation_between_named_people_an_instruction_is_not_for_the_assistant() -> None:
    said = "Bullet points please, I'm reading on my phone"
    assert not [f for _, f, _ in extract(said, "Jon") if f and f.startswith("answer_style:")]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("We're fine for now but money's going to be tight until the contract comes through",
         "Money is going to be tight until the contract comes through"),
        ("I'm on a tight budget this month", "Is on a tight budget this month"),
        ("honestly we're skint till payday", "The user says they are skint till payday"),
        ("I'm really broke this month", "Is really broke this month"),
        ("Money is really tight right now", "Money is really tight right now"),
        ("our budget is going to be very tight", "Budget is going to be very tight"),
    ],
)  # fmt: skip
def test_money_being_tight_is_recorded_as_said(said: str, text: str) -> None:
    assert (text, "money", Kind.SEMANTIC) in extract(said)


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("ok. I have asthma and use an inhaler, can I take it through security", "security"),
        ("our heating bill is like 300 a month, where do we even start", "start"),
    ],
)
def test_a_statement_followed_by_a_question_about_it_is_recorded_without_it(
    said: str, question: str
) -> None:
    texts = [t for t, _, _ in extract(said)]
    assert texts and not any(question in t for t in texts), texts


@pytest.mark.parametrize(
    "said",
    [
        "Do not use bullet points",
        "Don't answer in French",
        "Never reply in Spanish",
        "Please don't give me the answer first",
        "Don't skip the small talk",
        "no need to keep it short, I have time",
    ],
)
def test_an_instruction_said_in_the_negative_is_not_recorded_as_wanted(said: str) -> None:
    made = [(t, f) for t, f, _ in extract(said) if f and f.startswith("answer_style:")]
    assert made == []


@pytest.mark.parametrize(
    "said",
    [
        "I answer in Spanish at work",
        "My kids speak in French at home",
        "We always reply in English to customers",
        "I keep it short when I write to my boss",
        "I use no jargon in my talks",
        "My manager wants everything in bullet points",
        "She would like it in a table",
    ],
)
def test_what_the_person_says_they_do_is_no_instruction_on_how_to_answer(said: str) -> None:
    made = [(t, f) for t, f, _ in extract(said) if f and f.startswith("answer_style:")]
    assert made == []


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I would like answers in a table", "Wants answers as a table"),
        ("I hate walls of text", "Wants short answers"),
        ("I need it in plain English", "Wants plain words, without jargon"),
        ("Please always answer in Spanish", "Wants answers in Spanish"),
        ("I do not like long paragraphs", "Wants short answers"),
    ],
)
def test_an_instruction_said_as_what_the_person_wants_is_one(said: str, text: str) -> None:
    assert text in [t for t, f, _ in extract(said) if f and f.startswith("answer_style:")]


@pytest.mark.parametrize(
    "said",
    [
        "Their money is tight",
        "My sister's money is tight this year",
        "I wonder if money is tight for them",
        "Whether the budget is tight depends on the grant",
    ],
)
def test_money_that_is_someone_elses_or_only_supposed_is_not_the_persons(said: str) -> None:
    assert [t for t, f, _ in extract(said) if f == "money"] == []


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("Our budget's going to be tight til March", "Budget is going to be tight until March"),
        ("We're broke until payday so no fancy dinners", "The user says they are broke until "
         "payday"),
        ("money is tight at the moment, which means no holiday", "Money is tight at the moment"),
    ],
)  # fmt: skip
def test_money_being_tight_is_recorded_without_what_follows_from_it(said: str, text: str) -> None:
    assert [t for t, f, _ in extract(said) if f == "money"] == [text]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I have sensitive ears and avoid loud bars.", "Has sensitive ears and avoids loud bars"),
        ("I'm an early riser, so I only book morning classes.",
         "Is an early riser, so they only book morning classes"),
        ("I'm a keen cyclist, so I need a hotel with secure bike storage.",
         "Is a keen cyclist, so they need a hotel with secure bike storage"),
        ("I'm a lifelong Celtic fan and will only wear green on match days.",
         "Is a lifelong Celtic fan and will only wear green on match days"),
        ("I find crowded museums exhausting.", "Finds crowded museums exhausting"),
        ("I find it hard to focus in open-plan offices.",
         "Finds it hard to focus in open-plan offices"),
        ("I am uninterested in reality TV.", "Is uninterested in reality TV"),
        ("I'm fascinated by medieval castles.", "Is fascinated by medieval castles"),
        ("I have a moral objection to zoos.", "Has a moral objection to zoos"),
    ],
)  # fmt: skip
def test_a_statement_that_goes_on_to_a_stance_is_a_preference(said: str, text: str) -> None:
    # a reason said first, a judgement of a kind of thing, or a stance no rule names
    # word for word: a standing preference all the same, so it applies to later requests
    # as the preferences said plainly beside it do (`remem.policy.applies.is_standing`)
    assert extract(said) == [(text, None, Kind.PREFERENCE)]


@pytest.mark.parametrize(
    "said",
    [
        "I moved to Leeds in May and started a new job.",
        "I went to Rome last spring and loved the food.",
        "I volunteer at the food bank on Fridays.",
    ],
)
def test_a_plain_fact_without_a_stance_stays_a_fact(said: str) -> None:
    assert [kind for _, _, kind in extract(said)] == [Kind.SEMANTIC]


def test_a_judgement_of_what_the_listener_said_is_no_preference() -> None:
    assert extract("I find it boring.") == []
