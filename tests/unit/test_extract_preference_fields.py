"""Which stated preferences replace one another: the field a preference is kept under,
through the offline extractor and consolidation's rules, without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.consolidate import decide
from remem.extract import extract_offline
from remem.model import Action, Candidate, Event, Record, Role, Sensitivity, Status

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def said(text: str, day: int) -> list[Candidate]:
    event = Event(f"ev-{day}", "acme", "u42", f"s{day}", Role.USER, text, T + timedelta(days=day))
    return extract_offline(event)


def kept(c: Candidate, n: int) -> Record:
    """The record consolidation writes for an added candidate."""
    return Record(
        id=f"r{n}", tenant="acme", actor="u42", namespace="/tenants/acme/actors/u42/facts",
        kind=c.kind, text=c.text, source=c.source, authority=c.authority,
        sensitivity=Sensitivity.NORMAL, valid_from=c.observed_at, created_at=c.observed_at,
        updated_at=c.observed_at, status=Status.ACTIVE, field=c.field, value=c.value,
    )  # fmt: skip


def decisions(*statements: str) -> list[tuple[str, Action, str]]:
    """Each statement's candidates decided, in order, against the records made before."""
    records: list[Record] = []
    out = []
    for day, text in enumerate(statements, start=1):
        for c in said(text, day):
            same = [r for r in records if c.field is not None and r.field == c.field]
            d = decide(c, same, [])
            out.append((c.text, d.action, d.reason))
            if d.action in (Action.ADD, Action.UPDATE):
                records.append(kept(c, len(records)))
    return out


@pytest.mark.parametrize(
    "statements",
    [
        # two kinds of car, and an avoidance: three preferences, none replaces another
        (
            "I strongly prefer cars with a high ground clearance.",
            "I strongly prefer cars with manual transmissions over automatic ones.",
            "I prefer to avoid rental cars with automatic transmissions; I only drive manual.",
        ),
        (
            "I prefer to avoid rental cars with automatic transmissions; I only drive manual.",
            "I strongly prefer cars with manual transmissions.",
        ),
        ("I prefer hotels with a pool.", "I prefer hotels that allow pets."),
        ("I prefer seats with extra legroom.", "I prefer seats that recline."),
    ],
)
def test_preferences_for_kinds_of_one_thing_all_stand(statements: tuple[str, ...]) -> None:
    made = decisions(*statements)
    assert len(made) >= len(statements)
    assert all(action is Action.ADD for _, action, _ in made), made


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I prefer the train.", "I prefer flying."),
        ("I prefer aisle seats.", "I prefer window seats."),
        ("I prefer tea.", "I prefer coffee."),
    ],
)
def test_a_new_choice_of_the_same_thing_still_replaces_the_old(old: str, new: str) -> None:
    made = decisions(old, new)
    assert [action for _, action, _ in made] == [Action.ADD, Action.UPDATE], made
