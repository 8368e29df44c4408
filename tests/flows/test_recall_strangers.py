"""A question that names only people a memory never heard of gets an empty packet
(`remem.recall.floor.unknown_names`); one that names someone it knows is answered."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from tests.support.clock import Clock


@pytest.fixture
def talk(db: str) -> Iterator[Memory]:
    """Jon and Gina's conversation on each backend: two speakers, a few turns each."""
    clock = Clock(datetime(2026, 4, 2, 9, tzinfo=UTC))
    mem = Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids())
    turns = [
        ("Gina", "I went to a dance class with my sister last Friday."),
        ("Jon", "I opened my own dance studio downtown this spring."),
        ("Gina", "My friend Dario helped me pick new shoes for the class."),
        ("Jon", "The support group at the studio meets every Tuesday."),
    ]
    for n, (speaker, text) in enumerate(turns):
        mem.add_event(actor="jg", session="s1", role="user", text=text,
                      time=f"2026-04-01T10:0{n}Z", metadata={"speaker": speaker})  # fmt: skip
    mem.process()
    yield mem
    mem.close()


def test_a_question_about_someone_the_memory_never_heard_of_gets_nothing(talk: Memory) -> None:
    packet = talk.recall(actor="jg", query="When did Caroline go to the support group?",
                         explain=True)  # fmt: skip
    assert packet.records == ()
    assert packet.explain is not None
    assert packet.explain["floor"]["unknown_names"] == ["Caroline"]
    reasons = {r["reason"] for r in packet.explain["rejected"]}
    assert "the query names Caroline, whom nothing in this memory mentions" in reasons


@pytest.mark.parametrize(
    "query",
    [
        "When does Jon's support group meet?",  # a speaker
        "What did Dario help with?",  # said in a turn
        "When does John's support group meet?",  # one letter from a speaker
    ],
)
def test_a_question_about_someone_it_knows_is_answered(talk: Memory, query: str) -> None:
    packet = talk.recall(actor="jg", query=query, explain=True)
    assert packet.records != ()
    assert packet.explain is not None and packet.explain["floor"]["unknown_names"] == []


def test_a_request_naming_a_stranger_is_not_emptied(talk: Memory) -> None:
    query = "Can you suggest a dance class Caroline and I could try?"
    packet = talk.recall(actor="jg", query=query, explain=True)
    assert packet.explain is not None and packet.explain["floor"]["unknown_names"] == []
