"""Updates said in ordinary words: a change of state ("now", "moved out to", "left X",
"ditched X for Y", "passed away", "switched to") lands on the same field as the state it
replaces, so consolidation supersedes the old one. Pure: the extractor and `decide`.

Every sentence here is written for these tests (none comes from a benchmark file)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.consolidate import decide
from remem.consolidate.rules import diets_left_behind
from remem.extract import extract_offline
from remem.model import Action, Authority, Event, Kind, Record, Role, Sensitivity, Source, Status

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def extract(text: str, speaker: str | None = "Noor") -> list[tuple[str, str | None, str | None]]:
    meta = {"speaker": speaker} if speaker else {}
    event = Event("ev-1", "acme", "u7", "s1", Role.USER, text, T, meta)
    return [(c.text, c.field, c.value) for c in extract_offline(event)]


def fields(text: str) -> dict[str, str | None]:
    return {f: v for _, f, v in extract(text) if f is not None}


# (what was said first, the update said later, the field both land on, the new value)
UPDATES = [
    ("I'm vegetarian.", "I've started eating fish again, so I'm pescatarian now.",
     "diet", "pescatarian"),
    ("I'm vegan.", "I switched to a vegetarian diet last month.", "diet", "vegetarian"),
    ("I don't eat meat.", "I went back to eating meat last winter.", "diet", "eats meat"),
    ("We live in Sheffield.", "We finally moved out to the coast in March.", "home", "the coast"),
    ("I live in Derby.", "We moved down to Exeter last spring.", "home", "Exeter"),
    ("I work at a design agency.", "I left the agency, freelancing now.", "employer",
     "self-employed"),
    ("I'm a copywriter at a design agency.", "I left the agency, freelancing now.", "occupation",
     "freelancer"),
    ("I work at Brightwell Labs.", "I don't work at Brightwell Labs anymore.", "employer",
     "left Brightwell Labs"),
    ("My phone is an iPhone 12.", "I ditched my old phone for a Pixel.", "device:phone", "Pixel"),
    ("I have a Dell laptop.", "I swapped my laptop for a ThinkPad.", "device:laptop",
     "ThinkPad"),
    ("My car is a Corolla.", "I traded in my old car for a Kia Niro.", "car", "Kia Niro"),
    ("I'm pescatarian.", "I switched to a plant-based diet.", "diet", "vegan"),
    ("I live in Leeds.", "We moved to a bigger flat in Bristol.", "home", "Bristol"),
    ("We live in Riga.", "We relocated to Tallinn for my partner's job.", "home", "Tallinn"),
    ("I use a Nokia phone.", "I switched to an Android phone.", "device:phone", "Android"),
    ("My wife is called Ines.", "I split up with my wife last year.", "relation:wife",
     "split up"),
    ("We have a cat named Pickle.", "Our cat passed away last week.", "relation:cat",
     "passed away"),
    ("My grandad is called Idris.", "My grandad died in the autumn.", "relation:grandad",
     "passed away"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "after", "field", "value"), UPDATES)
def test_an_update_said_in_ordinary_words_lands_on_the_field_it_replaces(
    before: str, after: str, field: str, value: str
) -> None:
    assert field in fields(before), extract(before)
    assert fields(after).get(field) == value, extract(after)


@pytest.mark.parametrize(("before", "after", "field", "value"), UPDATES)
def test_the_update_supersedes_the_earlier_record_of_that_field(
    before: str, after: str, field: str, value: str
) -> None:
    old_event = Event("ev-0", "acme", "u7", "s0", Role.USER, before, T - timedelta(days=60), {})
    new_event = Event("ev-1", "acme", "u7", "s1", Role.USER, after, T, {})
    (old,) = [c for c in extract_offline(old_event) if c.field == field]
    (new,) = [c for c in extract_offline(new_event) if c.field == field]
    stored = Record(
        id="rec-old", tenant="acme", actor="u7", namespace="/tenants/acme/actors/u7/semantic/",
        kind=old.kind, text=old.text, field=old.field, value=old.value,
        source=Source("event", ("ev-0",), "offline", "offline-rules/1"),
        authority=Authority.INFERRED, sensitivity=old.sensitivity, valid_from=old.observed_at,
        valid_until=None, created_at=old.observed_at, updated_at=old.observed_at,
        status=Status.ACTIVE,
    )  # fmt: skip
    decision = decide(new, [stored], [])
    assert (decision.action, decision.supersedes) == (Action.UPDATE, ("rec-old",))
    assert new.is_correction


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I've started eating fish again, so I'm pescatarian now.", "Noor is pescatarian now"),
        ("We finally moved out to the coast in March.",
         "Noor says they finally moved out to the coast in March"),
        ("I left the agency, freelancing now.", "Noor left the agency, freelancing now"),
        ("I ditched my old phone for a Pixel.", "Noor ditched their old phone for a Pixel"),
        ("Our cat passed away last week.", "Noor's cat passed away last week"),
        # chat leaves the "I" unsaid
        ("ditched my old phone for a Pixel", "Noor ditched their old phone for a Pixel"),
        ("left the agency, freelancing now", "Noor left the agency, freelancing now"),
        ("I split up with my wife last year.", "Noor split up with their wife last year"),
    ],
)  # fmt: skip
def test_an_update_reads_as_a_sentence_naming_whose_it_is(said: str, text: str) -> None:
    assert text in [t for t, f, _ in extract(said) if f is not None]


@pytest.mark.parametrize(
    "said",
    [
        "I left the party early.",  # leaving a place or an event is no change of job
        "I left my keys at the office.",
        "I left the office at six.",
        "I ditched the plan for a picnic.",  # no device named
        "The film died in the second half.",
        "I was tired, so I went to bed.",
        "I broke up with my band.",  # a band is no partner
        "I live in a small house.",
    ],
)
def test_words_of_change_without_a_state_set_no_field(said: str) -> None:
    assert fields(said) == {}, extract(said)


def _diet(value: str, days_ago: int = 30) -> Record:
    when = T - timedelta(days=days_ago)
    return Record(
        id=f"rec-{value}", tenant="acme", actor="u7", namespace="/tenants/acme/actors/u7/semantic/",
        kind=Kind.SEMANTIC, text=f"Is {value}", field="diet", value=value,
        source=Source("event", ("ev-0",), "offline", "offline-rules/1"),
        authority=Authority.INFERRED, sensitivity=Sensitivity.PERSONAL, valid_from=when,
        created_at=when, updated_at=when,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("said", "diet", "ended"),
    [
        ("I've started eating fish again.", "vegetarian", True),
        ("I started eating eggs again.", "vegan", True),
        ("I eat chicken again these days.", "pescatarian", True),
        ("I've started eating fish again.", "pescatarian", False),  # a pescatarian eats fish
        ("I started eating eggs again.", "vegetarian", False),
        ("I've stopped eating fish.", "vegetarian", False),  # not eating it ends nothing
    ],
)
def test_eating_what_a_diet_leaves_out_ends_that_diet(said: str, diet: str, ended: bool) -> None:
    (cand,) = extract_offline(Event("ev-1", "acme", "u7", "s1", Role.USER, said, T, {}))
    assert cand.field is not None and cand.field.startswith("eats:")
    assert diets_left_behind(cand, [_diet(diet)]) == (("rec-" + diet,) if ended else ())
    assert diets_left_behind(cand, [_diet(diet, days_ago=-1)]) == ()  # a newer diet stands
