"""A sentence-transformers folder given by path, run without torch (issue 36 item 2): a
tiny BERT the test writes itself (random weights, via safetensors' numpy API) gives the
vectors sentence-transformers gives for the same folder; where the real MiniLM is
installed, a folder of its weights gives the built-in embedder's vectors; what remem
cannot run is refused with what was found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from remem import Memory
from remem.embed.choose import resolve_embedder
from remem.embed.folder import FolderEmbedder
from remem.errors import InvalidInput
from tests.support.bert import HIDDEN, tiny_bert
from tests.support.embed import TEXTS, minilm_or_skip

SENTENCES = ["I love pizza", "The dog likes hiking in the Alps!", "Green tea, in the morning.",
             "cats", "", "Paris is cold " * 20]  # fmt: skip


def reference(folder: Path, texts: list[str]) -> np.ndarray:
    """The same folder's vectors from sentence-transformers (torch), unit length."""
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(folder), device="cpu")
    out = np.asarray(model.encode(texts, batch_size=4), dtype=np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_a_tiny_bert_folder_gives_sentence_transformers_vectors(
    tmp_path: Path, pooling: str
) -> None:
    pytest.importorskip("safetensors")
    folder = tiny_bert(tmp_path / "tiny-bert", pooling=pooling)
    emb = FolderEmbedder(folder)
    assert (emb.name, emb.dim, emb.runtime) == ("folder:tiny-bert", HIDDEN, "numpy")
    ours = emb.embed(SENTENCES)
    theirs = reference(folder, SENTENCES)
    assert ours.shape == (len(SENTENCES), HIDDEN)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert np.abs(ours - theirs).max() < 1e-4, np.abs(ours - theirs).max()


def test_a_folder_is_a_memory_s_embedder_by_path(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    folder = tiny_bert(tmp_path / "tiny-bert")
    with Memory.open(tmp_path / "m.db", embedder=str(folder)) as mem:
        mem.remember(actor="ana", text="I love pizza")
        packet = mem.recall(actor="ana", query="pizza", explain=True)
        assert packet.explain is not None and packet.explain["vector"]
        held = mem.store.records.vector_models("default")
        assert [(h.model, h.dim) for h in held] == [("folder:tiny-bert", HIDDEN)]
    config = tmp_path / "remem.toml"
    config.write_text(f'[embed]\npath = "{folder}"\n')
    with Memory.open(tmp_path / "m.db", config=config) as mem:
        assert isinstance(mem.embedder, FolderEmbedder)  # and its fingerprint is noted
        (held,) = mem.store.records.vector_models("default")
        assert held.fingerprint == FolderEmbedder(folder).fingerprint


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda f: _config(f, model_type="mpnet"), "of type 'mpnet', not 'bert'"),
        (lambda f: _config(f, hidden_act="gelu_new"), "not the exact GELU"),
        (lambda f: _config(f, position_embedding_type="relative_key"), "not absolute"),
        (lambda f: (f / "model.safetensors").unlink(), "no model.safetensors or model.onnx"),
        (lambda f: (f / "vocab.txt").unlink(), "no vocab.txt"),
        (lambda f: _modules(f, "sentence_transformers.models.Dense"), "Dense module"),
        (lambda f: (f / "config.json").unlink(), "has no config.json"),
    ],
)
def test_what_remem_cannot_run_is_refused_with_what_was_found(
    tmp_path: Path, change: object, said: str
) -> None:
    pytest.importorskip("safetensors")
    folder = tiny_bert(tmp_path / "m")
    change(folder)  # type: ignore[operator]
    with pytest.raises(InvalidInput, match=said.replace("(", r"\(").replace(")", r"\)")):
        FolderEmbedder(folder)


def test_a_name_that_is_no_embedder_says_what_is_taken(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="an http\\(s\\) URL of an embeddings server"):
        resolve_embedder(str(tmp_path / "missing"))


@pytest.mark.model
def test_a_folder_of_minilm_s_weights_gives_the_built_in_vectors(tmp_path: Path) -> None:
    built_in = minilm_or_skip()
    folder = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(built_in.path, folder)
    ours = FolderEmbedder(folder).embed(TEXTS)
    theirs = built_in.embed(TEXTS)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() > 0.99999, cosines.min()
    assert np.abs(ours - theirs).max() < 1e-4


def _config(folder: Path, **changes: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def _modules(folder: Path, kind: str) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": kind})
    (folder / "modules.json").write_text(json.dumps(modules))
