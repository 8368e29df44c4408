"""In the service a worker drains the queue: a recall never runs extraction jobs itself
(`remem.memory.catch_up` is off there), and says what is still pending."""

from __future__ import annotations

from pathlib import Path

from remem.embed.base import HashEmbedder
from remem.service.http import create_app
from tests.support.servers import ANA_EVENT, ana_keys, serving


def test_a_service_recall_leaves_the_jobs_to_the_worker_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "service.db"
    key = ana_keys(db)["admin"]
    # `remem serve --no-worker`: separate workers drain the queue (none runs here)
    app = create_app(db, embedder=HashEmbedder(), worker=False)
    with serving(app, key) as h:
        assert h.post("/v1/events", json=ANA_EVENT).status_code == 201
        body = {"query": "does she live in Faro?", "actor_id": "ana", "explain": True}
        packet = h.post("/v1/memories/retrieve", json=body).json()
        jobs = h.get("/v1/jobs/list").json()["jobs"]
    assert [j["status"] for j in jobs] == ["pending"]
    assert [r["kind"] for r in packet["records"]] == ["event"]
    assert packet["explain"]["pending"] == {"ran": 0, "left": 1}
    assert any("1 extraction job(s) of actor 'ana' still pending" in n for n in packet["notes"])
