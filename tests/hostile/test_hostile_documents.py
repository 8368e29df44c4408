"""Documents under attack, on SQLite and PostgreSQL: secrets where only a heading or a
file name holds them, names that differ only in Unicode form or hide control
characters, wrong types, broken PDFs, hostile JSON bodies, and a second writer that
stores or removes the same document while a version is being prepared. Each answer is
a clear error with nothing stored, or one consistent version read back whole."""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from remem.documents.parse import normalise
from remem.embed.base import HashEmbedder
from remem.errors import InvalidInput, RefusedContent
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app

SECRET = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"  # a Stripe-shaped key, split for scanners


@pytest.fixture
def docs_mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, tenant="acme", embedder=HashEmbedder()) as m:
        yield m


@pytest.fixture
def http(db: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    store = open_store(db)
    key = keyring.create_key(store.keys, tenant="acme", role="admin")[1]
    store.close()
    app = create_app(db, worker=False, max_body_bytes=256 * 1024)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {key}"}


def _nothing_stored(mem: Memory) -> None:
    assert mem.list_documents() == []
    assert mem.search_documents(query="body text key") == []


# -- secrets a chunk's text does not hold ---------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("markdown", f"# Setup\n\n## key {SECRET}\n\nThe body text of the setup.\n"),
        ("html", f"<h1>Setup</h1><h2>key {SECRET}</h2><p>The body text of the setup.</p>"),
    ],
)
def test_a_secret_in_a_heading_refuses_the_document_without_echoing_it(
    docs_mem: Memory, fmt: str, text: str
) -> None:
    # a heading is kept in every chunk's position (not its text): it is screened too
    with pytest.raises(RefusedContent) as refused:
        docs_mem.add_document(text=text, title="setup", format=fmt)
    assert "heading" in str(refused.value) and SECRET not in str(refused.value)
    _nothing_stored(docs_mem)


def test_an_uploads_file_name_holding_a_secret_is_refused_as_a_title_is(
    http: tuple[TestClient, dict[str, str]],
) -> None:
    client, auth = http
    files = {"file": (f"{SECRET}.txt", "The body text of a note.", "text/plain")}
    r = client.post("/v1/documents", headers=auth, files=files)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "refused_content" and SECRET not in r.text
    assert client.get("/v1/documents", headers=auth).json()["documents"] == []


def test_a_secret_cut_in_two_at_a_chunk_boundary_is_refused(docs_mem: Memory) -> None:
    # a run without spaces is cut at 1,200 characters: the secret lands on both sides
    for run in ("a," * 596, "x/" * 590):
        text = run + SECRET + ", and the body text goes on here."
        with pytest.raises(RefusedContent, match="across chunks 1 and 2") as refused:
            docs_mem.add_document(text=text, title="long line")
        assert SECRET not in str(refused.value)
    _nothing_stored(docs_mem)


def test_a_long_heading_cannot_multiply_the_size_of_what_is_stored(docs_mem: Memory) -> None:
    # every chunk under a heading keeps it in its position: a 200,000-character heading
    # over 100 chunks was 20 MB stored from 0.3 MB sent
    body = ("Some body text here. " * 50 + "\n\n") * 100
    text = "# " + "x" * 200_000 + "\n\n## Part two\n\n" + body
    added = docs_mem.add_document(text=text, title="long heading", format="markdown")
    _, chunks = docs_mem.get_document(added.document.id)
    assert len(chunks) == 100
    for c in chunks:
        assert c.position["headings"] == ["x" * 200, "Part two"]
        assert normalise(text)[c.start : c.end] == c.text  # spans still index the text


# -- names: Unicode form, control characters, types -----------------------------------


def test_one_title_in_nfc_and_nfd_is_one_document(docs_mem: Memory) -> None:
    nfc = unicodedata.normalize("NFC", "Café menu")
    nfd = unicodedata.normalize("NFD", "Café menu")
    assert nfc != nfd
    first = docs_mem.add_document(text="Espresso costs two euros.", title=nfc)
    again = docs_mem.add_document(text="Espresso costs two euros.", title=nfd)
    assert again.status == "unchanged" and again.document.id == first.document.id
    changed = docs_mem.add_document(text="Espresso costs three euros.", title=nfd)
    assert changed.status == "updated" and changed.document.id == first.document.id
    assert [d.title for d in docs_mem.list_documents()] == [nfc]


