"""Two people of one relation, each named, through `Memory` on both backends: each one's
facts are kept on a field of their own, recall finds each for the question about them,
and one's update supersedes only their own old fact (`remem.extract.offline.theirs`).
Every sentence is written for these tests."""

from __future__ import annotations

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = both_backends


def _say(mem: Memory, day: float, text: str, role: str = "user") -> None:
    mem.add_event(actor="noa", session="s1", role=role, text=text, time=at(days=day))


def _active(mem: Memory) -> dict[str, str | None]:
    return {r.text: r.field for r in mem.records(actor="noa")}


def test_two_sisters_keep_both_cities_and_one_move_supersedes_only_hers(mem: Memory) -> None:
    _say(mem, 0, "My sister Ana lives in Bristol.")
    _say(mem, 0.1, "Lovely city! Anything else about your family?", role="assistant")
    _say(mem, 0.2, "My other sister Bec lives in Leeds.")
    mem.process()
    assert _active(mem) == {
        "Sister Ana lives in Bristol": "sister_ana:home",
        "Other sister Bec lives in Leeds": "sister_bec:home",
    }
    for question, answer in [
        ("Where does Ana live?", "Sister Ana lives in Bristol"),
        ("Which city is Bec in?", "Other sister Bec lives in Leeds"),
    ]:
        packet = mem.recall(actor="noa", query=question, include_events=False)
        assert packet.records[0].text == answer, question

    _say(mem, 30, "Ana moved to York last month.")
    mem.process()
    assert _active(mem) == {
        "Sister Ana moved to York last month": "sister_ana:home",
        "Other sister Bec lives in Leeds": "sister_bec:home",
    }
    every = {r.text: r for r in mem.records(actor="noa", all=True)}
    old, new = every["Sister Ana lives in Bristol"], every["Sister Ana moved to York last month"]
    assert (old.status.value, old.superseded_by) == ("invalid", new.id)
    packet = mem.recall(actor="noa", query="Where does Ana live now?", include_events=False)
    assert packet.records[0].id == new.id
    assert old.id not in {r.id for r in packet.records}


def test_two_children_s_allergies_are_theirs_and_none_is_the_user_s(mem: Memory) -> None:
    _say(mem, 0, "My son Leo has a nut allergy.")
    _say(mem, 0.1, "Thanks for telling me. Does he react to tree nuts as well?", role="assistant")
    _say(mem, 0.2, "He also can't have dairy.")
    _say(mem, 1, "My daughter Mia is allergic to shellfish.")
    mem.process()
    assert _active(mem) == {
        "Son Leo has a nut allergy": "son_leo:allergy:nut",
        "Son Leo also cannot have dairy": None,
        "Daughter Mia is allergic to shellfish": "daughter_mia:allergy:shellfish",
    }
    # the user's own allergies: none was said
    assert mem.fact(actor="noa", field="allergies").candidates == ()
    packet = mem.recall(actor="noa", query="What can't Leo eat?", include_events=False)
    top = {r.text for r in packet.records[:2]}
    assert top == {"Son Leo has a nut allergy", "Son Leo also cannot have dairy"}


def test_two_sisters_said_in_the_same_words_are_not_one_duplicate(mem: Memory) -> None:
    """Before their own fields, Bec's was taken for a near-duplicate of Ana's (most of
    the words are the same) and nothing of hers was kept."""
    _say(mem, 0, "My sister Ana works as a nurse at the children's hospital in Bristol.")
    _say(mem, 0.1, "My sister Bec works as a nurse at the children's hospital in Bristol.")
    mem.process()
    said = {r.field: r.text for r in mem.records(actor="noa")}
    assert said["sister_ana:occupation"].startswith("Sister Ana works as a nurse")
    assert said["sister_bec:occupation"].startswith("Sister Bec works as a nurse")
    packet = mem.recall(actor="noa", query="What does Bec do for work?", include_events=False)
    assert packet.records[0].text.startswith("Sister Bec works")


def test_a_person_named_many_turns_earlier_is_still_known(mem: Memory) -> None:
    """The offline rules read the 40 turns before each one (`OFFLINE_CONTEXT`); with a
    model's six, "Tomas" said seven exchanges after "my nephew Tomas" was no one known."""
    _say(mem, 0, "My nephew Tomas is coming to stay with us in August.")
    _say(mem, 0.01, "That sounds lovely! How old is he?", role="assistant")
    chat = [
        "We still have to sort out the spare room before then.",
        "The garden needs a lot of work too.",
        "I want to paint the hallway a lighter colour.",
        "The boiler has been making strange noises again.",
        "We finally booked the ferry for the trip north.",
        "The neighbours lent us their ladder on Sunday.",
        "I keep meaning to clear out the garage.",
    ]
    for n, text in enumerate(chat):
        _say(mem, 0.1 + n / 10, text)
        _say(mem, 0.15 + n / 10, "Good plan, one step at a time.", role="assistant")
    _say(mem, 1, "Tomas is vegetarian.")
    mem.process()
    fields = _active(mem)
    assert fields.get("Nephew Tomas is vegetarian") == "nephew_tomas:diet", fields
    packet = mem.recall(actor="noa", query="What can my nephew eat?", include_events=False)
    assert "Nephew Tomas is vegetarian" in [r.text for r in packet.records]
