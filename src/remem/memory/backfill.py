"""The vectors an outage left out, filled in later: the catch-up pass of embeddings.

When the embedder cannot embed (an embeddings server down, `remem.embed.server`), a
write goes on without vectors (`remem.embed.base.embed_or_none`): no event, record or
document chunk is lost, and words find them meanwhile. `fill_vectors` gives them their
vectors once the embedder answers again, in batches of `BATCH` oldest first (records
and events: `remem.store.flows.backfill`; then chunks: `DocumentIndex.unembedded`),
stopping at its item and time bounds or at the first failure (the embedder is then
down again and the rest waits).

It runs only for an embedder that may fail (`may_fail`: a server), where the job
catch-up runs: before a library recall (`Memory.recall` with `catch_up` on, at most
`RECALL_ITEMS` items and `RECALL_SECONDS`, while this memory has reason to think
something waits: the first recall, or a write since that went without vectors);
after a worker's claim of jobs, for their tenants (`remem.pipeline.worker`, at most
`WORKER_ITEMS` each: the service's recalls only read); and after `Memory.process()`
(at most `PROCESS_ITEMS`). Every recall's packet says what still waits for the
actor: a note, and `explain["unembedded"]`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, embedder_down
from remem.errors import EmbedderError
from remem.memory.deps import Deps
from remem.model import Packet

log = logging.getLogger("remem")

Vector = npt.NDArray[np.float32]

BATCH = 64  # records and events embedded per request, at most, of each
RECALL_ITEMS = 256  # filled before one recall, at most
RECALL_SECONDS = 2.0  # no new batch once a recall's fill has run this long
PROCESS_ITEMS = 10_000  # filled after `process()`, at most
WORKER_ITEMS = 256  # filled per tenant after a worker's claim of jobs, at most


def may_fail(embedder: Embedder | None) -> bool:
    """Whether vectors can be missing because of this embedder (a server's outage)."""
    return bool(getattr(embedder, "may_fail", False))


class LateVectors:
    """One memory's view of its late vectors: whether it has reason to think some wait
    (`suspect`: at first, and after a pass that did not finish), so that a recall looks
    for them only then, or when its embedder `missed` a write since."""

    def __init__(self) -> None:
        self.suspect = True

    def before_recall(self, deps: Deps, fill: bool = True) -> bool:
        """Fill in late vectors before a recall when there is reason to (and `fill`: a
        service's recall only reads, its worker fills them); whether the packet should
        say what still waits (`noted`): always, for an embedder that may fail."""
        embedder = deps.embedder()
        if not may_fail(embedder):
            return False
        if not fill or not (self.suspect or getattr(embedder, "missed", False)):
            return True
        with contextlib.suppress(AttributeError):
            embedder.missed = False  # type: ignore[union-attr]
        _, complete = fill_vectors(deps, RECALL_ITEMS, RECALL_SECONDS)
        self.suspect = not complete
        return True


def fill_vectors(deps: Deps, limit: int, seconds: float | None = None) -> tuple[int, bool]:
    """Embed and store up to `limit` of the tenant's records, events and document chunks
    written without vectors: how many were stored, and whether none is left (False also
    when there is no embedder to fill them or it is down). The index is looked at first
    (`Deps.searching`): an embedder it no longer fits (another process switched it) fills
    nothing; a batch the store refused anyway is not asked for again."""
    deps.searching()
    embedder = deps.embedder()
    if embedder is None or limit <= 0 or embedder_down(embedder) is not None:
        return 0, False
    store, tenant = deps.store, deps.tenant
    deadline = None if seconds is None else time.monotonic() + seconds
    done, complete = 0, False
    seen: set[str] = set()
    while done < limit and (deadline is None or time.monotonic() < deadline):
        waiting = store.backfill.unembedded(tenant, min(BATCH, limit - done))
        if not len(waiting):
            complete = True
            break
        ids = {r.id for _, r in waiting.records} | {e.id for e in waiting.events}
        if ids <= seen:
            break  # stored nothing last time (the index became another model's): stop
        seen |= ids
        try:
            records = _embedded(embedder, [r.text for _, r in waiting.records])
            events = _embedded(embedder, [e.text for e in waiting.events])
        except EmbedderError as exc:  # down again: the rest waits for the next pass
            log.info("vectors still missing (%d filled this pass): %s", done, exc)
            break
        stored = store.backfill.add_record_vectors(
            tenant,
            [
                (k, r, v)
                for (k, r), v in zip(waiting.records, records, strict=True)
                if v is not None
            ],
            embedder.name,
        )
        made = [(e, v) for e, v in zip(waiting.events, events, strict=True) if v is not None]
        if made:
            store.search.add_event_vectors(tenant, made, embedder.name)
        if stored + len(made) == 0:
            break  # erased meanwhile, or none embeddable: nothing was stored, do not ask again
        done += stored + len(made)
    if complete:  # then the document chunks
        more, complete = _fill_chunks(deps, embedder, limit - done, deadline)
        done += more
    if done:
        log.info("filled in %d vector(s) written without one", done)
    return done, complete


def _embedded(embedder: Embedder, texts: list[str]) -> list[Vector | None]:
    """The vectors of `texts`, None for a text the embedder refuses. An `EmbedderError`
    (the embedder is down) is raised: the whole pass waits. Any other failure is taken
    as an input the model cannot embed: the texts are then embedded one at a time and
    each one it refuses is left without a vector (logged), so one bad text neither
    fails `process()` nor keeps the others from their vectors."""
    if not texts:
        return []
    try:
        return list(embedder.embed(texts))
    except EmbedderError:
        raise
    except Exception as exc:  # a model's refusal of some input
        log.warning(
            "the embedder refused a batch of %d text(s) (%s); one at a time", len(texts), exc
        )
    made: list[Vector | None] = []
    for text in texts:
        try:
            made.append(embedder.embed([text])[0])
        except EmbedderError:
            raise
        except Exception as exc:
            log.warning("a text is left without a vector: the embedder refused it (%s)", exc)
            made.append(None)
    return made


def _fill_chunks(
    deps: Deps, embedder: Embedder, limit: int, deadline: float | None
) -> tuple[int, bool]:
    """`fill_vectors` for document chunks: how many were stored, and whether none is
    left."""
    index, done = deps.store.documents, 0
    while done < limit and (deadline is None or time.monotonic() < deadline):
        chunks = index.unembedded(deps.tenant, min(BATCH, limit - done))
        if not chunks:
            return done, True
        try:
            made = _embedded(embedder, [text for _, text in chunks])
        except EmbedderError as exc:
            log.info("chunk vectors still missing: %s", exc)
            return done, False
        pairs = [(cid, v) for (cid, _), v in zip(chunks, made, strict=True) if v is not None]
        stored = index.add_vectors(deps.tenant, pairs, embedder.name)
        if not stored:  # removed meanwhile: do not ask again
            return done, True
        done += stored
    return done, False


def noted(packet: Packet, deps: Deps, actor: str) -> Packet:
    """`packet` with what of the actor still waits for a vector (recall finds it by words
    only): a note when anything does, and `explain["unembedded"]`."""
    left = deps.store.backfill.count_unembedded(deps.tenant, actor)
    notes = packet.notes
    if left:
        notes = (
            *notes,
            f"{left} record(s) or event(s) of actor {actor!r} were written while the "
            "embedder could not embed: until their vectors are filled in, recall finds "
            "them by words only",
        )
    explain: dict[str, Any] | None = packet.explain
    if explain is not None:
        explain = {**explain, "unembedded": left}
    return replace(packet, notes=notes, explain=explain)
