"""Event metadata reads back as it was sent, and what reads it back is bounded.

PostgreSQL kept metadata as `jsonb`, whose numbers are `numeric`: `1e308` came back
as a 309-digit integer, so 63 KB of `[1e308, ...]` read back as about 2.8 MB, and
36 such events made `GET /v1/events?limit=36` and the subject export 100 MB each
(issue 33, item 3). Every case runs on SQLite and PostgreSQL (the `db` fixture).
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.embed import HashEmbedder
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app

# 9,000 floats at the top of the range, and numbers jsonb rewrites or reorders
METADATA: dict[str, Any] = {
    "x": [1e308] * 9000,
    "tiny": 5e-324,
    "third": 0.1,
    "big": 12345678901234567890,
    "order": {"b": 1, "a": 2, "ccc": [1.5e-300, -2.5e300]},
}
SENT = len(json.dumps(METADATA))


def _size(value: object) -> int:
    return len(json.dumps(value))


@contextmanager
def _service(db: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    store = open_store(db)
    _, admin = keyring.create_key(store.keys, tenant="acme", role="admin")
    store.close()
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        yield client, {"Authorization": f"Bearer {admin}"}


def _event(i: int, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"actor_id": "alice", "session_id": "s", "role": "user", "text": f"note {i}",
            "event_id": f"e{i:04d}", "time": f"2026-03-01T09:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "metadata": metadata}  # fmt: skip


def _row(i: int, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"actor": "alice", "session": "s", "role": "user", "text": f"note {i}",
            "id": f"e{i:04d}", "metadata": metadata}  # fmt: skip


def test_float_metadata_reads_back_as_it_was_sent(db: str) -> None:
    with Memory.open(db, embedder=None) as mem:
        mem.add_event(actor="alice", session="s", role="user", text="hi", metadata=METADATA)
        (event,) = mem.events(actor="alice")
        (page,), _ = mem.events_page(actor="alice")
        (row,) = [r for r in mem.export(actor="alice") if r["type"] == "event"]
    for got in (event.metadata, page.metadata, row["metadata"]):
        assert got == METADATA
        assert list(got["order"]) == ["b", "a", "ccc"]  # the caller's key order, not jsonb's
        assert type(got["x"][0]) is float and type(got["big"]) is int
        assert _size(got) <= SENT * 1.05, _size(got)


def test_http_events_and_export_are_the_size_that_was_sent(db: str) -> None:
    with _service(db) as (client, auth):
        events = [_event(i, METADATA) for i in range(12)]
        got = client.post("/v1/events", json={"events": events}, headers=auth)
        assert got.status_code == 201, got.text
        page = client.get("/v1/events", params={"actor_id": "alice", "limit": 36}, headers=auth)
        assert page.status_code == 200
        assert [e["metadata"] for e in page.json()["events"]] == [METADATA] * 12
        # 12 events of 63 KB: about 0.76 MB, where jsonb's numbers made 34 MB
        assert len(page.content) <= 12 * SENT * 1.1, len(page.content)
        export = client.get("/v1/subjects/alice/export", headers=auth)
        assert export.status_code == 200
        rows = [r for r in export.json()["rows"] if r["type"] == "event"]
        assert [r["metadata"] for r in rows] == [METADATA] * 12
        assert len(export.content) <= 12 * SENT * 1.1, len(export.content)


def test_a_page_of_events_stops_at_its_byte_bound_and_the_cursor_goes_on(db: str) -> None:
    blob = {"blob": "m" * 50_000}  # 100 events of 50 KB: 5 MB, over a page's 4 MiB
    with _service(db) as (client, auth):
        for start in range(0, 100, 10):  # under the 1 MiB request body
            batch = [_event(i, blob) for i in range(start, start + 10)]
            assert client.post("/v1/events", json={"events": batch}, headers=auth).is_success
        seen: list[str] = []
        sizes: list[int] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"actor_id": "alice", "limit": 1000}
            if cursor is not None:
                params["cursor"] = cursor
            page = client.get("/v1/events", params=params, headers=auth)
            assert page.status_code == 200, page.text
            sizes.append(len(page.content))
            seen += [e["event_id"] for e in page.json()["events"]]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
    assert seen == [f"e{i:04d}" for i in range(100)]  # each once, in order, none lost
    assert len(sizes) >= 2 and max(sizes) <= 4 * 1024 * 1024 + 60_000, sizes


def test_the_library_export_reads_events_a_page_at_a_time(db: str) -> None:
    blob = {"blob": "m" * 50_000}  # 240 events of 50 KB: 12 MB
    with Memory.open(db, embedder=None) as mem:
        for start in range(0, 240, 40):
            mem.add_events([_row(i, blob) for i in range(start, start + 40)])
        tracemalloc.start()
        try:
            kept = 0
            for row in mem.export(actor="alice"):
                kept += row["type"] == "event"
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert kept == 240
    assert peak < 8_000_000, peak  # all of them at once is over 12 MB


def test_the_http_export_is_streamed(db: str) -> None:
    with _service(db) as (client, auth):
        events = [_event(i, {"n": i}) for i in range(30)]
        assert client.post("/v1/events", json={"events": events}, headers=auth).is_success
        got = client.get("/v1/subjects/alice/export", headers=auth)
        assert got.status_code == 200 and got.headers["content-type"] == "application/json"
        assert "content-length" not in got.headers  # sent as it is read, never built whole
        body = got.json()
        assert body["actor_id"] == "alice"
        assert [r["metadata"] for r in body["rows"] if r["type"] == "event"] == [
            {"n": i} for i in range(30)
        ]
        missing = client.get("/v1/subjects/bad%20name!/export", headers=auth)
        assert missing.status_code == 422  # refused before a byte of the body is sent


@pytest.mark.parametrize("limit", [1, 36])
def test_an_actor_key_reads_no_one_elses_export(db: str, limit: int) -> None:
    with _service(db) as (client, auth):
        events = [_event(i, {"n": i}) for i in range(3)]
        assert client.post("/v1/events", json={"events": events}, headers=auth).is_success
        store = open_store(db)
        _, bob = keyring.create_key(store.keys, tenant="acme", actor="bob", role="admin")
        store.close()
        other = {"Authorization": f"Bearer {bob}"}
        assert client.get("/v1/subjects/alice/export", headers=other).status_code == 403
        page = client.get("/v1/events", params={"actor_id": "alice", "limit": limit}, headers=other)
        assert page.status_code == 403
