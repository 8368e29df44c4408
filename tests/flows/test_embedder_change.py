"""A store notes the models of its vectors; a memory refuses an embedder that would mix
them or find none of them (issue 36), on both backends."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.vectors import Vectors
from remem.errors import EmbedderChanged
from remem.store.roles import VectorModel
from tests.support.schema import rewind_sqlite


class Renamed:
    """HashEmbedder's vectors under another name, dimension or fingerprint."""

    def __init__(self, name: str, dim: int = 64, fingerprint: str | None = None) -> None:
        self._inner = HashEmbedder(dim)
        self.name = name
        self.dim = dim
        self.fingerprint = fingerprint

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._inner.embed(texts)


def _fill(db: str, embedder: object) -> None:
    with Memory.open(db, embedder=embedder) as mem:
        mem.remember(actor="alice", text="Alice is allergic to peanuts")
        mem.add_event(actor="alice", session="s1", role="user", text="I moved to Lisbon")
        mem.process()
        mem.add_document(text="The office opens at nine.", title="hours")


def test_every_kind_of_vector_notes_its_model(db: str) -> None:
    _fill(db, HashEmbedder(64))
    with Memory.open(db, embedder=None) as mem:
        assert mem.store.records.vector_models("default") == [VectorModel("hash-64", 64, None)]
        assert mem.store.records.vector_models("other") == []


def test_documents_alone_note_their_model(db: str) -> None:
    with Memory.open(db, embedder=HashEmbedder(32)) as mem:
        mem.add_document(text="The office opens at nine.", title="hours")
        assert mem.store.records.vector_models("default") == [VectorModel("hash-32", 32, None)]


def test_another_model_is_refused_and_the_same_one_recalls(db: str) -> None:
    _fill(db, HashEmbedder(64))
    with Memory.open(db, embedder=HashEmbedder(128)) as mem:
        with pytest.raises(EmbedderChanged, match=r"hash-64 \(64 dimensions\).*hash-128"):
            mem.recall(actor="alice", query="what is alice allergic to?")
        # extraction fails its job (kept, to retry) and embeds nothing; the event stays
        mem.add_event(actor="alice", session="s1", role="user", text="I adopted a cat")
        mem.process()
        assert mem.store.records.vector_models("default") == [VectorModel("hash-64", 64, None)]
        assert any("adopted" in e.text for e in mem.events(actor="alice"))
    with Memory.open(db, embedder=HashEmbedder(64)) as mem:
        packet = mem.recall(actor="alice", query="what is alice allergic to?")
        assert any("peanuts" in item.text for item in packet.records)
    with Memory.open(db, embedder=None) as mem:  # words alone mix nothing
        assert mem.recall(actor="alice", query="peanuts").records
    with Memory.open(db, tenant="other", embedder=HashEmbedder(128)) as mem:
        mem.recall(actor="bob", query="anything")  # another tenant's vectors are its own


def test_the_same_name_with_another_dimension_is_refused(db: str) -> None:
    _fill(db, Renamed("mine", 64))
    with Memory.open(db, embedder=Renamed("mine", 32)) as mem:
        with pytest.raises(EmbedderChanged, match="64 dimensions"):
            mem.recall(actor="alice", query="peanuts")


def test_a_fingerprint_is_noted_once_and_other_weights_are_refused(db: str) -> None:
    _fill(db, Renamed("mine", 64, fingerprint="aaaa"))
    with Memory.open(db, embedder=Renamed("mine", 64, "aaaa")) as mem:
        mem.recall(actor="alice", query="peanuts")
        assert mem.store.records.vector_models("default") == [VectorModel("mine", 64, "aaaa")]
    with Memory.open(db, embedder=Renamed("mine", 64, "bbbb")) as mem:
        with pytest.raises(EmbedderChanged, match="fingerprint aaaa"):
            mem.recall(actor="alice", query="peanuts")
    with Memory.open(db, embedder=Renamed("mine", 64)) as mem:
        assert np.isfinite(mem.embedder.embed(["x"])).all()


def test_a_store_from_before_schema_8_notes_the_vectors_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _fill(str(path), HashEmbedder(64))
    with sqlite3.connect(path) as con:  # as remem left it before vector_models existed
        con.execute("DROP TABLE vector_models")
        rewind_sqlite(con, 7)
    con.close()
    with Memory.open(path, embedder=HashEmbedder(128)) as mem:
        assert mem.store.records.vector_models("default") == [VectorModel("hash-64", 64, None)]
        with pytest.raises(EmbedderChanged):
            mem.recall(actor="alice", query="peanuts")
