"""The HTTP service runs the configured LLM strategies in its worker."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import uvicorn

from remem.config import ConfigFile, build
from remem.embed.base import HashEmbedder
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.sqlite import SQLiteStore
from remem.testing.llm_server import ScriptedLLM
from remem.testing.responders import memory_model
from tests.test_service import _free_port


def test_the_server_worker_extracts_with_the_configured_model(tmp_path: Path) -> None:
    db = tmp_path / "service.db"
    store = SQLiteStore(db)
    _, key = keyring.create_key(store, tenant="acme", role="admin")
    store.close()
    with ScriptedLLM(responder=memory_model) as llm:
        config = build(
            ConfigFile.model_validate(
                {"llm": {"base_url": llm.base_url, "model": "fake"}, "strategies": {"semantic": {}}}
            ),
            "test",
            tmp_path,
        )
        app = create_app(db, embedder=HashEmbedder(), config=config)
        port = _free_port()
        srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 20
            while not srv.started:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as h:
                event = {"actor_id": "ana", "session_id": "s1", "role": "user",
                         "text": "I live in Faro."}  # fmt: skip
                assert h.post("/v1/events", json=event).status_code == 201
                deadline = time.monotonic() + 20
                while h.get("/v1/jobs").json()["done"] < 1:
                    assert time.monotonic() < deadline, "the worker did not run the job"
                    time.sleep(0.05)
                listed = h.get("/v1/memories", params={"actor_id": "ana"}).json()
        finally:
            srv.should_exit = True
            thread.join(timeout=30)
    (record,) = listed["memories"] if "memories" in listed else listed["records"]
    assert record["value"] == "Faro" and "llm:fake" in record["source"]["extractor"]
    assert llm.calls >= 1
