"""The OpenAPI document tells the truth: every status the server answers a route with is
listed for it, with `ErrorBody` for errors; every route has a named operation and a typed
answer; errors are said in remem's words; `/readyz` reports what it checks.

A sweep sends each route what a client gets wrong (no key, a key of the wrong scope or
role, unknown ids, malformed bodies and queries, a body over the limit, a reused id) and
what it gets right, against a real server, and compares each status with the document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from remem.service.answers import DocumentAdded, PacketOut, SubjectExport
from tests.support.servers import MAX_BODY, Server, event_body, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(str(tmp_path_factory.mktemp("openapi") / "api.db")) as running:
        yield running


@pytest.fixture(scope="module")
def doc(server: Server) -> dict[str, Any]:
    with server.http() as h:
        document: dict[str, Any] = h.get("/openapi.json").json()
    return document


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            yield path, method.upper(), op


def test_every_route_has_a_named_operation_a_typed_answer_and_error_bodies(
    doc: dict[str, Any],
) -> None:
    ops = list(_operations(doc))
    names = [op["operationId"] for _, _, op in ops]
    assert len(names) == len(set(names))
    # FastAPI's default names end in the method (retrieve_v1_memories_retrieve_post)
    assert [n for n in names if re.search(r"_(get|post|delete|put|patch)$", n)] == []
    assert {"retrieve_memories", "get_fact", "list_memories", "check_readiness"} <= set(names)
    schemas = doc["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ErrorBody" in schemas
    untyped = []
    for path, method, op in ops:
        for status, answer in op["responses"].items():
            content = answer.get("content", {})
            schema = (content.get("application/json") or {}).get("schema")
            if status.startswith("2") and path != "/metrics":
                if not schema or schema == {"type": "object", "additionalProperties": True}:
                    untyped.append(f"{method} {path} {status}")
            if int(status) >= 400 and not (path == "/readyz" and status == "503"):
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, status)
    assert untyped == []


# -- the sweep ------------------------------------------------------------------------------

_CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]*)+\b")  # RetrieveIn, ValidationError
_MALFORMED = ['{"bogus": 1}', "[1, 2]", '"text"', '{"x": ', '{"text": "\\ud800"}', "{}"]


def _concrete(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids.get(m[1], "missing"), path)


def _sweep(server: Server, doc: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    """(method, route, status, body) of every request the sweep sent."""
    sent: list[tuple[str, str, int, str]] = []
    agent = server.client("agent")
    rec = agent.remember(actor="alice", text="Alice likes green tea")
    proc = server.client("agent").propose_procedure(text="Greet the user by name")
    with server.http("admin") as h:
        doc_id = h.post("/v1/documents", json={"text": "Rooms are booked a week ahead."})
        made_key = h.post("/v1/keys", json={"role": "agent"}).json()
        ids = {
            "record_id": rec.id,
            "actor_id": "alice",
            "field": "tea",
            "document_id": doc_id.json()["document"]["id"],
            "key_id": made_key["id"],
        }
        sent.append(("POST", "/v1/documents", doc_id.status_code, doc_id.text))
    good_bodies = {
        "/v1/events": event_body("alice", "I moved to Porto.", event_id="evt_sweep"),
        "/v1/memories/retrieve": {"query": "tea", "actor_id": "alice"},
        "/v1/memories/batch-create": {"records": [{"actor_id": "alice", "text": "Likes jazz"}]},
        "/v1/memories/batch-update": {"records": [{"record_id": "rec_none", "text": "x"}]},
        "/v1/memories/batch-delete": {"records": [{"record_id": "rec_none"}]},
        "/v1/procedures": {"text": "Always answer in English", "actor_id": "alice"},
        "/v1/documents": {"text": "The office opens at nine."},
        "/v1/documents/search": {"query": "office"},
        "/v1/keys": {"actor_id": "alice"},
        "/v1/memories/{record_id}/reject": {"reason": "not now"},
    }
    order = sorted(_operations(doc), key=lambda o: o[1] == "DELETE" or "forget" in o[0])
    for path, method, _ in order:
        url = _concrete(path, {**ids, "record_id": proc.id} if "approve" in path else ids)
        body = good_bodies.get(path)
        tries: list[tuple[str | None, dict[str, Any]]] = [
            (None, {}),  # no key
            ("alice", {"json": body} if body is not None else {}),  # one actor's agent key
            ("agent", {"json": body} if body is not None else {}),
            ("admin", {"json": body} if body is not None else {}),
            ("admin", {"params": {"limit": "many", "actor_id": "a b"}}),
            ("admin", {"content": "x" * (MAX_BODY + 1)}),
        ]
        if "{" in path:
            tries.append(("admin", {"url": _concrete(path, {})}))  # unknown ids
        if method == "POST":
            tries += [("admin", {"content": m}) for m in _MALFORMED]
        if path == "/v1/events":  # the same id for another event
            tries.append(("admin", {"json": event_body("alice", "Other", event_id="evt_sweep")}))
        for key, kw in tries:
            target = kw.pop("url", url)
            if "content" in kw:
                kw["headers"] = {"Content-Type": "application/json"}
            with server.http(key) as h:
                resp = h.request(method, target, **kw)
            sent.append((method, path, resp.status_code, resp.text))
    return sent


@pytest.fixture(scope="module")
def swept(server: Server, doc: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    return _sweep(server, doc)


def test_every_status_the_server_sent_is_in_the_document(
    doc: dict[str, Any], swept: list[tuple[str, str, int, str]]
) -> None:
    missing = sorted(
        {
            f"{method} {path} {status}"
            for method, path, status, _ in swept
            if str(status) not in doc["paths"][path][method.lower()]["responses"]
        }
    )
    assert missing == []
    seen = {status for _, _, status, _ in swept}
    assert {200, 201, 401, 403, 404, 409, 413, 422} <= seen  # the sweep reached them all


def test_errors_are_error_bodies_in_remems_words(
    swept: list[tuple[str, str, int, str]],
) -> None:
    said = []
    for method, path, status, text in swept:
        if status < 400:
            continue
        body = json.loads(text)
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, text
        message = body["error"]["message"]
        assert "pydantic" not in message and "http" not in message, (method, path, message)
        assert _CLASS_NAME.search(message) is None, (method, path, message)
        said.append(message)
    assert any("is not a field this operation takes" in m for m in said)
    assert any("must be a JSON object" in m for m in said)


def test_answers_sent_outside_a_response_model_match_theirs(
    swept: list[tuple[str, str, int, str]], server: Server
) -> None:
    added = [t for m, p, s, t in swept if (m, p) == ("POST", "/v1/documents") and s < 300]
    assert added
    for text in added:
        DocumentAdded.model_validate_json(text)
    with server.http("admin") as h:
        SubjectExport.model_validate_json(h.get("/v1/subjects/alice/export").text)
    # the packet is serialized once, with no model round trip (routes/recall.py)
    retrieved = [t for m, p, s, t in swept if p == "/v1/memories/retrieve" and s < 300]
    assert retrieved
    agent = server.client("agent")
    agent.remember(actor="alice", text="Alice prefers green tea in the morning")
    asks = [
        {"actor_id": "alice", "query": "tea", "explain": True},
        {"actor_id": "alice", "query": "tea", "pin": ["drink"], "include_events": True},
        {"actor_id": "alice", "query": "tea", "sources": ["memory", "documents"]},
    ]
    with server.http("agent") as h:
        for body in asks:
            answer = h.post("/v1/memories/retrieve", json=body)
            assert answer.status_code == 200, answer.text
            retrieved.append(answer.text)
    for text in retrieved:
        assert PacketOut.model_validate_json(text).model_dump(exclude_unset=True) == json.loads(
            text
        )


# -- pages ----------------------------------------------------------------------------------


def test_lists_page_with_next_cursor_and_limit_still_works(server: Server) -> None:
    agent = server.client("agent")
    things = ["tea", "jazz", "hiking", "chess", "sushi", "trains", "tulips"]
    made = [agent.remember(actor="pager", text=f"Pat likes {t}").id for t in things]
    with server.http("agent") as h:
        assert len(h.get("/v1/memories", params={"actor_id": "pager"}).json()["records"]) == 7
        seen: list[str] = []
        cursor = None
        while True:
            params = {"actor_id": "pager", "limit": 3} | ({"cursor": cursor} if cursor else {})
            page = h.get("/v1/memories", params=params).json()
            seen += [r["id"] for r in page["records"]]
            if len(seen) == 3:  # one arrives at the front between two pages
                agent.remember(actor="pager", text="Pat likes opera")
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(made))  # newest first, none twice, none lost
        bad = h.get("/v1/memories", params={"actor_id": "pager", "cursor": "nope"})
        assert bad.status_code == 400 and "cursor" in bad.json()["error"]["message"]
    agent.add_events([event_row(t) for t in things])
    with server.http("admin") as h:
        for path, field in [("/v1/keys", "keys"), ("/v1/jobs/list", "jobs")]:
            first = h.get(path, params={"limit": 1}).json()
            assert len(first[field]) == 1 and first["next_cursor"]
            second = h.get(path, params={"limit": 1, "cursor": first["next_cursor"]}).json()
            assert second[field] and second[field][0] != first[field][0]


# -- readiness ------------------------------------------------------------------------------


def test_readyz_reports_migrations_embedder_and_the_worker(server: Server) -> None:
    with server.http() as h:  # no key, like /healthz
        resp = h.get("/readyz")
    assert resp.status_code == 200, resp.text
    ready = resp.json()
    assert ready["status"] == "ready"
    assert ready["checks"] == {"database": True, "migrations": True, "embedder": True,
                               "worker": True}  # fmt: skip
    assert ready["embedder"] == "hash-256" and ready["worker"] == "running"
    assert isinstance(ready["lag_seconds"], float) and ready["pending_jobs"] >= 0


def test_readyz_is_503_when_the_database_is_older_than_the_code(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    with running_server(str(db)) as running:
        with sqlite3.connect(db) as conn:  # as if an older remem had made it, unmigrated
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute(f"PRAGMA user_version = {version - 1}")
        with httpx.Client(base_url=running.url) as h:
            resp = h.get("/readyz")
    assert resp.status_code == 503
    assert resp.json()["checks"]["migrations"] is False
    assert resp.json()["status"] == "not_ready"


def event_row(text: str) -> dict[str, str]:
    return {"actor": "pager", "session": "s", "role": "user", "text": text}
