"""Re-embedding a tenant's vectors with the embedder now configured (issue 36): the step
behind `Memory.reindex` and `remem reindex`.

Changing the embedder leaves the store's vectors made by the old one; a query vector of
the new model must never be compared with them, and recall must not silently lose
its vector half. The reindex re-embeds, with the new embedder, every vector of
another model: records', events' and document chunks', from the text stored beside
them (the text that was embedded), `batch` texts at a time
(`DEFAULT_BATCH`, at most `MAX_BATCH`), each batch stored in its own transaction beside
the old vectors (`remem.store.flows.reindex`). When none is left, one transaction makes
the new vectors the index and removes the old ones. Then:

- **Resumable.** What a batch stored stays; a run killed at any point (SIGKILL
  included) loses at most the batch it was embedding, and the next run embeds only
  what has no new vector yet. A second run over a finished store does nothing.
- **Meanwhile.** The old vectors stay the index until the switch: a memory opened with
  the old embedder recalls as before; one opened with the new embedder is allowed
  (no `EmbedderChanged`) and recalls by words alone, saying so in the packet's notes
  (`remem.memory.embedder`). Both write vectors of their own model; those of the old
  one are re-embedded before the switch, which waits until none is left
  (`SWITCH_TRIES` rounds, then it says which process to stop).
- **One at a time.** A tenant has at most one reindex pending: a reindex to a third
  model while one is pending is refused with what to do (finish it, or `cancel`).
- **Dry run.** `dry_run` reads the counts and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from remem.embed.base import Embedder
from remem.errors import ConflictError, EmbedderChanged, InvalidInput, StoreError
from remem.memory.deps import Deps
from remem.memory.embedder import fingerprint_of, pending_refusal
from remem.store.flows.reindex import KINDS
from remem.store.roles import ReindexCount, VectorModel

DEFAULT_BATCH = 64  # texts embedded and stored per batch
MAX_BATCH = 4096
SWITCH_TRIES = 5  # rounds of catching up with old-model writers before giving up


@dataclass(frozen=True, slots=True)
class ReindexProgress:
    """Where a running reindex is, after each stored batch."""

    kind: str  # "records", "events" or "chunks"
    embedded: int  # of this kind, in this run
    total: int  # of this kind left to embed when this run reached it
    batches: int  # in this run, every kind


@dataclass(frozen=True)
class ReindexReport:
    """What a reindex found, did (or, dry, would do), and whether the switch happened."""

    tenant: str
    model: str
    dim: int
    old_models: tuple[VectorModel, ...]
    counts: tuple[ReindexCount, ...]  # at the start
    dry_run: bool
    resumed: bool  # a pending reindex to the model was found and continued
    embedded: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    switched: bool = False
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    filled: int = 0  # written without vectors, given them after (`Memory.reindex`)

    @property
    def todo(self) -> int:
        """Vectors of another model left without a new one at the start."""
        return sum(c.todo for c in self.counts)

    @property
    def nothing_to_do(self) -> bool:
        """Every vector was the model's already: no reindex pending, none to re-embed."""
        return not self.todo and not self.done and not self.resumed

    @property
    def done(self) -> int:
        """New vectors stored by earlier runs, waiting for the switch, at the start."""
        return sum(c.done for c in self.counts)

    def message(self) -> str:
        """The report in one paragraph, for people."""
        old = ", ".join(f"{m.model} ({m.dim})" for m in self.old_models) or "no other model"
        head = f"{old} -> {self.model} ({self.dim})"
        kinds = ", ".join(f"{c.todo} {c.kind}" for c in self.counts)
        filled = (
            f"; {self.filled} written without vectors were given {self.model}'s"
            if self.filled
            else ""
        )
        if self.nothing_to_do:
            return f"{head}: nothing to re-embed; every vector is {self.model}'s" + filled
        if self.dry_run:
            kept = f"; {self.done} already re-embedded by an earlier run" if self.done else ""
            return f"{head}: would re-embed {kinds}{kept}, then switch; nothing was changed"
        n = sum(self.embedded.values())
        rate = f" ({n / self.seconds:.0f}/s)" if self.seconds > 0 and n else ""
        did = f"{head}: re-embedded {n} in {self.batches} batch(es), {self.seconds:.1f} s{rate}"
        if self.switched:
            return did + f"; {self.model} is now the index and the old vectors are gone" + filled
        return did + "; not finished: run `remem reindex` again to continue"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "tenant": self.tenant,
            "model": self.model,
            "dim": self.dim,
            "old_models": [{"model": m.model, "dim": m.dim} for m in self.old_models],
            "counts": {
                c.kind: {"todo": c.todo, "done": c.done, "current": c.current} for c in self.counts
            },
            "dry_run": self.dry_run,
            "resumed": self.resumed,
            "embedded": dict(self.embedded),
            "batches": self.batches,
            "switched": self.switched,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "filled": self.filled,
            "message": self.message(),
        }


