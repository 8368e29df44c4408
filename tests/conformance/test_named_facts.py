"""A question that names a fact finds the record of it when it shares no word with the
value, on every backend: "Which city is my home?" of "Moved to Lisbon last month"
(field "home city"). The word search reads texts, not fields, and MiniLM's cosine
of the two was under the packet's anchor (since removed), so before the field
counted the packet was empty. Needs the real MiniLM weights.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem import Memory
from remem.embed.minilm.embedder import MiniLMEmbedder
from remem.ids import counter_ids
from remem.store.roles import Store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def mem(store: Store, minilm: MiniLMEmbedder) -> Memory:
    m = Memory(store, embedder=minilm, clock=lambda: T0 + timedelta(days=60), ids=counter_ids())
    said = [
        (0, "I live in Porto."),
        (0, "Can you check the unit tests on the parser branch?"),
        (30, "I moved to Lisbon last month."),
        (30, "The deploy to staging went fine this morning."),
    ]
    for i, (day, text) in enumerate(said):
        m.add_event(actor="ana", session=f"s{day}", role="user", text=text,
                    time=T0 + timedelta(days=day, minutes=i))  # fmt: skip
        m.process()
    return m


@pytest.mark.parametrize(
    "query", ["Which city is my home?", "What city do I call home?", "What is my location?"]
)
def test_a_question_naming_a_fact_gets_its_current_record(mem: Memory, query: str) -> None:
    (current,) = [r for r in mem.records(actor="ana") if r.field and "Lisbon" in r.text]
    packet = mem.recall(actor="ana", query=query, k=5, explain=True)
    assert packet.records, packet.explain
    assert packet.records[0].id == current.id
    assert packet.explain is not None and current.id in packet.explain["named_fields"]
    texts = " ".join(r.text for r in packet.records)
    assert "Porto" not in texts  # the superseded home stays out, as a record and as a turn


def test_a_question_naming_no_fact_gets_no_field_and_a_small_packet(mem: Memory) -> None:
    packet = mem.recall(actor="ana", query="Which restaurant has the best sushi?", k=5,
                        explain=True)  # fmt: skip
    assert packet.explain is not None and packet.explain["named_fields"] == []
    # what passes the floor on meaning alone may come back (a move, a city), but little
    assert len(packet.records) <= 3
