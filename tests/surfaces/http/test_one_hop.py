"""`POST /v1/memories/retrieve` and `POST /v1/events` in one thread hop
(`remem.service.onehop.OneHop`): the key, the body and the work run on one thread of
the pool, and the routes still answer a missing key, a bad key and a bad body as before
and as the routes FastAPI serves do."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app

RETRIEVE = "/v1/memories/retrieve"
OTHER = "/v1/memories/batch-create"  # served by FastAPI's own handler


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    db = str(tmp_path / "hop.db")
    store = open_store(db)
    try:
        _, secret = keyring.create_key(store.keys, tenant="acme", role="admin")
    finally:
        store.close()
    with TestClient(create_app(db, worker=False)) as client:
        ana = {"records": [{"actor_id": "ana", "text": "Ana is vegetarian"}]}
        made = client.post(OTHER, headers=_key(secret), json=ana)
        assert made.status_code == 200, made.text
        yield client, secret


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What is run on the thread pool from here on, one entry a hop (anyio's, which
    Starlette's `run_in_threadpool` calls)."""
    made: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Any, *args: Any, **kw: Any) -> Any:
        made.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kw)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return made


def _key(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_a_retrieve_hops_to_a_thread_once(app: tuple[TestClient, str], hops: list[str]) -> None:
    client, secret = app
    asked = {"actor_id": "ana", "query": "is Ana vegetarian?"}
    got = client.post(RETRIEVE, headers=_key(secret), json=asked)
    assert got.status_code == 200, got.text
    assert "Ana is vegetarian" in [it["text"] for it in got.json()["records"]]
    assert len(hops) == 1, hops
    hops.clear()
    client.post(OTHER, headers=_key(secret), json={"records": [{"actor_id": "ana", "text": "x"}]})
    assert len(hops) >= 2, hops  # FastAPI's: the key, the work (and checking its answer)


def test_an_append_hops_to_a_thread_once(app: tuple[TestClient, str], hops: list[str]) -> None:
    client, secret = app
    one = {"actor_id": "ana", "session_id": "s1", "role": "user", "text": "I moved to Porto"}
    got = client.post("/v1/events", headers=_key(secret), json={**one, "event_id": "e1"})
    assert got.status_code == 201, got.text
    assert got.json() == {"events": [{"event_id": "e1", "created": True}]}
    batch = {"events": [{**one, "event_id": "e1"}, {**one, "event_id": "e2"}]}
    got = client.post("/v1/events", headers=_key(secret), json=batch)
    assert got.json() == {"events": [{"event_id": "e1", "created": False},
                                     {"event_id": "e2", "created": True}]}  # fmt: skip
    assert len(hops) == 2, hops
    listed = client.get("/v1/events", headers=_key(secret), params={"actor_id": "ana"})
    assert [e["event_id"] for e in listed.json()["events"]] == ["e1", "e2"], listed.text
    # a union body (one event, or a batch): the errors of the form it came closest to
    got = client.post("/v1/events", headers=_key(secret), json={"events": [{"actor_id": "a"}]})
    assert got.status_code == 422
    assert got.json()["error"]["message"].startswith("events.0.session_id: is required"), got.text


def test_the_key_is_checked_before_the_body(app: tuple[TestClient, str]) -> None:
    client, _ = app
    unknown = _key("rk_" + "A" * 40)
    for headers in ({}, unknown, {"Authorization": "Basic abc"}):
        for body, path in product((b"{not json", b"", b'{"query": 5}'), (RETRIEVE, "/v1/events")):
            got = client.post(path, headers={**headers, "Content-Type": "application/json"},
                              content=body)  # fmt: skip
            assert got.status_code == 401, (headers, body, got.text)
            assert got.json()["error"]["code"] == "unauthorized"


BAD_BODIES: list[tuple[str, bytes, str]] = [
    ("malformed", b'{"query": ', "application/json"),
    ("empty", b"", "application/json"),
    ("not JSON by its type", b'{"query": "diet"}', "text/plain"),
    ("no content type", b'{"query": "diet"}', ""),
    ("not UTF-8", b'{"query": "\xff\xfe"}', "application/json"),
    ("nested deep", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("wrong type", b'{"query": "diet", "top_k": "ten"}', "application/json"),
    ("unknown field", b'{"query": "diet", "tenant": "other"}', "application/json"),
    ("an array", b'[{"query": "diet"}]', "application/json"),
    ("NUL", b'{"query": "diet\\u0000"}', "application/json"),
]


@pytest.mark.parametrize(("what", "body", "kind"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_a_bad_body_is_answered_as_fastapi_answers_it(
    app: tuple[TestClient, str], what: str, body: bytes, kind: str
) -> None:
    client, secret = app
    headers = {**_key(secret), **({"Content-Type": kind} if kind else {})}
    got = client.post(RETRIEVE, headers=headers, content=body)
    assert got.status_code == 422, (what, got.text)
    assert got.json()["error"]["code"] == "invalid_input"
    # the same body to a route FastAPI serves, where the error is about the body as a
    # whole (its fields differ): the same words
    if what not in ("wrong type", "unknown field", "NUL"):
        other = client.post(OTHER, headers=headers, content=body)
        assert other.status_code == 422, (what, other.text)
        assert got.json()["error"]["message"] == other.json()["error"]["message"], what


def test_a_field_error_names_the_field(app: tuple[TestClient, str]) -> None:
    client, secret = app
    got = client.post(RETRIEVE, headers=_key(secret), json={"query": "diet", "top_k": "ten"})
    assert got.status_code == 422
    assert got.json()["error"]["message"].startswith("top_k:"), got.text
    got = client.post(RETRIEVE, headers=_key(secret), json={"query": ""})
    assert got.status_code == 422 and "query" in got.json()["error"]["message"], got.text
