"""Each key sees only its scope: job counts and lists, and recall narrowed to a namespace.

Over HTTP (FastAPI's TestClient) on SQLite and PostgreSQL, and the library.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app

FACTS = "/tenants/acme/actors/alice/facts"


class Api:
    def __init__(self, client: TestClient, keys: dict[str, str]) -> None:
        self.client, self.keys = client, keys

    def __call__(self, key: str, method: str, path: str, **kw: Any) -> Any:
        auth = {"Authorization": f"Bearer {self.keys[key]}"}
        return self.client.request(method, path, headers=auth, **kw)


@pytest.fixture
def api(db: str) -> Iterator[Api]:
    store = open_store(db)
    keys = {
        "admin": keyring.create_key(store.keys, tenant="acme", role="admin")[1],
        "alice": keyring.create_key(store.keys, tenant="acme", actor="alice", role="admin")[1],
        "bob": keyring.create_key(store.keys, tenant="acme", actor="bob")[1],
    }
    store.close()
    with TestClient(create_app(db, worker=False)) as client:  # the jobs stay pending
        yield Api(client, keys)


def _events(api: Api, actor: str, texts: list[str]) -> None:
    events = [{"actor_id": actor, "session_id": "s1", "role": "user", "text": t} for t in texts]
    assert api("admin", "POST", "/v1/events", json={"events": events}).status_code == 201


def test_job_counts_and_lists_show_an_actor_key_only_its_actor(api: Api) -> None:
    _events(api, "alice", ["I keep bees", "I live in Lyon"])
    _events(api, "bob", ["I play the cello", "I like figs", "I own a boat"])
    assert api("admin", "GET", "/v1/jobs").json()["pending"] == 5
    alice = api("alice", "GET", "/v1/jobs").json()
    bob = api("bob", "GET", "/v1/jobs").json()
    assert (alice["pending"], bob["pending"]) == (2, 3)
    assert sum(alice.values()) == 2 and sum(bob.values()) == 3
    listed = api("bob", "GET", "/v1/jobs/list").json()["jobs"]
    assert len(listed) == 3
    assert (
        len(api("alice", "GET", "/v1/jobs/list", params={"status": "pending"}).json()["jobs"]) == 2
    )
    assert len(api("admin", "GET", "/v1/jobs/list").json()["jobs"]) == 5
    # retrying acts on the tenant's whole queue: a key for one actor may not
    retry = api("alice", "POST", "/v1/jobs/retry")
    assert retry.status_code == 403 and "whole tenant" in retry.json()["error"]["message"]


def test_retrieve_narrowed_to_a_namespace_returns_only_its_records(api: Api) -> None:
    _events(api, "alice", ["I keep bees on the roof"])
    made = api("admin", "POST", "/v1/memories/batch-create",
               json={"records": [{"actor_id": "alice", "text": "Alice keeps bees"}]})  # fmt: skip
    assert made.json()["succeeded"] == 1
    body = {"query": "bees", "actor_id": "alice"}
    wide = api("alice", "POST", "/v1/memories/retrieve", json=body).json()["records"]
    assert {i["kind"] for i in wide} == {"semantic", "event"}
    narrow = api("alice", "POST", "/v1/memories/retrieve", json={**body, "namespace": FACTS})
    items = narrow.json()["records"]
    assert [i["text"] for i in items] == ["Alice keeps bees"]
    assert all(i["namespace"].startswith(FACTS) and i["kind"] != "event" for i in items)


def test_recall_narrowed_to_a_namespace_returns_no_raw_events(db: str) -> None:
    # catch_up=0: the turn stays a raw event (a recall would otherwise extract it first)
    with Memory.open(db, tenant="acme", catch_up=0) as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="I keep bees on the roof")
        mem.remember(actor="alice", text="Alice keeps bees")
        wide = mem.recall(actor="alice", query="bees")
        assert "event" in {i.kind for i in wide.records}
        narrow = mem.recall(actor="alice", query="bees", namespace=FACTS)
        assert [i.text for i in narrow.records] == ["Alice keeps bees"]
        other = mem.recall(actor="alice", query="bees", namespace=FACTS.replace("facts", "x"))
        assert other.records == ()
