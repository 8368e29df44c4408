"""The life domains' sentence vectors are embedded once per machine for MiniLM and
read by later processes from the model cache folder (`remem.recall.applies`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from remem.embed import HashEmbedder
from remem.embed.minilm.embedder import NAME as MINILM
from remem.recall import applies


class Counted:
    """Hashed vectors under MiniLM's name, counting the texts it was asked to embed."""

    def __init__(self, name: str = MINILM) -> None:
        self._inner = HashEmbedder(384)
        self._name = name
        self.texts = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self._inner.embed(texts)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("REMEM_MODEL_CACHE", str(tmp_path / "models"))
    applies._CACHE.clear()  # as in a fresh process
    yield tmp_path / "models"
    applies._CACHE.clear()


def fresh_process_vectors(embedder: Counted) -> applies._DomainVectors:
    applies._CACHE.clear()
    return applies.domain_vectors(embedder)


def test_a_later_process_reads_the_domains_instead_of_embedding_them(cache: Path) -> None:
    first = Counted()
    made = fresh_process_vectors(first)
    assert first.texts == len(made.owner) > 0
    assert len(list(cache.glob("domains-*.npy"))) == 1
    later = Counted()
    read = fresh_process_vectors(later)
    assert later.texts == 0
    np.testing.assert_array_equal(read.sentences, made.sentences)
    np.testing.assert_array_equal(read.centres, made.centres)


def test_a_damaged_file_is_embedded_again_and_replaced(cache: Path) -> None:
    made = fresh_process_vectors(Counted())
    (path,) = cache.glob("domains-*.npy")
    path.write_bytes(b"not a matrix")
    again = Counted()
    read = fresh_process_vectors(again)
    assert again.texts == len(made.owner)
    np.testing.assert_array_equal(read.sentences, made.sentences)
    assert fresh_process_vectors(Counted()).sentences.shape == made.sentences.shape
    third = Counted()
    fresh_process_vectors(third)
    assert third.texts == 0  # the replaced file reads


def test_another_model_is_embedded_in_each_process_and_never_written(cache: Path) -> None:
    other = Counted(name="someone-elses-model")
    fresh_process_vectors(other)
    again = Counted(name="someone-elses-model")
    fresh_process_vectors(again)
    assert again.texts > 0
    assert not cache.exists() or not list(cache.glob("domains-*"))


def test_an_unwritable_cache_still_gives_the_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("REMEM_MODEL_CACHE", str(blocked / "models"))
    embedder = Counted()
    made = fresh_process_vectors(embedder)
    assert embedder.texts == len(made.owner)
    applies._CACHE.clear()
