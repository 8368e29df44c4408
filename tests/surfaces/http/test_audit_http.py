"""The audit trail over HTTP (issue 39), on both backends: batch erasures name who asked
and why and are audited like `DELETE /v1/memories/{id}`; `GET /v1/audit` lists the log
(admins; a key for one actor sees its actor's rows), filtered and a page at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app

WORDS = ("vegetarian", "lisbon", "aisle", "oslo")


class Api:
    def __init__(self, client: TestClient, keys: dict[str, tuple[str, str]]) -> None:
        self.client, self.keys = client, keys

    def call(self, method: str, path: str, who: str = "admin", **kw: Any) -> Any:
        bearer = {"Authorization": f"Bearer {self.keys[who][1]}"}
        return self.client.request(method, path, headers=bearer, **kw)

    def key_id(self, who: str) -> str:
        return self.keys[who][0]


@pytest.fixture
def api(db: str) -> Iterator[Api]:
    store = open_store(db)
    try:
        keys = {}
        for name, actor, role in (("admin", None, "admin"), ("alice", "alice", "admin"),
                                  ("agent", None, "agent")):  # fmt: skip
            key, secret = keyring.create_key(store.keys, tenant="acme", actor=actor, role=role)
            keys[name] = (key.id, secret)
    finally:
        store.close()
    with TestClient(create_app(db, worker=False)) as client:
        yield Api(client, keys)


def remember(api: Api, actor: str, text: str) -> str:
    body = {"records": [{"actor_id": actor, "text": text}]}
    made = api.call("POST", "/v1/memories/batch-create", json=body)
    assert made.status_code == 200, made.text
    return str(made.json()["results"][0]["record_id"])


def test_batch_erasures_name_who_asked_and_why_and_are_audited(api: Api, db: str) -> None:
    veg = remember(api, "alice", "Alice is vegetarian")
    lis = remember(api, "bob", "Bob moved to Lisbon")
    oslo = remember(api, "bob", "Bob flew to Oslo")
    gone = api.call("POST", "/v1/memories/batch-delete",
                    json={"records": [{"record_id": veg, "reason": "DSR-3"}]})  # fmt: skip
    mixed = api.call("POST", "/v1/memories/batch",
                     json={"records": [{"op": "delete", "record_id": lis, "reason": "DSR-4"},
                                       {"op": "delete", "record_id": oslo}]})  # fmt: skip
    assert gone.status_code == mixed.status_code == 200, (gone.text, mixed.text)
    jobs = [gone.json()["results"][0]["job_id"]] + [r["job_id"] for r in mixed.json()["results"]]
    refused = api.call("POST", "/v1/memories/batch",
                       json={"records": [{"op": "create", "actor_id": "bob", "text": "x",
                                          "reason": "why"}]})  # fmt: skip
    assert refused.status_code == 422 and "reason is for op delete" in refused.text

    store = open_store(db)
    try:
        found = {j["id"]: j for j in store.erasure.deletions("acme", 10)}
        rows = store.audit.audit_log("acme", action="erase")
    finally:
        store.close()
    admin = api.key_id("admin")
    asked = [(found[j]["actor"], found[j]["requested_by"], found[j]["reason"]) for j in jobs]
    assert asked == [("alice", admin, "DSR-3"), ("bob", admin, "DSR-4"), ("bob", admin, None)]
    assert found[jobs[0]]["requester"] == "api: admin key for the whole tenant"
    said = [(r["key_id"], r["actor"], r["target"], r["detail"]["surface"]) for r in rows[::-1]]
    assert said == [
        (admin, a, str(j), "api") for a, j in zip(("alice", "bob", "bob"), jobs, strict=True)
    ]
    receipts = [api.call("GET", f"/v1/deletions/{j}/receipt").text for j in jobs]
    text = json.dumps(rows) + "".join(receipts)
    for word in WORDS:
        assert not re.search(rf"\b{word}\b", text, re.IGNORECASE), word


def test_the_audit_log_over_http_filtered_paged_and_confined(db: str) -> None:
    from remem.errors import Forbidden, InvalidInput
    from remem.service.client import Client
    from tests.support.servers import running_server

    with running_server(db) as server:
        admin = server.client("admin")
        veg = admin.remember(actor="alice", text="Alice is vegetarian")
        admin.remember(actor="bob", text="Bob moved to Lisbon")
        for actor in ("alice", "bob", "alice"):
            admin.records(actor=actor)
        admin.forget(record_id=veg.id)
        with server.http("admin") as http:
            made = http.post("/v1/keys", json={"role": "admin", "actor_id": "alice"})
        assert made.status_code == 201, made.text
        admin_id = made.json()["id"]

        rows = admin.audit()
        said = [(r["action"], r["actor"], r["detail"]["surface"]) for r in rows[::-1]]
        assert said == [
            ("read", "alice", "api"),
            ("read", "bob", "api"),
            ("read", "alice", "api"),
            ("erase", "alice", "api"),
            ("key_create", "alice", "api"),
        ]
        assert rows[0]["target"] == admin_id and [r["id"] for r in rows] == sorted(
            (r["id"] for r in rows), reverse=True
        )
        assert [r["actor"] for r in admin.audit(actor="bob")] == ["bob"]
        assert [r["action"] for r in admin.audit(action="erase")] == ["erase"]
        assert len(admin.audit(key_id=rows[0]["key_id"])) == 5
        assert admin.audit(key_id="key_nobody") == []
        assert admin.audit(limit=2) == rows[:2]
        for word in WORDS:
            assert not re.search(rf"\b{word}\b", json.dumps(rows), re.IGNORECASE), word

        # a page at a time: the cursor continues below the last row, only for its query
        with server.http("admin") as http:
            first = http.get("/v1/audit", params={"limit": 2, "actor_id": "alice"}).json()
            assert first["retention_days"] >= 1 and len(first["rows"]) == 2
            rest = http.get(
                "/v1/audit", params={"actor_id": "alice", "cursor": first["next_cursor"]}
            ).json()
            assert first["rows"] + rest["rows"] == admin.audit(actor="alice")
            assert rest["next_cursor"] is None
            other = http.get(
                "/v1/audit", params={"actor_id": "bob", "cursor": first["next_cursor"]}
            )
            assert other.status_code == 400 and other.json()["error"]["code"] == "invalid_cursor"
        with pytest.raises(InvalidInput, match="action must be one of"):
            admin.audit(action="delete")

        # a key for one actor sees its actor's rows only; a key below admin sees none
        alices = Client(server.url, made.json()["key"])
        try:
            assert {r["actor"] for r in alices.audit()} == {"alice"}
            assert len(alices.audit()) == 4
            with pytest.raises(Forbidden):
                alices.audit(actor="bob")
        finally:
            alices.close()
        with pytest.raises(Forbidden):
            server.client("agent").audit()
        assert server.client("globex").audit() == []  # another tenant's log is its own


def test_recalls_are_audited_once_per_key_actor_and_minute(api: Api, db: str) -> None:
    from remem.timeutil import utcnow

    remember(api, "alice", "Alice is vegetarian")
    start = utcnow().strftime("%H:%M")
    for actor in ("alice", "alice", "bob", "alice"):
        body = {"query": "what does she eat?", "actor_id": actor}
        assert api.call("POST", "/v1/memories/retrieve", json=body).status_code == 200
    minutes = len({start, utcnow().strftime("%H:%M")})  # 2 if a minute began meanwhile
    alices = api.call("POST", "/v1/memories/retrieve", "alice", json={"query": "diet?"})
    assert alices.status_code == 200
    rows = api.call("GET", "/v1/audit", params={"action": "recall"}).json()["rows"]
    by = [(r["key_id"], r["actor"], r["detail"]) for r in rows]
    admin, alice = api.key_id("admin"), api.key_id("alice")
    assert by.count((admin, "alice", {"surface": "api"})) in range(1, minutes + 1)
    assert by.count((admin, "bob", {"surface": "api"})) == 1
    assert by.count((alice, "alice", {"surface": "api"})) == 1  # another key: its own row
    assert len(by) <= 2 + minutes and "what does she eat" not in json.dumps(rows)


def test_an_erasure_reason_travels_in_the_body_not_the_url(api: Api, db: str) -> None:
    """A query string reaches access logs and proxies: the reason may come in a JSON body
    instead ({"reason": ...}); the query form still works, and the two must agree."""
    veg = remember(api, "alice", "Alice is vegetarian")
    remember(api, "bob", "Bob moved to Lisbon")
    kept = remember(api, "carol", "Carol flew to Oslo")
    one = api.call("DELETE", f"/v1/memories/{veg}", json={"reason": "DSR-5"})
    whole = api.call("POST", "/v1/subjects/bob/forget", json={"reason": "DSR-6"})
    assert one.status_code == whole.status_code == 200, (one.text, whole.text)
    jobs = [one.json()["job_id"], whole.json()["job_id"]]
    said = [api.call("GET", f"/v1/deletions/{j}/receipt").json()["reason"] for j in jobs]
    assert said == ["DSR-5", "DSR-6"]
    for kw in ({"params": {"reason": "DSR-7"}, "json": {"reason": "DSR-8"}},
               {"json": {"reason": "DSR-7", "job_id": 3}}, {"json": {"reason": 7}},
               {"json": ["DSR-7"]}):  # fmt: skip
        refused = api.call("DELETE", f"/v1/memories/{kept}", **kw)
        assert refused.status_code == 422, (kw, refused.text)
        assert "nothing was done" in refused.text or "reason" in refused.text
    assert api.call("GET", f"/v1/memories/{kept}").status_code == 200  # nothing erased


def test_the_client_sends_an_erasure_reason_in_the_body(db: str) -> None:
    from remem.service.client import Client
    from remem.store.values import Asked

    store = open_store(db)
    try:
        _, secret = keyring.create_key(store.keys, tenant="acme", role="admin")
    finally:
        store.close()
    sent: list[str] = []

    class Seen(httpx.BaseTransport):  # the app's own transport; it notes each URL
        def __init__(self, inner: httpx.BaseTransport) -> None:
            self.inner = inner

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(str(request.url))
            got = self.inner.handle_request(request)
            got.read()
            return httpx.Response(got.status_code, headers=got.headers, content=got.content)

    with TestClient(create_app(db, worker=False)) as app:
        with Client("http://testserver", secret, transport=Seen(app._transport)) as client:
            rec = client.remember(actor="alice", text="Alice is vegetarian")
            gone = client.forget(record_id=rec.id, asked=Asked(None, None, "DSR-9"))
            client.forget(actor="bob", asked=Asked(None, None, "DSR-10"))
        auth = {"Authorization": f"Bearer {secret}"}
        receipt = app.get(f"/v1/deletions/{gone.job_id}/receipt", headers=auth).json()
    assert receipt["reason"] == "DSR-9"
    assert not [u for u in sent if "reason" in u or "DSR" in u], sent
