"""Recall ranks only what it may return: superseded, expired or future candidates
neither set the scale of the scores nor lend a neighbouring turn a bonus.

Lexical only (no embedder), on real SQLite files, so the scores are the
normalised BM25 of `remem.recall.engine` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from remem import Memory, PacketItem
from remem.ids import counter_ids

from .conftest import T0, Clock, at


@pytest.fixture
def mem(db_path: Path, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=None, clock=clock, ids=counter_ids()) as m:
        yield m


def say(mem: Memory, text: str, day: float, session: str = "s1") -> str:
    return mem.add_event(actor="alice", session=session, role="user", text=text, time=at(day))


def by_id(items: tuple[PacketItem, ...], item_id: str) -> PacketItem:
    return next(it for it in items if it.id == item_id)


def test_the_current_record_outranks_its_raw_event(mem: Memory) -> None:
    old_event = say(mem, "Our budget for the trip is $500", 0)
    new_event = say(mem, "Our budget increased to $750", 4)
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget", explain=True)
    top = packet.records[0]
    assert top.kind == "semantic" and top.source["event_ids"] == [new_event]
    # the event and its record are one memory: the packet carries it once
    ids = [it.id for it in packet.records]
    assert new_event not in ids and old_event not in ids
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    assert reasons[new_event] == "represented by a record made from it"
    assert reasons[old_event] == "its records were superseded or removed"


def test_a_superseded_record_does_not_set_the_scale(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500", 0)
    say(mem, "Our budget increased to $750", 4)
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget", include_events=False)
    # the old record matched more words, but it cannot be returned: the best word
    # match that can be returned scores 1
    assert ["$750" in it.text for it in packet.records] == [True]
    assert packet.records[0].score == pytest.approx(1.0)


def test_an_expired_record_does_not_set_the_scale(mem: Memory, clock: Clock) -> None:
    clock.now = T0
    mem.remember(actor="alice", text="The trip budget is $500",
                 valid_until=(T0 + timedelta(days=1)).isoformat())  # fmt: skip
    mem.remember(actor="alice", text="Budget: ask Bob")
    clock.advance(days=2)
    packet = mem.recall(actor="alice", query="trip budget", include_events=False)
    assert [it.text for it in packet.records] == ["Budget: ask Bob"]
    assert packet.records[0].score == pytest.approx(1.0)


def test_a_future_event_does_not_set_the_scale_of_an_as_of_recall(mem: Memory) -> None:
    early = say(mem, "budget talk", 0)
    say(mem, "the trip budget, the trip budget", 5, session="s2")
    packet = mem.recall(actor="alice", query="trip budget", as_of=at(1))
    assert [it.id for it in packet.records] == [early]
    alone = mem.recall(actor="alice", query="budget talk", as_of=at(1))
    assert packet.records[0].score == pytest.approx(alone.records[0].score)


def test_a_superseded_event_lends_its_neighbour_no_bonus(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500", 0)
    beside = say(mem, "hmm, the trip budget?", 0.01)  # right after the superseded event
    say(mem, "Our budget increased to $750", 4, session="s2")
    elsewhere = say(mem, "hmm, the trip budget?", 5, session="s3")  # the same words, alone
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget")
    assert by_id(packet.records, beside).score == pytest.approx(
        by_id(packet.records, elsewhere).score
    )


def test_a_current_neighbour_still_lends_its_bonus(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $750", 0)
    beside = say(mem, "hmm, the trip budget?", 0.01)
    elsewhere = say(mem, "hmm, the trip budget?", 5, session="s3")
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget")
    assert by_id(packet.records, beside).score > by_id(packet.records, elsewhere).score
