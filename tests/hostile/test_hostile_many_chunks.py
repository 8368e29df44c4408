"""A document that cuts into very many chunks.

Written against a defect: a document had no bound on its chunks (only on its text,
2,000,000 characters), and one of 20,000 tiny sections took 2.9 s of CPU to add with
the hash embedder (about 40 s with all-MiniLM-L6-v2) inside one write transaction.
Now `[documents] max_chunks` (5,000 by default) refuses it whole, before anything is
embedded or stored, naming its count and the limit; a new version over the limit
leaves the stored version as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.config.sections import Documents
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.service.http import create_app
from tests.support.servers import key_for


def sections(n: int, word: str = "rake") -> str:
    """Markdown of `n` tiny sections: one chunk each (a chunk never spans two headings)."""
    return "".join(f"# Part {i}\n\nThe {word} number {i} hangs on hook {i % 97}.\n\n"
                   for i in range(n))  # fmt: skip


def _config(tmp_path: Path, max_chunks: int) -> Path:
    path = tmp_path / "remem.toml"
    path.write_text(f"[documents]\nmax_chunks = {max_chunks}\n")
    return path


def test_a_document_over_the_default_chunk_limit_is_refused_whole(db: str) -> None:
    limit = Documents().max_chunks
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        with pytest.raises(InvalidInput) as err:
            mem.add_document(text=sections(limit + 1), title="glossary", format="markdown")
        assert f"{limit + 1} chunks" in str(err.value) and f"limit is {limit}" in str(err.value)
        assert "max_chunks" in str(err.value) and "nothing was stored" in str(err.value)
        assert mem.list_documents() == []
        assert mem.search_documents(query="rake hook") == []  # no chunk of it indexed


def test_a_configured_chunk_limit_holds_on_a_new_version_and_over_http(
    db: str, tmp_path: Path
) -> None:
    config = _config(tmp_path, 20)
    with Memory.open(db, embedder=HashEmbedder(), config=config) as mem:
        first = mem.add_document(text=sections(20), title="glossary", format="markdown")
        assert first.document.chunks == 20  # at the limit: stored
        with pytest.raises(InvalidInput, match="21 chunks; the limit is 20"):
            mem.add_document(text=sections(21, "hoe"), title="glossary", format="markdown")
        (kept,) = mem.list_documents()  # the stored version, as it was
        assert (kept.version, kept.content_hash) == (1, first.document.content_hash)
        found = mem.search_documents(query="hoe", k=50)
        assert found and not [d for d in found if "hoe" in d.text]  # only the old chunks
    key = key_for(db, tenant="default")
    app = create_app(db, embedder=HashEmbedder(), worker=False, config=config)
    with TestClient(app) as client:
        body = {"text": sections(21, "spade"), "title": "other", "format": "markdown"}
        got = client.post("/v1/documents", json=body, headers={"Authorization": f"Bearer {key}"})
        assert got.status_code == 422 and "limit is 20" in got.json()["error"]["message"]
        listed = client.get("/v1/documents", headers={"Authorization": f"Bearer {key}"}).json()
        assert [d["title"] for d in listed["documents"]] == ["glossary"]
