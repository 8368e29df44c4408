"""A question about the person asks for a family of fields by its name: `fact`, `pin`
and `records(field=...)` read `allergies` as every `allergy:<x>`, `diet` as the diet
and the diet's family (`diet:<x>`, `eats:<x>`), `pets`, `family`, `job` (role and
employer), in the singular, the plural and common synonyms. Both backends; every
sentence is written for these tests."""

from __future__ import annotations

import pytest

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = both_backends


def _said(mem: Memory, *texts: str) -> None:
    for i, text in enumerate(texts):
        mem.add_event(actor="noor", session="s1", role="user", text=text, time=at(hours=i))
    mem.process()


def _fields(mem: Memory, asked: str) -> dict[str, str]:
    fact = mem.fact(actor="noor", field=asked)
    return {c.field: c.value for c in fact.candidates}


@pytest.mark.parametrize("asked", ["allergies", "allergy", "Allergies", "allergic", "allergens"])
def test_allergies_answers_every_allergy(mem: Memory, asked: str) -> None:
    _said(mem, "I'm allergic to shellfish.", "I have a mild sesame allergy.")
    fact = mem.fact(actor="noor", field=asked)
    assert fact.status == "found"
    assert {c.field: c.value for c in fact.candidates} == {
        "allergy:shellfish": "allergic",
        "allergy:sesame": "allergic",
    }


def test_an_intolerance_is_asked_for_as_one(mem: Memory) -> None:
    _said(mem, "I'm lactose intolerant.")
    assert set(_fields(mem, "intolerances")) == {"diet:lactose_intolerant"}
    assert set(_fields(mem, "allergies and intolerances")) == {"diet:lactose_intolerant"}


@pytest.mark.parametrize("asked", ["diet", "dietary restrictions", "Dietary"])
def test_diet_answers_the_diet_first_then_its_family(mem: Memory, asked: str) -> None:
    _said(mem, "I'm pescatarian.", "I'm gluten-free.", "I don't eat pork.")
    fact = mem.fact(actor="noor", field=asked)
    assert fact.status == "found" and fact.found is not None
    assert fact.found.value == "pescatarian"
    assert _fields(mem, asked) == {
        "diet": "pescatarian",
        "diet:gluten_free": "gluten-free",
        "eats:pork": "does not eat",
    }


@pytest.mark.parametrize("asked", ["pets", "pet"])
def test_pets_answers_an_animal_of_theirs(mem: Memory, asked: str) -> None:
    _said(mem, "We have a dog named Juniper.", "My sister is called Wren.")
    assert _fields(mem, asked) == {"relation:dog": "Juniper"}


@pytest.mark.parametrize("asked", ["family", "relatives"])
def test_family_answers_the_people_of_theirs_not_pets_or_friends(mem: Memory, asked: str) -> None:
    _said(
        mem,
        "My sister is called Wren.",
        "I have two kids.",
        "We have a dog named Juniper.",
        "My friend is called Tobias.",
    )
    assert _fields(mem, asked) == {"relation:sister": "Wren", "children": "2 children"}


@pytest.mark.parametrize("asked", ["job", "work", "role"])
def test_job_answers_the_role_and_the_employer(mem: Memory, asked: str) -> None:
    _said(mem, "I'm a welder.", "I work at Harlow Fabrication.")
    assert _fields(mem, asked) == {"role": "welder", "employer": "Harlow Fabrication"}


def test_home_answers_where_they_live(mem: Memory) -> None:
    _said(mem, "I live in Galway.")
    found = mem.fact(actor="noor", field="home").found
    assert found is not None and found.value == "Galway"


def test_pinning_a_family_puts_its_facts_at_the_head_of_the_packet(mem: Memory) -> None:
    _said(mem, "I'm allergic to shellfish.", "The gutters need clearing before winter.")
    packet = mem.recall(actor="noor", query="plan a dinner party", pin=["allergies"])
    assert [p.text for p in packet.pinned] == ["allergy:shellfish: allergic"]
    assert not [n for n in packet.notes if "nothing known" in n]
    (listed,) = mem.records(actor="noor", field="allergies")
    assert listed.field == "allergy:shellfish"


def test_a_family_that_holds_nothing_is_not_found(mem: Memory) -> None:
    _said(mem, "I'm allergic to shellfish.")
    assert mem.fact(actor="noor", field="pets").status == "not_found"
