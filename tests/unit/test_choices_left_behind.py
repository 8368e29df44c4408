"""A choice made instead of another ends the records that told of the other, and no
record that only shares a word with it (`remem.consolidate.rules.choices_left_behind`).
Pure: the extractor and the rule, on records built here.

Every sentence here is written for these tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from remem.consolidate.rules import choices_left_behind
from remem.extract import extract_offline
from remem.model import (
    Authority,
    Candidate,
    Event,
    Kind,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)

T = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


def _choice(said: str) -> Candidate:
    event = Event("ev-new", "acme", "u7", "s2", Role.USER, said, T, {})
    (candidate,) = extract_offline(event)
    return candidate


def _record(text: str, field: str | None = None, value: str | None = None) -> Record:
    when = T - timedelta(days=10)
    return Record(
        id="rec-old", tenant="acme", actor="u7", namespace="/tenants/acme/actors/u7/semantic/",
        kind=Kind.SEMANTIC, text=text, field=field, value=value,
        source=Source("event", ("ev-0",), "offline", "offline-rules/1"),
        authority=Authority.INFERRED, sensitivity=Sensitivity.NORMAL,
        valid_from=when, created_at=when, updated_at=when, status=Status.ACTIVE,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("said", "old", "ended"),
    [
        ("switched to a 10k instead of the half", "Is doing the half marathon in May", True),
        ("I'm doing the 10k instead of the half marathon now",
         "Is training for the half marathon", True),
        ("I'm doing the 10k instead of the half", "Is doing the half in Bath", True),
        ("I'm doing the 10k instead of the half", "Ran half of the route today", False),
        ("I'm having tea instead of coffee these days", "Bought a coffee grinder", False),
        ("I'm having tea instead of coffee these days", "Is having coffee every morning", True),
        ("switched to a 10k instead of the half", "Is doing a 10k and the half", False),
    ],
)  # fmt: skip
def test_a_choice_instead_ends_what_told_of_the_other(said: str, old: str, ended: bool) -> None:
    assert choices_left_behind(_choice(said), [_record(old)]) == (("rec-old",) if ended else ())


def test_a_choice_instead_ends_the_choice_it_reverses() -> None:
    first = _record("Is doing the 10k instead of the half", "choice:half", "10k")
    again = _choice("I'm doing the half again instead of the 10k")
    assert (again.field, again.value) == ("choice:10k", "half")
    assert choices_left_behind(again, [first]) == ("rec-old",)


def test_a_choice_instead_leaves_a_record_about_a_field_of_its_own() -> None:
    liked = _record("Loves coffee", "likes:coffee", "likes")
    assert choices_left_behind(_choice("I'm having tea instead of coffee now"), [liked]) == ()


def test_a_later_record_is_not_ended_by_an_older_choice() -> None:
    later = T + timedelta(days=1)
    newer = replace(
        _record("Is doing the half marathon in May"),
        valid_from=later,
        created_at=later,
        updated_at=later,
    )
    assert choices_left_behind(_choice("switched to a 10k instead of the half"), [newer]) == ()


@pytest.mark.parametrize(
    ("said", "field", "value"),
    [
        ("switched to a 10k instead of the half", "choice:half", "10k"),
        ("I'm doing the 10k instead of the half marathon now", "choice:half_marathon", "10k"),
        ("I've switched from the half to the 10k", "choice:half", "10k"),
        ("we're taking the train instead of flying", "choice:flying", "train"),
        ("I'm drinking oat milk instead of cow's milk these days", "choice:cows_milk", "oat milk"),
    ],
)
def test_a_choice_made_instead_of_another_names_what_it_replaces(
    said: str, field: str, value: str
) -> None:
    choice = _choice(said)
    assert (choice.field, choice.value) == (field, value)


def test_a_choice_of_no_thing_is_none() -> None:
    event = Event("ev-new", "acme", "u7", "s2", Role.USER, "I'll do it instead of you", T, {})
    assert extract_offline(event) == []
