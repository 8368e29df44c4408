"""all-MiniLM-L6-v2's encoder in numpy: its weights as arrays and the forward pass.

`load_weights` reads model.safetensors into `Weights` (the layout both
runtimes use: matrices as (in, out), the query pre-scaled and fused with the
key and value); `NumpyEncoder` runs the BERT encoder on them (for MiniLM 6 layers,
12 heads, hidden size 384; exact erf GELU, token type 0). It is the runtime when
ONNX Runtime is absent or fails, and the reference the ONNX graph is held to.
Another BERT's shape (layers, heads, hidden size, layer-norm epsilon) is given to
`load_weights` by `remem.embed.folder`, from its config.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from remem.blas import one_blas_thread
from remem.errors import InvalidInput

F32 = npt.NDArray[np.float32]

DIM = 384
HEADS = 12
LAYERS = 6
_LN_EPS = np.float32(1e-12)

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


# 32k float32 values: three scratch arrays of 128 kB fit in a 1 MB L2 cache.
_GELU_CHUNK = 32_768


@dataclass(frozen=True)
class Layer:
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
class Weights:
    """The encoder's float32 weights, as numpy runs them and the ONNX graph holds them."""

    word: F32  # (vocab, DIM)
    position: F32  # (max positions, DIM), token type 0 embedding already added
    ln_g: F32
    ln_b: F32
    layers: tuple[Layer, ...]
    heads: int = HEADS
    eps: float = 1e-12  # the layer norms' epsilon


class NumpyEncoder:
    """The encoder in numpy: `_encode`, with one BLAS thread for small batches."""

    runtime = "numpy"

    def __init__(self, model: Weights) -> None:
        self._model = model

    def encode(self, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
        """Hidden states for a padded batch; see `_encode`."""
        if token_ids.size <= _SMALL_WORK:
            with one_blas_thread():
                return _encode(self._model, token_ids, mask)
        return _encode(self._model, token_ids, mask)


def load_weights(
    path: Path, max_tokens: int, *, layers: int = LAYERS, heads: int = HEADS, eps: float = 1e-12
) -> Weights:
    """The float32 weights from model.safetensors, laid out as `_encode` uses them: a
    BERT of `layers` layers and `heads` heads (all-MiniLM-L6-v2's by default); the hidden
    size is the word embeddings' width."""
    from safetensors.numpy import load_file

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

    dim = int(get("embeddings.word_embeddings.weight").shape[1])
    if dim % heads:
        raise InvalidInput(f"{path}: a hidden size of {dim} does not split into {heads} heads")
    scale = np.float32(1.0 / math.sqrt(dim // heads))
    stack = []
    for n in range(layers):
        p = f"encoder.layer.{n}."
        a = p + "attention."
        stack.append(
            Layer(
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
    return Weights(
        word=get("embeddings.word_embeddings.weight"),
        position=np.ascontiguousarray(position[:max_tokens] + token_type[0]),
        ln_g=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(stack),
        heads=heads,
        eps=eps,
    )


def _strip_prefix(key: str) -> str:
    for prefix in _KEY_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _encode(model: Weights, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
    """The BERT encoder: (batch, length) ids to (batch, length, DIM) hidden states."""
    batch, length = token_ids.shape
    dim, heads = model.word.shape[1], model.heads
    head = dim // heads
    eps = np.float32(model.eps)
    x = model.word[token_ids] + model.position[:length]
    x = _layer_norm(x.reshape(batch * length, dim), model.ln_g, model.ln_b, eps)
    # Padding keys get a large negative score, so softmax gives them no weight.
    bias = ((mask - np.float32(1.0)) * np.float32(1e30))[:, None, None, :]
    for layer in model.layers:
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        # (batch*length, 3*DIM) -> three (batch, heads, length, head) arrays.
        q, k, v = qkv.reshape(batch, length, 3, heads, head).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, dim)
        attended = context @ layer.out_w
        attended += layer.out_b
        attended += x
        x = _layer_norm(attended, layer.ln1_g, layer.ln1_b, eps)
        inner = x @ layer.ff1_w
        inner += layer.ff1_b
        inner = _gelu(inner)
        out = inner @ layer.ff2_w
        out += layer.ff2_b
        out += x
        x = _layer_norm(out, layer.ln2_g, layer.ln2_b, eps)
    return x.reshape(batch, length, dim)


def _layer_norm(x: F32, gain: F32, bias: F32, eps: np.float32 = _LN_EPS) -> F32:
    """LayerNorm over the last axis with `eps` (BERT's 1e-12), in place on `x`."""
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    variance += eps
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