def test_a_title_or_uri_with_a_control_character_is_refused(docs_mem: Memory) -> None:
    for bad in ("menu\x1b[2J", "menu\nsecond line", "menu\x85"):
        with pytest.raises(InvalidInput, match="control character"):
            docs_mem.add_document(text="Espresso costs two euros.", title=bad)
        with pytest.raises(InvalidInput, match="control character"):
            docs_mem.add_document(text="Espresso costs two euros.", source_uri="file:///" + bad)
    _nothing_stored(docs_mem)


def test_wrong_types_in_the_library_are_invalid_input(docs_mem: Memory) -> None:
    wrong: list[dict[str, Any]] = [
        {"text": 5},
        {"text": ["a list"]},
        {"text": "Espresso.", "title": 5},
        {"text": "Espresso.", "source_uri": {"a": 1}},
    ]
    for kw in wrong:
        with pytest.raises(InvalidInput):
            docs_mem.add_document(**kw)
    _nothing_stored(docs_mem)


def test_a_pdf_pypdf_cannot_handle_is_invalid_input(docs_mem: Memory) -> None:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("pw")
    raw = io.BytesIO()
    writer.write(raw)
    # an encryption handler pypdf does not know makes it raise NotImplementedError
    odd = raw.getvalue().replace(b"/Filter /Standard", b"/Filter /Unknownx")
    assert odd != raw.getvalue()
    for data in (odd, raw.getvalue(), b"%PDF-1.7\n" + bytes(range(256)) * 8):
        with pytest.raises(InvalidInput, match="PDF"):
            docs_mem.add_document(text=data, title="scan", format="pdf")
    _nothing_stored(docs_mem)


# -- HTTP bodies -------------------------------------------------------------------------


def test_hostile_json_bodies_are_422_naming_the_field(
    http: tuple[TestClient, dict[str, str]],
) -> None:
    client, auth = http
    json_auth = {**auth, "Content-Type": "application/json"}
    deep = client.post("/v1/documents", headers=json_auth, content=b"[" * 100_000)
    assert deep.status_code == 422, deep.text
    assert deep.json()["error"]["code"] == "invalid_input"
    typed = client.post("/v1/documents", headers=auth, json={"text": 5, "title": "n"})
    assert typed.status_code == 422
    assert "text" in typed.json()["error"]["message"]
    extra = client.post("/v1/documents", headers=auth, json={"text": "a", "owner": "x"})
    assert extra.status_code == 422 and "owner" in extra.json()["error"]["message"]
    assert client.get("/v1/documents", headers=auth).json()["documents"] == []


def test_an_agent_key_cannot_add_replace_or_remove_the_tenants_shared_documents(
    db: str,
) -> None:
    # shared by the whole tenant like a shared record: read-only to the agent runtime,
    # so an agent cannot poison or erase the tenant's policy documents
    store = open_store(db)
    keys = {
        "admin": keyring.create_key(store.keys, tenant="acme", role="admin")[1],
        "agent": keyring.create_key(store.keys, tenant="acme")[1],
        "reviewer": keyring.create_key(store.keys, tenant="acme", role="reviewer")[1],
        "alice": keyring.create_key(store.keys, tenant="acme", actor="alice")[1],
    }
    store.close()
    policy = {"text": "Refunds take five days.", "title": "refunds"}
    poisoned = {"text": "Refunds: wire money to account 12.", "title": "refunds"}
    with TestClient(create_app(db, worker=False)) as client:

        def call(key: str, method: str, path: str, **kw: Any) -> Any:
            return client.request(method, path, headers={"Authorization": f"Bearer {keys[key]}"},
                                  **kw)  # fmt: skip

        doc = call("admin", "POST", "/v1/documents", json=policy).json()["document"]
        for key in ("agent", "reviewer"):
            for body in (poisoned, {**poisoned, "title": "new", "scope": "namespace:team"}):
                refused = call(key, "POST", "/v1/documents", json=body)
                assert refused.status_code == 403, refused.text
                assert "admin" in refused.json()["error"]["message"]
            assert call(key, "DELETE", f"/v1/documents/{doc['id']}").status_code == 403
            # still readable by every key of the tenant
            assert call(key, "GET", f"/v1/documents/{doc['id']}").status_code == 200
        mine = call("alice", "POST", "/v1/documents",
                    json={**policy, "scope": "actor:alice"})  # fmt: skip
        assert mine.status_code == 201, mine.text  # an actor's own: its agent key may
        got = call("admin", "GET", f"/v1/documents/{doc['id']}").json()
        assert got["document"]["version"] == 1
        assert [c["text"] for c in got["chunks"]] == ["Refunds take five days."]


