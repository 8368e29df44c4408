"""Updates said in ordinary words, through `Memory` on both backends: the new state is
current for recall, `fact` and `profile`, and the old one is INVALID and linked to it
(`superseded_by`). The pure cases are in tests/unit/test_extract_updates.py; every
sentence is written for these tests."""

from __future__ import annotations

import pytest

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = both_backends

# (what was said first, the update said weeks later, the field, the old and new values,
#  a question that names both states)
CASES = [
    ("I'm vegetarian.", "I've started eating fish again, so I'm pescatarian now.", "diet",
     "vegetarian", "pescatarian", "vegetarian or pescatarian diet"),
    ("We live in Sheffield.", "We finally moved out to the coast in March.", "home city",
     "Sheffield", "the coast", "live in Sheffield or moved to the coast"),
    ("I work at a design agency.", "I left the agency, freelancing now.", "employer",
     "design agency", "self-employed", "work at the agency or freelancing"),
    ("My phone is an iPhone 12.", "ditched my old phone for a Pixel", "device:phone",
     "iPhone 12", "Pixel", "phone iPhone or Pixel"),
    ("We have a cat named Pickle.", "Our cat passed away last week.", "relation:cat",
     "Pickle", "passed away", "cat Pickle passed away"),
]  # fmt: skip


def _say(mem: Memory, day: float, text: str) -> None:
    mem.add_event(
        actor="noor", session=f"s{day}", role="user", text=text, time=at(days=day),
        metadata={"speaker": "Noor"},
    )  # fmt: skip


@pytest.mark.parametrize(("before", "after", "field", "old", "new", "question"), CASES)
def test_an_update_in_ordinary_words_supersedes_the_old_state(
    mem: Memory, before: str, after: str, field: str, old: str, new: str, question: str
) -> None:
    _say(mem, 0, before)
    _say(mem, 40, after)
    mem.process()

    fact = mem.fact(actor="noor", field=field)
    assert (fact.status, fact.found and fact.found.value) == ("found", new)

    every = mem.records(actor="noor", all=True, field=field)  # with the field's family
    (current,) = [r for r in every if r.status.value == "active" and r.field == field]
    (stale,) = [r for r in every if r.value == old]
    assert (stale.status.value, stale.superseded_by) == ("invalid", current.id)
    assert current.supersedes == stale.id
    assert "Noor" in current.text  # a sentence that says whose it is

    shown = {f.field: f.found.value for f in mem.profile(actor="noor").facts if f.found}
    assert shown.get(field) == new

    packet = mem.recall(actor="noor", query=question, include_events=False)
    ids = {r.id for r in packet.records}
    assert current.id in ids and stale.id not in ids


def test_eating_again_what_the_diet_leaves_out_ends_the_diet(mem: Memory) -> None:
    _say(mem, 0, "I'm vegetarian.")
    _say(mem, 40, "I've started eating fish again.")
    mem.process()
    every = mem.records(actor="noor", all=True)
    (stale,) = [r for r in every if r.value == "vegetarian"]
    (eats,) = [r for r in every if r.field == "eats:fish"]
    assert (stale.status.value, stale.superseded_by) == ("invalid", eats.id)
    diet = mem.fact(actor="noor", field="diet")  # the diet's family answers with the change
    assert [(c.field, c.value) for c in diet.candidates] == [("eats:fish", "eats")]
    shown = {f.field for f in mem.profile(actor="noor").facts}
    assert "diet" not in shown and "eats:fish" in shown
