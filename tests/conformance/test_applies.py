"""Standing preferences apply to requests they share no words with, on every backend.

An actor states preferences and constraints among unrelated turns; later
requests for a recommendation, plan or booking share no word with them and
have a MiniLM cosine below the relevance floor with them (about 0.0-0.1), so
word and vector search alone leave them out. Their life domains bring them
(`remem.policy.applies`). Questions that ask for no recommendation, or that
lie in no domain, must not pull them. Needs the real MiniLM weights.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem import Memory
from remem.embed.minilm.embedder import MiniLMEmbedder
from remem.ids import counter_ids
from remem.store.roles import Store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

SAID = [
    "The deploy to staging went fine this morning.",
    "I'm allergic to shellfish.",
    "Can you check the unit tests on the parser branch?",
    "My knees can't handle stairs.",
    "I can't stand jazz.",
    "Remind me that the quarterly report is due on Thursday.",
    "I'm scared of deep water.",
]


@pytest.fixture
def mem(store: Store, minilm: MiniLMEmbedder) -> Memory:
    m = Memory(store, embedder=minilm, clock=lambda: T0 + timedelta(days=30), ids=counter_ids())
    for i, text in enumerate(SAID):
        m.add_event(
            actor="ana", session="s1", role="user", text=text, time=T0 + timedelta(minutes=i)
        )
    m.process()
    return m


def _record(mem: Memory, words: str) -> str:
    (rid,) = [r.id for r in mem.records(actor="ana") if words in r.text.lower()]
    return rid


def _packet(mem: Memory, query: str) -> list[str]:
    return [it.id for it in mem.recall(actor="ana", query=query, k=10).records]


@pytest.mark.model
def test_a_request_brings_the_preferences_it_applies_to(mem: Memory) -> None:
    shellfish = _record(mem, "shellfish")
    knees = _record(mem, "stairs")
    jazz = _record(mem, "jazz")
    water = _record(mem, "deep water")

    recipes = _packet(mem, "Suggest some dinner recipes for me")
    assert shellfish in recipes
    assert jazz not in recipes  # music is not food

    festival = _packet(mem, "Which festival should I go to this summer?")
    assert jazz in festival

    holiday = _packet(mem, "Suggest a holiday for me in Greece")
    assert knees in holiday and water in holiday  # physical limits bound any plan
    assert shellfish not in holiday and jazz not in holiday


@pytest.mark.model
def test_questions_that_ask_for_no_recommendation_do_not_pull_them(mem: Memory) -> None:
    standing = {_record(mem, w) for w in ("shellfish", "stairs", "jazz", "deep water")}
    # the same actor's requests do pull them (see above); these must not
    assert _record(mem, "shellfish") in _packet(mem, "Where should I eat in Istanbul?")
    for query in (
        "What is the capital of France?",
        "Summarise my meeting notes",
        "How do I reverse a linked list in Python?",
    ):
        assert not standing & set(_packet(mem, query)), query


@pytest.mark.model
def test_explain_says_what_an_applicable_preference_applies_to(mem: Memory) -> None:
    shellfish = _record(mem, "shellfish")
    packet = mem.recall(actor="ana", query="Suggest some dinner recipes for me", explain=True)
    assert packet.explain is not None
    assert packet.explain["request_domains"] == ["food"]
    reasons = {a["id"]: a["reason"] for a in packet.explain["applies"]}
    assert reasons[shellfish] == "applies to: food"
    assert shellfish in packet.explain["selected"]
