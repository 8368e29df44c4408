"""What an erasure left for work that overtook it, on both backends.

Did not hold: an extraction job shows its model the earlier turns of the session as
context. A forget of the record one of those turns made, landing while the job waited
for the model, emptied the turn and verified itself; then the model's answer, which
restated the erased turn as a fact of the new one, was written: "Ana lives in Lisbon"
was back, from nothing the erasure could find. Now the write of a batch checks, in its
own transaction, that none of the turns the batch read (its sources and its context)
was erased since; if one was, nothing is written and the batch is extracted again from
what remains.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from remem import Memory
from remem.embed import HashEmbedder
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.clock import T0, Clock, at
from tests.support.llm import llm_config

DIM = 64
CONTEXT = "Earlier in this session"  # the heading of the context turns in a prompt


def test_a_fact_drawn_from_a_turn_erased_while_the_model_answered_is_not_stored(
    db: str,
) -> None:
    started, release = threading.Event(), threading.Event()
    shown: list[str] = []

    def model(request: dict[str, Any]) -> Reply:
        system = str(request["messages"][0]["content"])
        user = str(request["messages"][-1]["content"])
        if "durable facts" in system and CONTEXT in user and not started.is_set():
            shown.append(user)
            started.set()  # the job for the second turn is waiting for the model now
            release.wait(20)
            # the model restates the earlier turn, as a fact of the new one
            fact = {"text": "Ana lives in Lisbon.", "attribute": "home city",
                    "value": "Lisbon", "event": 1}  # fmt: skip
            return Reply.json({"facts": [fact]})
        return memory_model(request)

    with ScriptedLLM(model) as llm:
        config = llm_config(llm, {"semantic": {}})
        clock = Clock(T0 + timedelta(days=30))
        with Memory.open(db, embedder=HashEmbedder(DIM), config=config, clock=clock) as mem:
            mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                          time=at(0))  # fmt: skip
            mem.process()
            (home,) = mem.records(actor="ana")
            mem.add_event(actor="ana", session="s1", role="user",
                          text="I walk to work from there.", time=at(1))  # fmt: skip
            worker = threading.Thread(target=mem.process)
            worker.start()
            try:
                assert started.wait(20)
                report = mem.forget(record_id=home.id)
            finally:
                release.set()
                worker.join(30)
            assert report.verified
            assert "I live in Lisbon." in shown[0]  # the model was shown the erased turn
            texts = [r.text for r in mem.records(actor="ana", all=True)]
            assert texts and not any("lisbon" in t.lower() for t in texts), texts
            assert any("walk to work" in t for t in texts)  # the new turn still made its fact
