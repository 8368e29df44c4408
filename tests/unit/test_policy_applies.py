"""What a standing preference applies to: requests, domains and standing records, as
pure functions of text and cosines (no store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.model import Authority, Kind, Record, Sensitivity, Source
from remem.policy.applies import (
    DOMAIN_MARGIN,
    DOMAINS,
    NAMES,
    NEAREST_COSINE,
    applies_to,
    domains_of,
    is_request,
    is_standing,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def rec(text: str, kind: Kind = Kind.SEMANTIC, field: str | None = None) -> Record:
    return Record(
        id="r1", tenant="t", actor="a", namespace="/tenants/t/actors/a", kind=kind, text=text,
        source=Source("explicit", ()), authority=Authority.CONFIRMED,
        sensitivity=Sensitivity.NORMAL, valid_from=NOW, created_at=NOW, updated_at=NOW,
        field=field,
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "suggest some dinner recipes",
        "Where should I eat in Istanbul?",
        "plan my weekend",
        "What outdoor activities can I try?",
        "Book me a table for Friday",
        "Can you recommend a hotel in Lisbon?",
        "Any tips for my first marathon?",
        "Packing list for three days of hiking in the Dolomites?",  # a thing to be made
        "Gift ideas for a colleague who is retiring",
        "What to wear to a winter wedding?",
        "What are some good pets for a small flat?",
        "Which laptop should I buy?",
        "Help me choose a gift for my brother",
    ],
)
def test_a_request_for_a_recommendation_plan_booking_or_suggestion_is_one(text: str) -> None:
    assert is_request(text)


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of France?",
        "Summarise my meeting notes",
        "When is my dentist appointment?",
        "What did Melanie paint last week?",
        "What are some of Caroline's hobbies?",  # about someone named, not for the asker
        "How do I reverse a linked list in Python?",
        "What is my sister called?",
        "The list for the party is on the fridge",
        "What to do about inflation is a question for economists.",
    ],
)
def test_a_question_about_facts_or_other_people_is_not_a_request(text: str) -> None:
    assert not is_request(text)


def test_a_text_is_in_the_domains_nearest_it() -> None:
    cos = [0.0] * len(DOMAINS)
    cos[NAMES.index("travel")] = 0.45
    cos[NAMES.index("food")] = 0.45 - DOMAIN_MARGIN + 0.01  # within the margin
    cos[NAMES.index("work")] = 0.45 - DOMAIN_MARGIN - 0.01  # just beyond it
    assert domains_of("", cos) == ("food", "travel")


def test_a_text_far_from_every_domain_is_in_none() -> None:
    cos = [NEAREST_COSINE - 0.01] * len(DOMAINS)
    assert domains_of("", cos) == ()


def test_the_words_of_a_domain_place_a_text_in_it_without_cosines() -> None:
    assert domains_of("Any good recipes for dinner?") == ("food",)
    assert domains_of("Gets seasick on boats") == ("transport", "limits")
    assert domains_of("Finish the quarterly report") == ()


def test_a_standing_record_applies_through_a_shared_domain() -> None:
    assert applies_to(("food",), ("food", "travel")) == ("food",)
    assert applies_to(("entertainment",), ("food", "travel")) == ()


def test_money_and_physical_limits_bound_every_request_in_some_domain() -> None:
    assert applies_to(("limits",), ("travel",)) == ("limits",)
    assert applies_to(("money", "shopping"), ("food",)) == ("money",)
    assert applies_to(("limits",), ()) == ()  # a request in no domain: nothing applies


def test_preferences_and_constraints_are_standing_other_facts_are_not() -> None:
    assert is_standing(rec("Cannot stand jazz", Kind.PREFERENCE))
    assert is_standing(rec("Is allergic to shellfish", field="allergy:shellfish"))
    assert is_standing(rec("Is vegetarian", field="diet"))
    assert is_standing(rec("Knees cannot handle stairs"), ("limits",))
    assert not is_standing(rec("Works at Acme", field="employer"), ("work",))
    assert not is_standing(rec("Moved to Porto last year"), ("travel",))
