"""Hostile use of the HTTP writes that take no body: a body or filter they would ignore.

Written against a defect: `POST /v1/jobs/retry` with `{"job_id": ...}` retried every
job of the tenant, and `POST /v1/subjects/{actor}/forget` with a body naming part of
the subject forgot all of it. Now such a request is refused (422) and nothing is done.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.memory.memory import open_store
from remem.service.http import create_app
from tests.support.servers import key_for


def _fail_every_job(db: str) -> int:
    """Fail every ready job for good, as a worker whose model is down would; how many."""
    store = open_store(db)
    try:
        now = datetime.now(UTC)
        jobs = store.jobs.claim_jobs(now, 100, 60.0)
        for job in jobs:
            assert store.jobs.fail_job(job.id, "endpoint down", now, max_attempts=1) == "failed"
        return len(jobs)
    finally:
        store.close()


def test_a_retry_that_names_one_job_is_refused_and_retries_nothing(db: str) -> None:
    auth = {"Authorization": f"Bearer {key_for(db)}"}
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        for i in range(2):
            event = {"actor_id": "alice", "session_id": "s1", "role": "user",
                     "text": f"I prefer aisle seats, note {i}"}  # fmt: skip
            assert client.post("/v1/events", json=event, headers=auth).status_code == 201
        failed = _fail_every_job(db)
        assert failed >= 2
        (one, *_) = client.get("/v1/jobs/list", headers=auth).json()["jobs"]
        asks = [
            {"json": {"job_id": one["id"]}},
            {"json": {"event_id": one["event_id"], "strategy": one["strategy"]}},
            {"json": [one["id"]]},
            {"params": {"job_id": one["id"]}},
            {"params": {"failed_only": "true", "status": "failed"}},
        ]
        for ask in asks:
            got = client.post("/v1/jobs/retry", headers=auth, **ask)  # type: ignore[arg-type]
            assert got.status_code == 422, (ask, got.text)
            assert got.json()["error"]["code"] == "invalid_input"
            assert "nothing was done" in got.json()["error"]["message"]
            counts = client.get("/v1/jobs", headers=auth).json()
            assert counts["failed"] == failed and counts["pending"] == 0, (ask, counts)
        # no body, an empty object, and the documented parameter still work
        assert client.post("/v1/jobs/retry", headers=auth, json={}).json() == {"retried": failed}
        _fail_every_job(db)
        got = client.post("/v1/jobs/retry", headers=auth, params={"failed_only": "false"})
        assert got.json() == {"retried": failed}


def test_a_forget_sent_with_a_body_is_refused_and_forgets_nothing(db: str) -> None:
    auth = {"Authorization": f"Bearer {key_for(db)}"}
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        made = client.post("/v1/memories/batch-create", headers=auth, json={"records": [
            {"actor_id": "alice", "text": "I prefer aisle seats", "request_id": "r1"},
        ]}).json()  # fmt: skip
        (rec,) = made["results"]
        record_id = rec["record_id"]
        narrowed = {"record_ids": [record_id], "namespace": "/tenants/acme/actors/alice"}
        for method, path in [
            ("POST", "/v1/subjects/alice/forget"),
            ("DELETE", f"/v1/memories/{record_id}"),
        ]:
            got = client.request(method, path, headers=auth, json=narrowed)
            assert got.status_code == 422, (path, got.text)
            assert client.get(f"/v1/memories/{record_id}", headers=auth).status_code == 200
        # a key is checked before the body: no key is 401 whatever the body holds
        assert client.post("/v1/subjects/alice/forget", json=narrowed).status_code == 401
        assert client.post("/v1/subjects/alice/forget", headers=auth).status_code == 200
        assert client.get(f"/v1/memories/{record_id}", headers=auth).status_code == 404
