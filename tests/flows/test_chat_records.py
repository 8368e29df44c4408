"""Chat-style turns through `Memory`: a choice made instead of another ends the record of
the other, a budget said as a limit replaces the budget, and a mishap laughed off leaves
only its event.

Each case runs on SQLite and on PostgreSQL (`both_backends`, tests/support/backends.py).
Every sentence here is written for these tests."""

from __future__ import annotations

from remem import Memory
from remem.model import Status
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = both_backends


def _say(mem: Memory, text: str, day: float, session: str = "s1") -> str:
    return mem.add_event(actor="u42", session=session, role="user", text=text, time=at(day))


def _texts(mem: Memory, status: Status) -> list[str]:
    return sorted(r.text for r in mem.records(actor="u42", all=True) if r.status is status)


def test_a_switch_instead_of_the_half_ends_the_half(mem: Memory) -> None:
    _say(mem, "I'm doing the half marathon in Bath in May", 0)
    _say(mem, "I bought new trail shoes for my runs", 1)
    mem.process()
    _say(mem, "switched to a 10k instead of the half tho", 5, session="s2")
    mem.process()
    assert _texts(mem, Status.ACTIVE) == [
        "Bought new trail shoes for their runs",
        "Switched to a 10k instead of the half",
    ]
    assert _texts(mem, Status.INVALID) == ["Is doing the half marathon in Bath in May"]
    old = next(r for r in mem.records(actor="u42", all=True) if r.status is Status.INVALID)
    new = next(r for r in mem.records(actor="u42") if r.text.startswith("Switched"))
    assert old.superseded_by == new.id


def test_a_choice_said_again_instead_ends_the_first_choice(mem: Memory) -> None:
    _say(mem, "I'm training for the half marathon", 0)
    mem.process()
    _say(mem, "I'm doing the 10k instead of the half marathon now", 3, session="s2")
    mem.process()
    _say(mem, "I've switched from the 10k to the full marathon", 9, session="s3")
    mem.process()
    assert _texts(mem, Status.ACTIVE) == ["Has switched from the 10k to the full marathon"]


def test_a_choice_instead_leaves_what_only_shares_a_word_with_it(mem: Memory) -> None:
    _say(mem, "I bought a coffee grinder for my brother", 0)
    mem.process()
    _say(mem, "I'm having tea instead of coffee these days", 2, session="s2")
    mem.process()
    assert _texts(mem, Status.INVALID) == []


def test_a_limit_on_spending_replaces_the_budget(mem: Memory) -> None:
    _say(mem, "Our budget for the anniversary present is £300", 0)
    mem.process()
    _say(mem, "actually keep it under £150", 2, session="s2")
    mem.process()
    budget = mem.records(actor="u42", field="budget")
    assert [(r.text, r.value) for r in budget] == [("Budget is under £150", "£150")]


def test_a_mishap_laughed_off_stays_in_the_event_log_only(mem: Memory) -> None:
    said = _say(mem, "My dog just ate my toast again lol", 0)
    _say(mem, "my dog Biscuit is scared of the hoover haha", 1)
    mem.process()
    assert _texts(mem, Status.ACTIVE) == ["Dog Biscuit is scared of the hoover"]
    assert said in [e.id for e in mem.events(actor="u42", session="s1")]
