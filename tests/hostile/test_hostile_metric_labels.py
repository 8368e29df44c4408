"""Metrics under attack: what a client sends never becomes a label value of its own, so
no client (with a key or without) can grow the series a scrape holds without bound."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.open import open_store
from tests.support.metrics import parse_samples, sample


def test_made_up_http_methods_share_one_label_value(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    store = open_store(db)
    admin = keyring.create_key(store.keys, tenant="acme", role="admin")[1]
    store.close()
    app = create_app(db, embedder=HashEmbedder(), worker=False, metrics_port=0)
    auth = {"Authorization": f"Bearer {admin}"}
    with TestClient(app) as client:
        for i in range(20):  # with a key, and without one (the process's series)
            client.request(f"X{i}", "/v1/documents", headers=auth)
            client.request(f"PROBE{i}", f"/no/such/{i}")
        client.request("GET", "/v1/documents", headers=auth)
        mine = parse_samples(client.get("/metrics", headers=auth).text)
        port = app.state.metrics_listener.port
        process = parse_samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
    for samples in (mine, process):
        methods = {
            dict(labels)["method"]
            for name, labels in samples
            if name == "remem_http_requests_total"
        }
        assert methods <= {"GET", "other"}, methods
    # a 405 is answered before the key is read: it counts for the process only
    route = {"method": "other", "route": "/v1/documents", "status": "405"}
    assert sample(process, "remem_http_requests_total", **route) == 20
    unmatched = {"method": "other", "route": "unmatched", "status": "404"}
    assert sample(process, "remem_http_requests_total", **unmatched) == 20
    assert sample(process, "remem_http_requests_total", method="GET", route="/v1/documents",
                status="200") == 1  # fmt: skip
