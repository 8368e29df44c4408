"""The HTTP service extracts with the one worker: one thread per strategy, as `remem worker`."""

from __future__ import annotations

import time
from pathlib import Path

from remem.config.config import ConfigFile, build
from remem.embed.base import HashEmbedder
from remem.service.http import create_app
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.servers import ANA_EVENT, ana_keys, serving


def test_a_hung_model_strategy_does_not_hold_up_the_offline_one_in_the_service(
    tmp_path: Path,
) -> None:
    db = tmp_path / "service.db"
    key = ana_keys(db)["admin"]
    with ScriptedLLM(responder=memory_model) as llm:
        llm.script(Reply.slow(120, then=Reply.error(502, "too late")))  # the model hangs
        data = {
            "llm": {"base_url": llm.base_url, "model": "fake"},
            # the model's strategy first: a single loop would run its batch first, and wait
            "strategies": {"semantic": {}, "offline": {}},
            "retry": {"attempts": 1, "job_attempts": 1},
        }
        config = build(ConfigFile.model_validate(data), "test", tmp_path)
        app = create_app(db, embedder=HashEmbedder(), config=config)
        with serving(app, key) as h:
            assert h.post("/v1/events", json=ANA_EVENT).status_code == 201
            deadline = time.monotonic() + 15
            records: list[dict[str, object]] = []
            while not records and time.monotonic() < deadline:
                time.sleep(0.05)
                records = h.get("/v1/memories", params={"actor_id": "ana"}).json()["records"]
            jobs = h.get("/v1/jobs/list").json()["jobs"]
            llm.stop()  # wakes the hung call, so the server can stop
    assert records, "the offline strategy's record should not wait for the hung model"
    assert all("llm" not in str(r["source"]) for r in records)
    assert {j["strategy"]: j["status"] for j in jobs}["semantic"] == "running"
