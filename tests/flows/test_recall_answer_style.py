"""How the person wants to be answered reaches every packet of theirs, on both backends.

"Numbered steps please, I read these on a tiny screen" and "tell me the verdict
first, then the reasoning" are said once, inside some other request; they bear
on every later answer, whatever it is about. The offline extractor makes a
standing preference of them (`remem.extract.offline.style`), and recall pins
those preferences at the head of every packet of that person
(`remem.recall.instructions`), within the budget.
"""

from __future__ import annotations

from remem import Memory
from remem.model import Kind
from tests.support.backends import both_backends
from tests.support.clock import Clock, at

pytestmark = both_backends

SAID = [
    "Need a cron line that runs my backup script at 2am on weekdays. Numbered steps please, "
    "I read these on a tiny screen",
    "What's a good name for a grey kitten? Tell me your pick first and then the reasons, "
    "I don't want to dig for it",
    "I repotted the basil on the kitchen windowsill this morning",
    "the car died on the motorway and we waited three hours for the recovery van",
]


def _told(mem: Memory) -> None:
    for i, text in enumerate(SAID):
        mem.add_event(actor="femi", session="s1", role="user", text=text, time=at(i))
    mem.process()


def test_an_instruction_on_how_to_answer_becomes_a_standing_preference(mem: Memory) -> None:
    _told(mem)
    made = [r for r in mem.records(actor="femi") if (r.field or "").startswith("answer_style:")]
    texts = sorted(r.text for r in made)
    assert texts == [
        "Wants answers as numbered steps",
        "Wants the answer first, then the explanation",
    ]
    assert {r.kind for r in made} == {Kind.PREFERENCE}


def test_every_packet_of_the_person_holds_how_to_answer(mem: Memory) -> None:
    _told(mem)
    for ask in (
        "Walk me through what changed in the new pension rules",
        "Who won the 1966 World Cup?",
    ):
        packet = mem.recall(actor="femi", query=ask)
        pinned = [it.text for it in packet.pinned]
        assert "Wants answers as numbered steps" in pinned, ask
        assert "Wants the answer first, then the explanation" in pinned, ask
        assert all("pinned" in it.flags for it in packet.pinned)
        assert not {it.id for it in packet.pinned} & {it.id for it in packet.records}
        assert packet.tokens <= packet.budget


def test_another_person_does_not_get_them(mem: Memory) -> None:
    _told(mem)
    mem.add_event(
        actor="ola", session="s9", role="user", text="I keep bees on the roof", time=at(9)
    )
    mem.process()
    assert mem.recall(actor="ola", query="Walk me through the new pension rules").pinned == ()


def test_a_budget_too_small_for_them_leaves_them_out_and_says_so(mem: Memory) -> None:
    _told(mem)
    packet = mem.recall(actor="femi", query="Who won the 1966 World Cup?", budget=12)
    assert packet.tokens <= 12
    assert any("over the budget" in n for n in packet.notes)


def test_a_narrowed_recall_pins_only_what_the_namespace_holds(mem: Memory) -> None:
    _told(mem)
    packet = mem.recall(
        actor="femi",
        query="Who won the 1966 World Cup?",
        namespace="/tenants/default/actors/femi/projects/",
    )
    assert packet.pinned == ()


def test_a_changed_instruction_pins_the_new_one_now_and_the_old_one_as_of_before(
    mem: Memory, clock: Clock
) -> None:
    mem.add_event(actor="femi", session="s1", role="user", time=at(0),
                  text="How do I renew my passport? Bullet points please")  # fmt: skip
    mem.process()
    before = clock()
    clock.advance(days=2)
    mem.add_event(actor="femi", session="s1", role="user", time=at(2),
                  text="What is a good tent for two? In a table please")  # fmt: skip
    mem.process()
    ask = "Who won the 1966 World Cup?"
    assert [it.text for it in mem.recall(actor="femi", query=ask).pinned] == [
        "Wants answers as a table"
    ]
    then = mem.recall(actor="femi", query=ask, as_of=before.isoformat())
    assert [it.text for it in then.pinned] == ["Wants answers as bullet points"]
