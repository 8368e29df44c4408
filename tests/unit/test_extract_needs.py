"""What the body needs: aids, conditions, limits and access needs are recorded as
sensitive constraints with a field, so a later plan can respect them, and a
request that shares no word with them still brings them back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.model import Event, Kind, Role, Sensitivity

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def extract(text: str, speaker: str | None = "Ana") -> list[tuple[str, str | None, str | None]]:
    meta = {"speaker": speaker} if speaker else {}
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, text, T, meta)
    found = extract_offline(event)
    for c in found:
        if c.field is not None:
            assert c.kind is Kind.SEMANTIC and c.sensitivity is Sensitivity.SENSITIVE, c
    return [(c.text, c.field, c.value) for c in found]


@pytest.mark.parametrize(
    ("said", "text", "field", "value"),
    [
        ("I get seasick on boats.", "Ana gets seasick on boats", "condition:seasickness", "has"),
        ("I don't get carsick at all.", "Ana does not get carsick at all",
         "condition:car_sickness", "does not have"),
        ("I use a wheelchair.", "Ana uses a wheelchair", "uses:wheelchair", "uses"),
        ("I'm a wheelchair user.", "Ana is a wheelchair user", "uses:wheelchair", "uses"),
        ("I walk with a cane these days.", "Ana walks with a cane these days", "uses:cane",
         "uses"),
        ("I wear hearing aids.", "Ana wears hearing aids", "uses:hearing_aid", "uses"),
        ("I need step-free access everywhere.", "Ana needs step-free access everywhere",
         "needs:step_free_access", "needs"),
        ("I'm deaf in one ear.", "Ana is deaf in one ear", "condition:deafness", "has"),
        ("I'm diabetic.", "Ana is diabetic", "condition:diabetes", "has"),
        ("I have bad knees.", "Ana has bad knees", "condition:bad_knees", "has"),
        ("My back is really bad lately.", "Ana's back is really bad lately",
         "condition:bad_back", "has"),
        ("I suffer from migraines.", "Ana suffers from migraines", "condition:migraines", "has"),
        ("I can't climb stairs anymore.", "Ana cannot climb stairs anymore",
         "cannot:climb_stair", "cannot"),
        ("My knees can't handle stairs.", "Ana's knees cannot handle stairs", "cannot:stair",
         "cannot"),
        ("I can't swim.", "Ana cannot swim", "cannot:swim", "cannot"),
        ("I can't do long walks.", "Ana cannot do long walks", "cannot:do_long_walk", "cannot"),
    ],
)  # fmt: skip
def test_a_need_of_the_body_is_a_sensitive_constraint_with_a_field(
    said: str, text: str, field: str, value: str
) -> None:
    assert extract(said) == [(text, field, value)]


@pytest.mark.parametrize(
    "said",
    [
        "I can't wait to see you!",
        "I can't see the point of it.",
        "I need a lift to the airport.",
        "I can't drive today.",
        "I can't believe it worked.",
        "I can't handle this anymore.",
    ],
)
def test_what_only_sounds_like_a_limit_gets_no_such_field(said: str) -> None:
    fields = [f for _, f, _ in extract(said) if f]
    assert not [f for f in fields if f.split(":")[0] in ("cannot", "needs", "uses", "condition")]


def test_without_a_speaker_the_need_is_still_recorded() -> None:
    assert extract("I get seasick.", speaker=None) == [
        ("Gets seasick", "condition:seasickness", "has")
    ]
