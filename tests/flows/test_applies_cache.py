"""The standing records a request applies to are read once per scope version: what is
written or forgotten after a request shapes the next one, on both backends."""

from __future__ import annotations

from datetime import timedelta

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from tests.support.clock import Clock

REQUEST = "Suggest a restaurant for dinner tonight"  # food, by its words


def _open(db: str, clock: Clock) -> Memory:
    return Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids())


def _said(mem: Memory, clock: Clock, text: str) -> None:
    clock.now += timedelta(seconds=10)
    mem.add_event(actor="ana", session="s1", role="user", text=text, time=clock())
    mem.process()


def _applying(mem: Memory) -> list[str]:
    packet = mem.recall(actor="ana", query=REQUEST, explain=True)
    assert packet.explain is not None
    return [a["id"] for a in packet.explain["applies"]]


def test_a_preference_stated_after_a_request_applies_to_the_next(db: str, clock: Clock) -> None:
    mem = _open(db, clock)
    try:
        _said(mem, clock, "The deploy to staging went fine this morning.")
        assert _applying(mem) == []  # the scope's records near the domains are read now
        _said(mem, clock, "I never eat spicy food.")
        (pref,) = [r for r in mem.records(actor="ana") if "spicy" in r.text.lower()]
        clock.now += timedelta(seconds=5)  # well within the time a reading is kept
        assert pref.id in _applying(mem)
    finally:
        mem.close()


def test_a_preference_forgotten_after_a_request_no_longer_applies(db: str, clock: Clock) -> None:
    mem = _open(db, clock)
    try:
        _said(mem, clock, "I never eat spicy food.")
        (pref,) = [r for r in mem.records(actor="ana") if "spicy" in r.text.lower()]
        assert pref.id in _applying(mem)
        mem.forget(record_id=pref.id)
        clock.now += timedelta(seconds=5)
        packet = mem.recall(actor="ana", query=REQUEST)
        assert all("spicy" not in it.text.lower() for it in packet.records)
    finally:
        mem.close()