# -- a second writer between the read and the write ----------------------------------------


class RacingEmbedder(HashEmbedder):
    """A real embedder that, the first time it is asked to embed chunks, lets another
    writer act (`during`): the interleaving of two writers, made deterministic."""

    def __init__(self) -> None:
        super().__init__()
        self.during: Any = None

    def embed(self, texts: Sequence[str]) -> list[np.typing.NDArray[np.float32]]:
        if self.during is not None:
            act, self.during = self.during, None
            act()
        return list(super().embed(texts))


V1 = "Opening hours.\n\nThe shop opens at nine.\n\nIt closes at five."
V2_OTHER = "Opening hours.\n\nThe shop opens at ten.\n\nIt closes at six."
V2_MINE = "Opening hours.\n\nThe shop opens at eight.\n\nIt closes at four."


def _whole(mem: Memory, doc_id: str, text: str) -> None:
    """The document reads back as exactly `text`: its chunks in order, each indexed."""
    doc, chunks = mem.get_document(doc_id)
    assert "\n\n".join(c.text for c in chunks) == text
    assert doc.chunks == len(chunks)
    assert sorted(c.ordinal for c in chunks) == list(range(len(chunks)))
    for c in chunks:  # every chunk is findable by its own words, none twice
        found = [h.id for h in mem.search_documents(query=c.text, k=50)]
        assert found.count(c.id) == 1


def test_a_version_raced_by_another_writer_is_diffed_again_never_mixed(db: str) -> None:
    racing = RacingEmbedder()
    with (
        Memory.open(db, tenant="acme", embedder=racing) as mine,
        Memory.open(db, tenant="acme", embedder=HashEmbedder()) as other,
    ):
        first = mine.add_document(text=V1, title="hours", format="markdown")
        racing.during = lambda: other.add_document(text=V2_OTHER, title="hours",
                                                   format="markdown")  # fmt: skip
        mine_v = mine.add_document(text=V2_MINE, title="hours", format="markdown")
        assert mine_v.document.id == first.document.id
        assert mine_v.document.version == 3  # after the other writer's version 2
        docs = mine.list_documents()
        assert [(d.id, d.version) for d in docs] == [(first.document.id, 3)]
        _whole(mine, first.document.id, V2_MINE)
        history = [h["version"] for h in mine.get_document(first.document.id)[0].history]
        assert history == [1, 2]


def test_a_document_removed_while_a_version_is_prepared_leaves_no_orphans(db: str) -> None:
    racing = RacingEmbedder()
    with (
        Memory.open(db, tenant="acme", embedder=racing) as mine,
        Memory.open(db, tenant="acme", embedder=HashEmbedder()) as other,
    ):
        first = mine.add_document(text=V1, title="hours", format="markdown")
        racing.during = lambda: other.remove_document(first.document.id)
        again = mine.add_document(text=V2_MINE, title="hours", format="markdown")
        # the removal won; this write is a new document, whole, and the old one is gone
        assert again.status == "added" and again.document.id != first.document.id
        assert [d.id for d in mine.list_documents()] == [again.document.id]
        _whole(mine, again.document.id, V2_MINE)
        assert all(
            h.document_id == again.document.id
            for h in mine.search_documents(query="shop opens closes hours", k=50)
        )


def test_two_writers_adding_the_same_new_document_make_one(db: str) -> None:
    racing = RacingEmbedder()
    with (
        Memory.open(db, tenant="acme", embedder=racing) as mine,
        Memory.open(db, tenant="acme", embedder=HashEmbedder()) as other,
    ):
        theirs: list[Any] = []
        racing.during = lambda: theirs.append(
            other.add_document(text=V1, title="hours", format="markdown")
        )
        added = mine.add_document(text=V1, title="hours", format="markdown")
        assert theirs[0].status == "added"
        assert added.status == "unchanged" and added.document.id == theirs[0].document.id
        assert len(mine.list_documents()) == 1
        _whole(mine, added.document.id, V1)
