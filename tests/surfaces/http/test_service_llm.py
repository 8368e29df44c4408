"""The HTTP service runs the configured LLM strategies in its worker, and its job
endpoints show and re-run what failed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from remem.config.config import ConfigFile, build
from remem.embed.base import HashEmbedder
from remem.service.client import Client
from remem.service.http import create_app
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.servers import ANA_EVENT, ana_keys, serving


def _config(llm: ScriptedLLM, tmp_path: Path, **retry: Any) -> Any:
    data = {"llm": {"base_url": llm.base_url, "model": "fake"}, "strategies": {"semantic": {}}}
    if retry:
        data["retry"] = retry
    return build(ConfigFile.model_validate(data), "test", tmp_path)


def _wait(h: httpx.Client, status: str) -> None:
    deadline = time.monotonic() + 20
    while h.get("/v1/jobs").json()[status] < 1:
        assert time.monotonic() < deadline, f"no job became {status}"
        time.sleep(0.05)


def test_the_server_worker_extracts_with_the_configured_model(tmp_path: Path) -> None:
    db = tmp_path / "service.db"
    key = ana_keys(db)["admin"]
    with ScriptedLLM(responder=memory_model) as llm:
        app = create_app(db, embedder=HashEmbedder(), config=_config(llm, tmp_path))
        with serving(app, key) as h:
            assert h.post("/v1/events", json=ANA_EVENT).status_code == 201
            _wait(h, "done")
            listed = h.get("/v1/memories", params={"actor_id": "ana"}).json()
    (record,) = listed["records"]
    assert record["value"] == "Faro" and "llm:fake" in record["source"]["extractor"]
    assert llm.calls >= 1


def test_a_failed_job_is_listed_with_its_error_and_retried_over_http(tmp_path: Path) -> None:
    db = tmp_path / "service.db"
    keys = ana_keys(db)
    with ScriptedLLM(responder=memory_model) as llm:
        llm.script(Reply.error(502, "upstream down"))  # then the responder answers
        config = _config(llm, tmp_path, attempts=1, job_attempts=1)
        app = create_app(db, embedder=HashEmbedder(), config=config)
        with serving(app, keys["admin"]) as h:
            assert h.post("/v1/events", json=ANA_EVENT).status_code == 201
            _wait(h, "failed")
            (job,) = h.get("/v1/jobs/list", params={"status": "failed"}).json()["jobs"]
            assert job["strategy"] == "semantic" and "502" in (job["last_error"] or "")
            assert h.get("/v1/memories", params={"actor_id": "ana"}).json()["records"] == []
            # an actor's key lists its actor's jobs only, and may not retry the tenant's
            other = {"Authorization": f"Bearer {keys['ana']}"}
            mine = h.get("/v1/jobs/list", headers=other).json()["jobs"]
            assert [j["event_id"] for j in mine] == [job["event_id"]]
            assert h.post("/v1/jobs/retry", headers=other).status_code == 403
            agent = {"Authorization": f"Bearer {keys['agent']}"}
            assert h.get("/v1/jobs/list", headers=agent).status_code == 200
            assert h.post("/v1/jobs/retry", headers=agent).status_code == 403  # admin only
            assert h.get("/v1/jobs/list", params={"status": "stuck"}).status_code == 422
            assert h.post("/v1/jobs/retry").json() == {"retried": 1}
            _wait(h, "done")
            (done,) = h.get("/v1/jobs/list", params={"status": "done"}).json()["jobs"]
            assert done["event_id"] == job["event_id"]
            (record,) = h.get("/v1/memories", params={"actor_id": "ana"}).json()["records"]
            client = Client(str(h.base_url).rstrip("/"), keys["admin"])
            try:  # the Python client says the same
                assert [j["event_id"] for j in client.list_jobs("done")] == [job["event_id"]]
                assert client.list_jobs("failed") == [] and client.retry_jobs() == 0
            finally:
                client.close()
    assert record["value"] == "Faro"
