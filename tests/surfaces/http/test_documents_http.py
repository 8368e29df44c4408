"""Documents over HTTP (FastAPI's TestClient) on SQLite and PostgreSQL: JSON and multipart
uploads within the body limit, scope as access domain (a key narrowed to one actor never
sees another's documents), cited recall, removal verified everywhere, clear 4xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.errors import NotFound
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app

GUIDE = "# Setup\n\nInstall the quokka feeder first.\n\n# Care\n\nClean the feeder weekly.\n"


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
        "alice": keyring.create_key(store.keys, tenant="acme", actor="alice")[1],
        "bob": keyring.create_key(store.keys, tenant="acme", actor="bob")[1],
        "other": keyring.create_key(store.keys, tenant="globex", role="admin")[1],
    }
    store.close()
    app = create_app(db, worker=False, max_body_bytes=64 * 1024)
    with TestClient(app) as client:
        yield Api(client, keys)


def _add(api: Api, key: str, **body: Any) -> Any:
    return api(key, "POST", "/v1/documents", json=body)


def test_json_and_multipart_uploads_store_cited_chunks(api: Api) -> None:
    r = _add(api, "admin", text=GUIDE, title="feeder", format="markdown")
    assert r.status_code == 201, r.text
    doc = r.json()["document"]
    assert doc["chunks"] == 2 and doc["version"] == 1 and doc["scope"] == "tenant"
    again = _add(api, "admin", text=GUIDE, title="feeder", format="markdown")
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    up = api("admin", "POST", "/v1/documents",
             files={"file": ("care.md", GUIDE.replace("weekly", "daily"), "text/markdown")},
             data={"title": "feeder"})  # fmt: skip
    assert up.status_code == 200, up.text
    assert up.json()["status"] == "updated" and up.json()["chunks"] == {
        "added": 1, "kept": 1, "removed": 1,
    }  # fmt: skip
    got = api("admin", "GET", f"/v1/documents/{doc['id']}").json()
    assert got["document"]["history"][0]["version_id"] == doc["version_id"]
    assert [c["position"] for c in got["chunks"]] == [
        {"headings": ["Setup"]}, {"headings": ["Care"]},
    ]  # fmt: skip
    ask = {"query": "clean the feeder", "sources": ["memory", "documents"]}
    packet = api("alice", "POST", "/v1/memories/retrieve", json=ask).json()
    top = packet["documents"][0]
    assert top["document_id"] == doc["id"] and top["title"] == "feeder"
    assert top["text"] == "Clean the feeder daily." and top["position"] == {"headings": ["Care"]}
    assert top["span"] == [got["chunks"][1]["span"][0], got["chunks"][1]["span"][1]]
    plain = api("alice", "POST", "/v1/memories/retrieve", json={"query": "feeder"}).json()
    assert "documents" not in plain


def test_a_key_for_one_actor_never_sees_another_actors_documents(api: Api) -> None:
    mine = _add(api, "alice", text="Alice's quokka diary, page one.", title="diary",
                scope="actor:alice")  # fmt: skip
    assert mine.status_code == 201, mine.text
    doc_id = mine.json()["document"]["id"]
    assert _add(api, "bob", text="x", title="y", scope="actor:alice").status_code == 403
    assert _add(api, "bob", text="team", title="t", scope="namespace:team").status_code == 403
    assert _add(api, "admin", text="Team quokka notes.", title="t",
                scope="namespace:team").status_code == 201  # fmt: skip
    assert api("bob", "GET", f"/v1/documents/{doc_id}").status_code == 404
    assert api("bob", "DELETE", f"/v1/documents/{doc_id}").status_code == 404
    assert api("bob", "GET", "/v1/documents").json()["documents"] == []
    assert api("bob", "GET", "/v1/documents?scope=actor:alice").status_code == 403
    found = api("bob", "POST", "/v1/documents/search", json={"query": "quokka diary"}).json()
    assert found["documents"] == []
    asked = api("bob", "POST", "/v1/documents/search",
                json={"query": "quokka", "actor_id": "alice"})  # fmt: skip
    assert asked.status_code == 403
    assert api("bob", "POST", "/v1/documents/search",
               json={"query": "quokka", "namespaces": ["team"]}).status_code == 403  # fmt: skip
    packet = api("bob", "POST", "/v1/memories/retrieve",
                 json={"query": "quokka diary", "sources": ["documents"]}).json()  # fmt: skip
    assert packet["documents"] == [] and packet["records"] == []
    hers = api("alice", "POST", "/v1/documents/search", json={"query": "quokka diary"}).json()
    assert [d["document_id"] for d in hers["documents"]] == [doc_id]
    assert [d["title"] for d in api("alice", "GET", "/v1/documents").json()["documents"]] == [
        "diary"
    ]
    # another tenant sees nothing of acme's
    assert api("other", "GET", f"/v1/documents/{doc_id}").status_code == 404
    assert api("other", "GET", "/v1/documents").json()["documents"] == []


def test_delete_reaches_every_index_and_reports_it(api: Api) -> None:
    doc_id = _add(api, "alice", text=GUIDE, title="g", format="markdown",
                  scope="actor:alice").json()["document"]["id"]  # fmt: skip
    r = api("alice", "DELETE", f"/v1/documents/{doc_id}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["verified"] is True and body["deleted"]["chunks"] == 2
    assert not any(body["remaining"].values())
    assert api("alice", "GET", f"/v1/documents/{doc_id}").status_code == 404
    found = api("alice", "POST", "/v1/documents/search", json={"query": "quokka feeder"})
    assert found.json()["documents"] == []


def test_bad_uploads_get_clear_errors_and_store_nothing(api: Api) -> None:
    cases = [
        {"title": "no text"},
        {"text": "a", "content_base64": "YQ=="},
        {"text": "a", "scope": "team"},
        {"content_base64": "%%%"},
        {"text": "a", "unknown": 1},
        {"text": "My password is Hunter2!x", "title": "pw"},
    ]
    for body in cases:
        r = _add(api, "admin", **body)
        assert r.status_code == 422, (body, r.text)
        assert set(r.json()["error"]) >= {"code", "message"}
    bad_json = api.client.post("/v1/documents", content=b"{not json",
                               headers={"Authorization": f"Bearer {api.keys['admin']}",
                                        "Content-Type": "application/json"})  # fmt: skip
    assert bad_json.status_code == 422
    no_file = api("admin", "POST", "/v1/documents", files={"other": ("a.txt", "x")})
    assert no_file.status_code == 422 and "file" in no_file.json()["error"]["message"]
    big = api("admin", "POST", "/v1/documents",
              files={"file": ("big.txt", "word " * 20_000, "text/plain")})  # fmt: skip
    assert big.status_code == 413
    assert api("admin", "GET", "/v1/documents").json()["documents"] == []


def _upload(api: Api, *files: tuple[str, str], **data: str) -> Any:
    parts = [("file", (name, text, "text/plain")) for name, text in files]
    return api("admin", "POST", "/v1/documents", files=parts, data=data)


def test_an_upload_is_known_by_its_whole_name_and_takes_only_its_parts(api: Api) -> None:
    # found by a fuzz run: "hr/report.txt" replaced "finance/report.txt" (both were
    # known by their title, report.txt), and a misspelt part was ignored
    fin = _upload(api, ("finance/report.txt", "Xyloquant margins rose in the spring."))
    hr = _upload(api, ("hr/report.txt", "The holiday rota for the spring."))
    assert fin.status_code == hr.status_code == 201, (fin.text, hr.text)
    listed = api("admin", "GET", "/v1/documents").json()["documents"]
    assert sorted(d["title"] for d in listed) == ["report.txt", "report.txt"]
    found = api("admin", "POST", "/v1/documents/search", json={"query": "Xyloquant"}).json()
    assert [h["document_id"] for h in found["documents"]] == [fin.json()["document"]["id"]]
    again = _upload(api, ("finance/report.txt", "Xyloquant margins fell in the summer."))
    assert again.status_code == 200 and again.json()["status"] == "updated", again.text
    assert again.json()["document"]["id"] == fin.json()["document"]["id"]
    for files, data in [
        ([("a.txt", "Alice's own notes.")], {"Scope": "actor:alice"}),
        ([("a.txt", "Alice's own notes.")], {"tenant": "globex"}),
        ([("a.txt", "Alice's own notes."), ("b.txt", "Bob's own notes.")], {}),
    ]:
        refused = _upload(api, *files, **data)
        assert refused.status_code == 422, (data, refused.text)
        assert "nothing was stored" in refused.json()["error"]["message"]
    assert len(api("admin", "GET", "/v1/documents").json()["documents"]) == 2


def test_the_client_adds_cites_and_removes_documents_over_real_http(
    db: str, tmp_path: Path
) -> None:
    from tests.support.servers import running_server

    page = tmp_path / "care.html"
    page.write_text("<h1>Care</h1><p>Brush the quokka on Sundays.</p>")
    with running_server(db) as server:
        alice = server.client("alice")
        added = alice.add_document(page, scope="actor:alice")
        assert added["status"] == "added" and added["document"]["format"] == "html"
        doc_id = added["document"]["id"]
        assert alice.add_document(page, scope="actor:alice")["status"] == "unchanged"
        assert [d["id"] for d in alice.list_documents()] == [doc_id]
        assert alice.get_document(doc_id)["chunks"][0]["position"] == {"headings": ["Care"]}
        hits = alice.search_documents(query="brush the quokka")
        assert [h.document_id for h in hits] == [doc_id]
        packet = alice.recall(actor="alice", query="brush quokka", sources=["documents"])
        assert packet.documents is not None and packet.documents[0].title == "care.html"
        assert alice.recall(actor="alice", query="brush quokka").documents is None
        with pytest.raises(NotFound):
            server.client("globex").get_document(doc_id)
        report = alice.remove_document(doc_id)
        assert report.verified and report.deleted["chunks"] == 1
        assert alice.list_documents() == []
