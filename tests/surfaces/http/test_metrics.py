"""Prometheus metrics of `remem serve`, scraped from a real uvicorn on loopback and read
with prometheus_client's own parser: counts move with requests, jobs and model calls;
`/metrics` needs a tenant-wide admin key and shows that tenant only; the
`--metrics-port` listener shows the whole process without a key."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from remem.cli.main import main
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.open import open_store
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.metrics import Samples, parse_samples, sample
from tests.support.processes import free_port

EVENT = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I live in Faro."}


def _keys(db: str) -> dict[str, str]:
    store = open_store(db)
    try:
        return {
            "admin": keyring.create_key(store.keys, tenant="acme", role="admin")[1],
            "agent": keyring.create_key(store.keys, tenant="acme")[1],
            "alice_admin": keyring.create_key(
                store.keys, tenant="acme", actor="alice", role="admin"
            )[1],
            "other": keyring.create_key(store.keys, tenant="other", role="admin")[1],
        }
    finally:
        store.close()


@contextmanager
def _serving(app: FastAPI) -> Iterator[httpx.Client]:
    srv = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning", ws="none")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not srv.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        with httpx.Client(base_url=f"http://127.0.0.1:{srv.config.port}", timeout=20) as h:
            yield h
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


def _scrape(h: httpx.Client, key: str) -> Samples:
    got = h.get("/metrics", headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse_samples(got.text)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_scrape_counts_requests_recalls_deletions_and_reads_the_job_queue(db: str) -> None:
    keys = _keys(db)
    app = create_app(db, embedder=HashEmbedder(), worker=False)  # the jobs stay pending
    with _serving(app) as h:
        before = _scrape(h, keys["admin"])
        assert h.post("/v1/events", headers=_auth(keys["agent"]), json=EVENT).status_code == 201
        made = h.post(
            "/v1/memories/batch-create",
            headers=_auth(keys["agent"]),
            json={"records": [{"actor_id": "alice", "text": "I live in Faro"}]},
        )
        (created,) = made.json()["results"]
        secret = "my api key is sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
        h.post(
            "/v1/memories/batch-create",
            headers=_auth(keys["agent"]),
            json={"records": [{"actor_id": "alice", "text": secret}]},
        ).raise_for_status()
        refused = {"outcome": "refused_content"}
        found = h.post(
            "/v1/memories/retrieve",
            headers=_auth(keys["agent"]),
            json={"actor_id": "alice", "query": "where does alice live? Faro"},
        )
        assert found.status_code == 200 and found.json()["records"]
        gone = h.delete(f"/v1/memories/{created['record_id']}", headers=_auth(keys["agent"]))
        assert gone.status_code == 200
        assert h.get("/v1/memories/nope", headers=_auth(keys["agent"])).status_code == 404
        time.sleep(0.05)  # the pending job ages
        after = _scrape(h, keys["admin"])

        def moved(name: str, **labels: str) -> float:
            return sample(after, name, **labels) - sample(before, name, **labels)

        requests = "remem_http_requests_total"
        assert moved(requests, method="POST", route="/v1/events", status="201") == 1
        assert moved(requests, method="POST", route="/v1/memories/retrieve", status="200") == 1
        # the route template, never the raw path
        assert moved(requests, method="GET", route="/v1/memories/{record_id}", status="404") == 1
        assert moved(requests, method="GET", route="/metrics", status="200") == 1
        latency = "remem_http_request_duration_seconds_count"
        assert moved(latency, method="POST", route="/v1/events") == 1
        assert moved("remem_recall_packet_records_count") == 1
        assert moved("remem_recall_packet_records_sum") == len(found.json()["records"])
        assert moved("remem_recall_candidates_count") == 1
        assert moved("remem_recall_packet_tokens_sum") == found.json()["tokens"]
        assert moved("remem_deletion_jobs_total", target="record", verified="true") == 1
        assert sample(after, "remem_deletion_verification_failures_total") == 0
        assert moved("remem_memory_operations_total", operation="remember", outcome="ok") == 1
        assert moved("remem_memory_operations_total", operation="remember", **refused) == 1
        # read from the store at the scrape: the event's job waits, and has aged
        assert sample(after, "remem_extraction_jobs", strategy="offline", state="pending") == 1
        assert sample(after, "remem_extraction_jobs", strategy="offline", state="done") == 0
        assert sample(after, "remem_extraction_lag_seconds") > 0

        # another tenant's admin sees none of it; an agent or one actor's admin, nothing
        theirs = _scrape(h, keys["other"])
        assert sample(theirs, requests, method="POST", route="/v1/events", status="201") == 0
        assert sample(theirs, "remem_recall_packet_records_count") == 0
        assert sample(theirs, "remem_extraction_jobs", strategy="offline", state="pending") == 0
        assert sample(theirs, "remem_extraction_lag_seconds") == 0
        for key in (keys["agent"], keys["alice_admin"]):
            refused = h.get("/metrics", headers=_auth(key))
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        assert h.get("/metrics").status_code == 401


def test_the_metrics_port_serves_the_whole_process_without_a_key(db: str) -> None:
    keys = _keys(db)
    app = create_app(db, embedder=HashEmbedder(), worker=False, metrics_port=0)
    with _serving(app) as h:
        for key in (keys["agent"], keys["other"]):
            h.post("/v1/events", headers=_auth(key), json=EVENT).raise_for_status()
        port = app.state.metrics_listener.port
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert scraped.status_code == 200
        process = parse_samples(scraped.text)
        mine = _scrape(h, keys["admin"])
    route = {"method": "POST", "route": "/v1/events", "status": "201"}
    assert sample(process, "remem_http_requests_total", **route) == 2  # both tenants
    assert sample(mine, "remem_http_requests_total", **route) == 1
    assert sample(process, "remem_extraction_jobs", strategy="offline", state="pending") == 2
    assert sample(mine, "remem_extraction_jobs", strategy="offline", state="pending") == 1
    # stopped with the server
    try:
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
        raise AssertionError("the metrics listener still answers after shutdown")
    except httpx.TransportError:
        pass


def _config(llm: ScriptedLLM, tmp_path: Path, **retry: Any) -> Any:
    data: dict[str, Any] = {
        "llm": {"base_url": llm.base_url, "model": "fake"},
        "strategies": {"semantic": {}},
        "retry": {"attempts": 1, "job_attempts": 3, "job_base_seconds": 0, **retry},
    }
    return build(ConfigFile.model_validate(data), "test", tmp_path)


def test_model_calls_tokens_and_extraction_outcomes_are_counted(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    keys = _keys(db)
    with ScriptedLLM(responder=memory_model) as llm:
        llm.script(Reply.error(502, "upstream down"))  # the first attempt fails; then answers
        app = create_app(db, embedder=HashEmbedder(), config=_config(llm, tmp_path))
        with _serving(app) as h:
            h.post("/v1/events", headers=_auth(keys["agent"]), json=EVENT).raise_for_status()
            deadline = time.monotonic() + 30
            while h.get("/v1/jobs", headers=_auth(keys["agent"])).json()["done"] < 1:
                assert time.monotonic() < deadline, "the job did not run through"
                time.sleep(0.05)
            got = _scrape(h, keys["admin"])
            theirs = _scrape(h, keys["other"])
    assert sample(got, "remem_model_calls_total", model="fake", outcome="error") == 1
    assert sample(got, "remem_model_calls_total", model="fake", outcome="ok") >= 1
    assert sample(got, "remem_model_tokens_total", model="fake", direction="input") > 0
    assert sample(got, "remem_model_tokens_total", model="fake", direction="output") > 0
    processed = "remem_extraction_jobs_processed_total"
    assert sample(got, processed, strategy="semantic", outcome="retry") == 1
    assert sample(got, processed, strategy="semantic", outcome="done") == 1
    assert sample(got, "remem_extraction_records_written_total", strategy="semantic") == 1
    assert sample(got, "remem_extraction_jobs", strategy="semantic", state="done") == 1
    assert sample(got, "remem_extraction_lag_seconds") == 0  # nothing waits
    assert sample(theirs, "remem_model_calls_total", model="fake", outcome="ok") == 0


def test_serve_help_names_the_metrics_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--metrics-port" in shown and "--metrics-host" in shown


def test_with_metrics_off_the_route_says_how_to_turn_them_on(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    keys = _keys(db)
    with pytest.raises(InvalidInput, match="metrics-port"):
        create_app(db, embedder=None, worker=False, metrics=False, metrics_port=9464)
    app = create_app(db, embedder=None, worker=False, metrics=False)
    with TestClient(app) as h:
        got = h.get("/metrics", headers=_auth(keys["admin"]))
        assert h.get("/metrics", headers=_auth(keys["agent"])).status_code == 403
    assert got.status_code == 404 and "remem[metrics]" in got.json()["error"]["message"]
