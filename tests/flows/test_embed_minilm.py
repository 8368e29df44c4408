"""MiniLMEmbedder: numpy all-MiniLM-L6-v2 against sentence-transformers, and its contract.

Tests marked `model` need the real weights (the `embed` extra) and skip cleanly
without them; the rest check model discovery and errors with no weights at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from remem.embed.base import Embedder, Vectors
from remem.embed.minilm.embedder import ENV_MODEL_DIR, MiniLMEmbedder, model_dir, plan_batches
from remem.errors import InvalidInput
from tests.support.embed import LONG, TEXTS, minilm_or_skip, row_cosines


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    """One embedder for the module: the weights are loaded once."""
    return minilm_or_skip()


@pytest.fixture(scope="module")
def reference(embedder: MiniLMEmbedder) -> Iterator[Vectors]:
    """sentence-transformers' own embeddings of TEXTS, from the same model directory."""
    with pytest.MonkeyPatch.context() as mp:
        # Never reach for the Hugging Face hub: everything is in the model directory.
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        st = pytest.importorskip("sentence_transformers")
        model = st.SentenceTransformer(str(embedder.path), device="cpu")
        vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
        yield np.asarray(vectors, dtype=np.float32)


@pytest.mark.model
def test_matches_sentence_transformers(embedder: MiniLMEmbedder, reference: Vectors) -> None:
    ours = embedder.embed(TEXTS)
    cosines = row_cosines(ours, reference)
    assert cosines.min() >= 0.9999, dict(zip(TEXTS, cosines.tolist(), strict=True))
    np.testing.assert_allclose(ours, reference, atol=1e-5)


@pytest.mark.model
def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    # Past 256 tokens nothing more is read, so adding text changes nothing.
    longer = embedder.embed([LONG, LONG + " And one more sentence at the very end."])
    assert row_cosines(longer[:1], longer[1:])[0] >= 0.99999


@pytest.mark.model
def test_related_sentences_are_closer(embedder: MiniLMEmbedder) -> None:
    query, near, far = embedder.embed(
        ["I love pizza", "pizza is my favourite food", "the tax deadline is in April"]
    )
    assert float(query @ near) > float(query @ far) + 0.2


@pytest.mark.model
def test_shape_dtype_and_unit_norms(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.dim == 384
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    empty = embedder.embed([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


@pytest.mark.model
def test_batch_composition_does_not_matter(embedder: MiniLMEmbedder) -> None:
    alone = embedder.embed(["I love pizza"])
    padded = embedder.embed([LONG, "I love pizza"])[1:]
    assert row_cosines(alone, padded)[0] >= 0.9999


@pytest.mark.model
def test_small_batches_keep_the_input_order(embedder: MiniLMEmbedder) -> None:
    # Batches of 3 sorted by length cut TEXTS in a different order from the input's.
    small = MiniLMEmbedder(embedder.path, batch_size=3).embed(TEXTS)
    one_by_one = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert row_cosines(small, one_by_one).min() >= 0.9999


@pytest.mark.model
def test_concurrent_first_calls_load_once_and_agree(embedder: MiniLMEmbedder) -> None:
    fresh = MiniLMEmbedder(embedder.path)
    results: list[Vectors] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(fresh.embed(["I love pizza", "the tax deadline is in April"]))
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expected = embedder.embed(["I love pizza", "the tax deadline is in April"])
    for result in results:
        assert row_cosines(result, expected).min() >= 0.9999


def test_a_repeated_query_comes_from_the_cache_unchanged(embedder: MiniLMEmbedder) -> None:
    text = "which seat should I book for the Lisbon flight"
    batched = embedder.embed([text, "another text beside it"])[0]
    hits = embedder.query_cache_hits
    first = embedder.embed([text])
    first[0, :] = 0.0  # the caller's copy: the cache keeps its own
    again = embedder.embed([text])
    assert embedder.query_cache_hits == hits + 1
    np.testing.assert_allclose(again[0], batched, atol=1e-5)
    np.testing.assert_allclose(embedder.embed([text + "?"])[0], again[0], atol=0.2)
    assert embedder.query_cache_hits == hits + 1  # another text is embedded afresh


def test_model_dir_honours_the_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_MODEL_DIR, str(tmp_path))
    assert model_dir() is None  # no model.safetensors there
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert model_dir() == tmp_path


def test_missing_model_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"model\.safetensors is missing"):
        MiniLMEmbedder(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(InvalidInput, match=r"tokenizer\.json is missing"):
        MiniLMEmbedder(tmp_path)


def test_batches_group_similar_lengths() -> None:
    # A long text is not padded together with short ones; the order is by length.
    assert plan_batches([2, 5, 10, 256, 12, 3], batch_size=64) == [[0, 5, 1, 2, 4], [3]]
    assert plan_batches([7] * 5, batch_size=2) == [[0, 1], [2, 3], [4]]
    assert [len(b) for b in plan_batches([256] * 40, batch_size=64)] == [16, 16, 8]
    assert plan_batches([], batch_size=64) == []
