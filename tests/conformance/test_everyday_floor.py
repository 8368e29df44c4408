"""Ordinary questions of an ordinary conversation, on every backend (issue 35, item 2).

A person tells an assistant things in passing; later questions rarely share
their words. The packet is never empty when the memory holds the answer, an
assistant turn that only reacts or asks back never takes a slot, and a
question about nothing said stays small. The conversation is
tests/data/everyday-tiny.json's (written for remem's tests). Needs the real
MiniLM weights.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from remem import Memory
from remem.embed.minilm.embedder import MiniLMEmbedder
from remem.ids import counter_ids
from remem.store.roles import Store
from tests.support import DATA

TINY = DATA / "everyday-tiny.json"
NOW = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)


def persona(actor: str) -> dict[str, Any]:
    data = json.loads(TINY.read_text(encoding="utf-8"))
    found: dict[str, Any] = next(p for p in data["personas"] if p["actor"] == actor)
    return found


@pytest.fixture
def mem(store: Store, minilm: MiniLMEmbedder) -> Memory:
    m = Memory(store, embedder=minilm, clock=lambda: NOW, ids=counter_ids())
    for actor in ("t01", "t03"):
        for s in persona(actor)["sessions"]:
            start = datetime.fromisoformat(s["start"].replace("Z", "+00:00"))
            m.add_events(
                {"actor": actor, "session": s["session"], "role": t["role"], "text": t["text"],
                 "time": start.replace(minute=i), "event_id": f"{s['session']}-{i}"}
                for i, t in enumerate(s["turns"])
            )  # fmt: skip
    m.process()
    return m


@pytest.mark.parametrize(
    ("actor", "query", "answer"),
    [
        ("t03", "Do I have any drug allergies?", "penicillin"),
        ("t01", "Which town do I live in now?", "Bath"),
        ("t03", "Plan us a long weekend in Scotland this summer", "plane"),
    ],
)
def test_a_question_whose_answer_is_held_gets_it(
    mem: Memory, actor: str, query: str, answer: str
) -> None:
    packet = mem.recall(actor=actor, query=query, explain=True)
    assert packet.records, packet.explain  # never empty while the memory holds the answer
    assert answer.lower() in " ".join(it.text for it in packet.records).lower()


def test_no_assistant_turn_that_only_reacts_or_asks_back_reaches_a_packet(mem: Memory) -> None:
    fillers = {
        f"{s['session']}-{i}"
        for actor in ("t01", "t03")
        for s in persona(actor)["sessions"]
        for i, t in enumerate(s["turns"])
        if t.get("filler")
    }
    asked = [
        ("t01", "Any tips for my next run of night shifts?"),
        ("t01", "Is there a good vet for Pickle near my new place?"),
        ("t03", "Where should we go for half term with the kids?"),
        ("t03", "How are things going at the new job?"),
    ]
    for actor, query in asked:
        packet = mem.recall(actor=actor, query=query, explain=True)
        shown = {str(e) for it in packet.records for e in it.source.get("event_ids", ())}
        assert not shown & fillers, (query, [it.text for it in packet.records])
        assert packet.explain is not None
        reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
        assert any("holds no fact" in reasons.get(f, "") for f in fillers), reasons


def test_a_question_about_nothing_said_stays_small(mem: Memory) -> None:
    for query in ("What is the capital of Australia?", "How do I get a stripped screw out?"):
        assert len(mem.recall(actor="t03", query=query).records) <= 3
