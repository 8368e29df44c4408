"""A sentence-transformers model saved in a folder, run without torch: your own weights.

The folder is what `SentenceTransformer.save(path)` writes for a BERT-architecture
model (all-MiniLM-L6-v2, BGE, E5, GTE and other BERT fine-tunes):

- `config.json`: `model_type` "bert", absolute positions, the exact GELU; its
  `num_hidden_layers`, `num_attention_heads`, `hidden_size`, `layer_norm_eps`,
  `max_position_embeddings` and `pad_token_id` shape the encoder;
- the weights: `model.safetensors` (run by numpy, `remem.embed.minilm.numpy_encoder`),
  or `model.onnx` / `onnx/model.onnx` (ONNX Runtime, inputs `input_ids`,
  `attention_mask` and `token_type_ids`, first output the token states);
- the tokenizer: `tokenizer.json` when the `tokenizers` package is installed, else
  `vocab.txt` with remem's WordPiece (`remem.embed.minilm.wordpiece`, uncased only:
  `do_lower_case` false in `tokenizer_config.json` needs `tokenizers`);
- `modules.json`: Transformer, Pooling and optionally Normalize (a Dense or other module
  is refused); `1_Pooling/config.json`: mean, CLS or max pooling; `sentence_bert_config.json`:
  `max_seq_length` (default the positions the model has, at most 512).

Anything else (an MPNet, RoBERTa or XLM-R model, say) is refused when the embedder is
made, with what was found: serve such a model from an embeddings server instead
(`remem.embed.server`). Vectors are stored under `folder:<folder name>`; the
`fingerprint` is a digest of config.json, the weights' size and their first and
last MiB, so other weights under the same folder name are noticed
(`remem.memory.embedder`) without reading the whole file.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.batching import CallBatcher
from remem.embed.vectors import Vectors
from remem.errors import InvalidInput

F32 = npt.NDArray[np.float32]
POOLINGS = ("mean", "cls", "max")
MAX_TOKENS = 512
_MODULES_KNOWN = ("Transformer", "Pooling", "Normalize")
_BATCH = 32


def _json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path} does not read as JSON: {exc}") from None
    if not isinstance(found, dict):
        raise InvalidInput(f"{path} is not a JSON object")
    return found


class FolderEmbedder:
    """The Embedder of a sentence-transformers folder; see the module docstring.
    Construction reads the folder's small files and refuses what it cannot run; the
    weights load on the first `embed`. Thread-safe."""

    def __init__(self, path: str | Path, *, batch_size: int = _BATCH) -> None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise InvalidInput(f"{folder} is not a folder holding a sentence-transformers model")
        config_file = folder / "config.json"
        if not config_file.is_file():
            raise InvalidInput(
                f"{folder} has no config.json: is it a sentence-transformers folder?"
            )
        config = _json(config_file)
        _refuse_architecture(folder, config)
        self._path = folder
        self._config = config
        self._layers = int(config["num_hidden_layers"])
        self._heads = int(config["num_attention_heads"])
        self._dim = int(config["hidden_size"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._pad = int(config.get("pad_token_id", 0) or 0)
        self._pooling, self._normalise = _modules(folder)
        positions = int(config.get("max_position_embeddings", MAX_TOKENS))
        self._max_tokens = min(positions, MAX_TOKENS, _max_seq_length(folder, positions))
        self._weights = _weights_file(folder)
        self._tokenizer_kind = _tokenizer_kind(folder)
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, not {batch_size}")
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None  # (tokenizer, encoder)
        self._batcher = CallBatcher(self._forward_all)

    @property
    def name(self) -> str:
        """`folder:<the folder's name>`, stored beside every vector it made."""
        return f"folder:{self._path.resolve().name}"

    @property
    def dim(self) -> int:
        """The model's hidden size."""
        return self._dim

    @property
    def path(self) -> Path:
        """The model's folder."""
        return self._path

    @property
    def runtime(self) -> str:
        """numpy (model.safetensors) or onnxruntime (model.onnx)."""
        return "onnxruntime" if self._weights.suffix == ".onnx" else "numpy"

    @property
    def fingerprint(self) -> str:
        """A digest of config.json, the weights' size and their first and last MiB."""
        digest = hashlib.sha256((self._path / "config.json").read_bytes())
        size = self._weights.stat().st_size
        digest.update(str(size).encode())
        with open(self._weights, "rb") as f:
            digest.update(f.read(1 << 20))
            f.seek(max(size - (1 << 20), 0))
            digest.update(f.read(1 << 20))
        return digest.hexdigest()[:16]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of `texts`, shape (len(texts), dim): pooled as 1_Pooling says and of
        unit length when modules.json normalises (rows of unit length either way, as
        every remem embedder returns: a model without Normalize is normalised here too,
        which leaves its cosines as they were)."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        tokenizer, _ = self._load()
        ids = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(list(texts))]
        return self._batcher(ids)  # small calls of several threads in one batch

    def _forward_all(self, ids: list[npt.NDArray[np.int64]]) -> F32:
        """Rows of `ids` in batches of similar length, in the input's order."""
        _, encoder = self._load()
        out = np.zeros((len(ids), self._dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._forward(encoder, [ids[i] for i in batch])
        return out

    def _forward(self, encoder: Any, rows: list[npt.NDArray[np.int64]]) -> F32:
        width = max(len(r) for r in rows)
        token_ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.float32)
        for i, row in enumerate(rows):
            token_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        hidden = encoder.encode(token_ids, mask)
        if self._pooling == "cls":
            pooled = hidden[:, 0, :]
        elif self._pooling == "max":
            pooled = np.where(mask[:, :, None] > 0, hidden, np.float32(-1e9)).max(axis=1)
        else:
            summed = (mask[:, None, :] @ hidden)[:, 0, :]
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: F32 = (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
        return result

    def _load(self) -> tuple[Any, Any]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = (self._load_tokenizer(), self._load_encoder())
            return self._loaded

    def _load_tokenizer(self) -> Any:
        if self._tokenizer_kind == "tokenizers":
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self._path / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self._max_tokens)
            tokenizer.no_padding()
            return tokenizer
        from remem.embed.minilm.wordpiece import WordPiece

        return WordPiece(self._path / "vocab.txt", self._max_tokens)

    def _load_encoder(self) -> Any:
        if self._weights.suffix == ".onnx":
            return _OnnxFolder(self._weights)
        from remem.embed.minilm.numpy_encoder import NumpyEncoder, load_weights

        weights = load_weights(
            self._path, self._max_tokens, layers=self._layers, heads=self._heads, eps=self._eps
        )
        return NumpyEncoder(weights)


class _OnnxFolder:
    """A folder's model.onnx on ONNX Runtime, one thread, its first output the states."""

    def __init__(self, model: Path) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise InvalidInput(f"{model} needs onnxruntime: pip install 'remem[embed]'") from None
        from remem.embed.minilm.packaged_session import session_options

        self._session = ort.InferenceSession(
            str(model), session_options(optimized=False, save_to=None),
            providers=["CPUExecutionProvider"],
        )  # fmt: skip
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._output = self._session.get_outputs()[0].name

    def encode(self, token_ids: npt.NDArray[np.int64], mask: F32) -> F32:
        feed = {"input_ids": token_ids, "attention_mask": mask.astype(np.int64),
                "token_type_ids": np.zeros_like(token_ids)}  # fmt: skip
        (hidden,) = self._session.run(
            [self._output], {k: v for k, v in feed.items() if k in self._inputs}
        )
        return np.asarray(hidden, dtype=np.float32)


def _refuse_architecture(folder: Path, config: dict[str, Any]) -> None:
    """InvalidInput naming what this folder's model is, unless remem can run it."""
    kind = config.get("model_type")
    how = (
        "remem runs BERT-architecture folders itself; serve this model from an "
        "OpenAI-compatible embeddings server (Text Embeddings Inference, Ollama, vLLM) "
        "and point [embed] base_url at it"
    )
    if kind != "bert":
        raise InvalidInput(f"{folder}: the model is of type {kind!r}, not 'bert': {how}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        kind = config.get("position_embedding_type")
        raise InvalidInput(f"{folder}: positions of type {kind!r}, not absolute: {how}")
    if config.get("hidden_act", "gelu") != "gelu":
        raise InvalidInput(f"{folder}: the activation {config.get('hidden_act')!r} is not "
                           f"the exact GELU: {how}")  # fmt: skip
    for key in ("num_hidden_layers", "num_attention_heads", "hidden_size"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"{folder}/config.json: {key} must be a positive integer")


def _modules(folder: Path) -> tuple[str, bool]:
    """The pooling (`POOLINGS`) and whether the vectors are normalised."""
    normalise = False
    listed = folder / "modules.json"
    if listed.is_file():
        try:
            modules = json.loads(listed.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"{listed} does not read as JSON: {exc}") from None
        for module in modules if isinstance(modules, list) else []:
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            if kind not in _MODULES_KNOWN:
                raise InvalidInput(
                    f"{listed} names a {kind or 'nameless'} module; remem runs Transformer, "
                    "Pooling and Normalize only"
                )
            normalise = normalise or kind == "Normalize"
    pooling = "mean"
    pool_file = folder / "1_Pooling" / "config.json"
    if pool_file.is_file():
        pool = _json(pool_file)
        modes = [m for m in POOLINGS if pool.get(f"pooling_mode_{m}_token" if m == "cls"
                                                 else f"pooling_mode_{m}_tokens")]  # fmt: skip
        others = [k for k, v in pool.items() if k.startswith("pooling_mode") and v
                  and k not in ("pooling_mode_mean_tokens", "pooling_mode_cls_token",
                                "pooling_mode_max_tokens")]  # fmt: skip
        if len(modes) != 1 or others:
            raise InvalidInput(
                f"{pool_file}: remem pools by exactly one of mean, cls or max tokens"
            )
        pooling = modes[0]
    return pooling, normalise


def _max_seq_length(folder: Path, default: int) -> int:
    found = folder / "sentence_bert_config.json"
    if not found.is_file():
        return default
    value = _json(found).get("max_seq_length", default)
    return int(value) if isinstance(value, int) and value > 2 else default


def _weights_file(folder: Path) -> Path:
    for name in ("model.safetensors", "model.onnx", "onnx/model.onnx"):
        if (folder / name).is_file():
            return folder / name
    raise InvalidInput(
        f"{folder} holds no model.safetensors or model.onnx (pytorch_model.bin is not read: "
        "save the model with safe_serialization=True)"
    )


def _tokenizer_kind(folder: Path) -> str:
    """`tokenizers` (tokenizer.json, when the package is installed) or `wordpiece`."""
    if (folder / "tokenizer.json").is_file():
        try:
            import tokenizers  # noqa: F401
        except ImportError:
            pass
        else:
            return "tokenizers"
    if not (folder / "vocab.txt").is_file():
        raise InvalidInput(
            f"{folder} has no vocab.txt (and no tokenizer.json with the tokenizers package "
            "installed): remem cannot tokenise for it"
        )
    settings = folder / "tokenizer_config.json"
    if settings.is_file() and _json(settings).get("do_lower_case", True) is False:
        raise InvalidInput(
            f"{folder} is a cased model: its tokenizer.json needs the tokenizers package "
            "(pip install tokenizers)"
        )
    return "wordpiece"