def reindex(
    deps: Deps,
    embedder: Embedder | None,
    *,
    batch: int = DEFAULT_BATCH,
    dry_run: bool = False,
    max_batches: int | None = None,
    progress: Callable[[ReindexProgress], None] | None = None,
) -> ReindexReport:
    """Re-embed the tenant's vectors of other models with `embedder`; see the module
    docstring. `max_batches` stops after that many batches (the rest is left pending)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise InvalidInput(f"batch must be an integer from 1 to {MAX_BATCH}; got {batch!r}")
    if max_batches is not None and (
        isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1
    ):
        raise InvalidInput(f"max_batches must be a positive integer; got {max_batches!r}")
    if embedder is None:
        raise InvalidInput(
            "reindex needs an embedder to re-embed with, and none is configured or installed: "
            "pip install 'remem[embed]', or open the memory with embedder=..."
        )
    store, tenant = deps.store, deps.tenant
    index = store.reindexing
    name, dim = embedder.name, embedder.dim
    fingerprint = fingerprint_of(embedder)
    pending = index.pending(tenant)
    problem = pending_refusal(pending, name, dim, fingerprint)
    if problem is not None:
        raise EmbedderChanged(f"tenant {tenant!r}: {problem}")
    held = store.records.vector_models(tenant)
    own = next((h for h in held if h.model == name), None)
    if own is not None and own.dim != dim:
        raise EmbedderChanged(
            f"tenant {tenant!r}: this store's {name} vectors have {own.dim} dimensions and "
            f"the embedder in use, also named {name}, makes {dim}: give it a name of its own"
        )
    counts = tuple(index.counts(tenant, name))
    report = ReindexReport(
        tenant, name, dim, tuple(h for h in held if h.model != name), counts, dry_run,
        resumed=pending is not None,
    )  # fmt: skip
    if dry_run or (pending is None and not report.todo and not report.old_models):
        return report  # (old models with no vectors left are dropped by a switch)
    started, cpu = time.perf_counter(), time.process_time()
    if pending is None:
        begun = index.begin(tenant, name, dim, fingerprint, deps.clock())
        problem = pending_refusal(begun, name, dim, fingerprint)  # another process's, first
        if problem is not None:
            raise EmbedderChanged(f"tenant {tenant!r}: {problem}")
    run = _Run(deps, embedder, batch, max_batches, progress)
    switched = False
    for _ in range(SWITCH_TRIES):
        if not run.embed_all():
            break  # max_batches reached: the rest stays pending
        if index.switch(tenant, name, dim, fingerprint):
            switched = True
            break
    else:
        raise ConflictError(
            f"tenant {tenant!r}: vectors of another model than {name} kept arriving while "
            "the reindex tried to finish: a process still writes with the old embedder. "
            "Stop it (or restart it with the new one), then run `remem reindex` again"
        )
    return ReindexReport(
        tenant, name, dim, report.old_models, counts, dry_run=False, resumed=report.resumed,
        embedded=run.embedded, batches=run.batches, switched=switched,
        seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu,
    )  # fmt: skip


class _Run:
    """The batches of one reindex run, every kind in turn, with their progress."""

    def __init__(
        self, deps: Deps, embedder: Embedder, batch: int, max_batches: int | None,
        progress: Callable[[ReindexProgress], None] | None,
    ) -> None:  # fmt: skip
        self.deps, self.embedder, self.batch = deps, embedder, batch
        self.max_batches, self.progress = max_batches, progress
        self.embedded = {kind: 0 for kind in KINDS}
        self.batches = 0

    def embed_all(self) -> bool:
        """Embed and store what is left of every kind; False when `max_batches` stopped it."""
        index, tenant, name = self.deps.store.reindexing, self.deps.tenant, self.embedder.name
        left = {c.kind: c.todo for c in index.counts(tenant, name)}
        for kind in KINDS:
            after: Any = None
            done = 0
            retried = False
            while True:
                items = index.todo(tenant, name, kind, after, self.batch)
                if not items:
                    break
                if self.max_batches is not None and self.batches >= self.max_batches:
                    return False
                vectors = self._embed([text for _, text in items])
                keys = [key for key, _ in items]
                try:
                    index.add(tenant, name, kind, list(zip(keys, vectors, strict=True)),
                              self.deps.clock())  # fmt: skip
                except StoreError:
                    # PostgreSQL: an erasure that committed while this batch was stored
                    # took a row it refers to; read the batch again, once
                    if retried:
                        raise
                    retried = True
                    continue
                retried = False
                after = keys[-1]
                done += len(items)
                self.embedded[kind] += len(items)
                self.batches += 1
                if self.progress is not None:
                    total = max(left[kind], done)
                    self.progress(ReindexProgress(kind, done, total, self.batches))
        return True

    def _embed(self, texts: Sequence[str]) -> list[np.ndarray[Any, np.dtype[np.float32]]]:
        made = np.asarray(self.embedder.embed(texts), np.float32)
        if made.shape != (len(texts), self.embedder.dim) or not np.isfinite(made).all():
            raise InvalidInput(
                f"the embedder {self.embedder.name} returned vectors of shape {made.shape} "
                f"for {len(texts)} texts (expected {self.embedder.dim} finite numbers each); "
                "nothing of this batch was stored"
            )
        return list(made)
