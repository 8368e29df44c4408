"""A question about the asker is answered from what they said, on both backends.

"What do I do for a living?" shares no word with "I translate Dutch to English legal
contracts", and little meaning: the relevance floor used to empty that packet. A
question about the asker (`remem.policy.asker`) keeps up to k items the floor would
cut; a question about anything else is still trimmed.
"""

from __future__ import annotations

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import at

SAID = [
    "I translate Dutch to English legal contracts.",
    "Our brass band needed a tuba, so I switched from the trombone.",
    "The lift at the congress stopped between floors for two hours.",
]


def _told(mem: Memory) -> None:
    for i, text in enumerate(SAID):
        mem.add_event(actor="bram", session="s1", role="user", text=text, time=at(i))
    mem.process()


@both_backends
def test_a_question_about_the_asker_is_never_empty(mem: Memory) -> None:
    _told(mem)
    packet = mem.recall(actor="bram", query="What do I do for a living?")
    assert any("translate" in it.text.lower() for it in packet.records)


@both_backends
def test_a_question_about_nothing_they_said_is_still_trimmed(mem: Memory) -> None:
    _told(mem)
    packet = mem.recall(actor="bram", query="Who wrote Pride and Prejudice?", explain=True)
    assert packet.records == ()
    assert packet.explain is not None and packet.explain["floor"]["about_asker"] is False
