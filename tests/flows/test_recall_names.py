"""A question that names a speaker is matched by meaning without the name.

The speaker bonus (`remem.recall.query.SPEAKER_BONUS`) is how a named speaker
counts; the query vector is the mean of the question as asked and the
question with the names of the scope's speakers it names put as a neutral
word (`Query.embedded`), so a question naming the wrong person ("What did
Melanie do with her dad?" when it was Caroline) is not pulled toward every
short record that names Melanie. Through `Memory`, on real SQLite files,
with the hashing test embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.ids import counter_ids
from tests.support.clock import Clock
from tests.support.recall import say


@pytest.fixture
def mem(db_path: Path, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
        yield m


def chat(mem: Memory) -> str:
    brother = say(mem, "Caroline", "My brother played rugby for years", 0)
    say(mem, "Melanie", "I am a teacher", 1)
    say(mem, "Melanie", "I am a painter", 2)
    say(mem, "Melanie", "I have a cat", 3)
    say(mem, "Caroline", "Nice, Melanie", 4)
    mem.process()
    return brother


@pytest.mark.parametrize("include_events", [True, False])
def test_a_question_naming_the_wrong_speaker_finds_who_did_it(
    mem: Memory, include_events: bool
) -> None:
    brother = chat(mem)
    packet = mem.recall(
        actor="pair", query="Which sport did Melanie's brother love?",
        include_events=include_events,
    )  # fmt: skip
    # Melanie's own records match by her name alone; the one who had the brother is first
    top = packet.records[0]
    assert top.text == "Caroline's brother played rugby for years"
    assert top.source["event_ids"] == [brother]
