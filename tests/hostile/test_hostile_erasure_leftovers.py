"""What an erasure left for work that overtook it, on both backends.

Did not hold: an extraction job shows its model the earlier turns of the session as
context. A forget of the record one of those turns made, landing while the job waited
for the model, emptied the turn and verified itself; then the model's answer, which
restated the erased turn as a fact of the new one, was written: "Ana lives in Lisbon"
was back, from nothing the erasure could find. Now the write of a batch checks, in its
own transaction, that none of the turns the batch read (its sources and its context)
was erased since; if one was, nothing is written and the batch is extracted again from
what remains.

Did not either: a record's deletion job started by an older remem notes its record's
actor but none of its events. Resumed after its erasure had committed (the process was
killed before it made the summaries again), it found the record gone and nothing saying
which summaries quoted it, and closed as done with the session's summary still holding
the erased words. Such a job now makes again every summary of the actor that covers an
event a tombstone covers.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.lifecycle.erasure import RESUME_AFTER
from remem.model import Kind
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


SUMMARISED = {"strategies": {"offline": {}, "offline-summary": {}}}


def _older_deletion_job(mem: Memory, record_id: str, actor: str, now: datetime) -> int:
    """The row an older remem's `forget(record_id=...)` wrote as it began: running, its
    result noting the record's actor and nothing of its events."""
    store = mem.store
    params = {"tenant": mem.tenant, "target": "record", "key": record_id, "status": "running",
              "attempts": 0, "result": store.backend.json_param({"actor": actor}),
              "error": None, "at": store.backend.at(now), "actor": actor,
              "requested_by": None, "requester": None, "reason": None}  # fmt: skip
    with store.backend.transaction(mem.tenant) as db:
        row = db.execute(store.erasure.sql.LOG_DELETION, params).fetchone()
    return int(row["id"])


def test_a_record_forget_an_older_remem_left_running_makes_its_summaries_again(
    db: str,
) -> None:
    config = build(ConfigFile.model_validate(SUMMARISED), "test", Path.cwd())
    clock = Clock(T0 + timedelta(days=30))
    with Memory.open(db, embedder=HashEmbedder(DIM), config=config, clock=clock) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.",
                      time=at(0))  # fmt: skip
        mem.add_event(actor="ana", session="s1", role="user", text="Book a quiet table.",
                      time=at(1))  # fmt: skip
        mem.process()
        home = next(r for r in mem.records(actor="ana") if r.field == "home city")
        summaries = [r for r in mem.records(actor="ana") if r.kind is Kind.SUMMARY]
        assert any("Lisbon" in r.text for r in summaries)
        # an older remem's forget: its job, then its erasure committed; then it was killed
        # before it made the summaries again
        job = _older_deletion_job(mem, home.id, "ana", clock())
        assert mem.store.erasure.forget_record(mem.tenant, home.id, clock()).verified
        clock.advance(seconds=RESUME_AFTER.total_seconds() + 60)
        mem.process()  # finishes the job, then makes the session's summary again
        done = mem.store.erasure.deletion(mem.tenant, job)
        assert done is not None and done["status"] == "done"
        summaries = [r for r in mem.records(actor="ana", all=True) if r.kind is Kind.SUMMARY]
        assert summaries and not any("Lisbon" in r.text for r in summaries), summaries
        assert any("quiet table" in r.text for r in summaries)
