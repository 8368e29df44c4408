"""The vectors an outage left out, filled in later: the catch-up pass of embeddings.

When the embedder cannot embed (an embeddings server down, `remem.embed.server`), a
write goes on without vectors (`remem.embed.base.embed_or_none`): no event, record or
document chunk is lost, and words find them meanwhile. `fill_vectors` gives them their
vectors once the embedder answers again, in batches of `BATCH` oldest first (records
and events: `remem.store.flows.backfill`; then chunks: `DocumentIndex.unembedded`),
stopping at its item and time bounds or at the first failure (the embedder is then
down again and the rest waits: a transient failure is retried with backoff by the
embedder, then by the next pass). A text the embedder refuses for good (a server's 400,
413 or 422; a local model failing on it) does not stop the pass: the batch is halved
until it stands alone, and it is set aside with the reason (`remem.memory.refusals`),
so the texts after it get their vectors.

It runs only for an embedder that may fail (`may_fail`: a server, or any embedder a
write went on without, such as a local model that failed on an input), where the job
catch-up runs: before a library recall (`Memory.recall` with `catch_up` on, at most
`RECALL_ITEMS` items and `RECALL_SECONDS`, while this memory has reason to think
something waits: the first recall, or a write since that went without vectors);
after a worker's claim of jobs, for their tenants (`remem.pipeline.worker`, at most
`WORKER_ITEMS` each: the service's recalls only read); and after `Memory.process()`
(at most `PROCESS_ITEMS`). Every recall's packet says what still waits for the
actor: a note, and `explain["unembedded"]`; and what of it the embedder refused, with
the reason: a note, and `explain["refused"]`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, embedder_down, local_failures_refused
from remem.errors import EmbedderError, EmbedderInputRefused, EmbedderRefused
from remem.memory.deps import Deps
from remem.memory.refusals import Aside, Refusal
from remem.model import Packet
from remem.store.flows.backfill import START

log = logging.getLogger("remem")

Vector = npt.NDArray[np.float32]

BATCH = 64  # records and events embedded per request, at most, of each
RECALL_ITEMS = 256  # filled before one recall, at most
RECALL_SECONDS = 2.0  # no new batch once a recall's fill has run this long
PROCESS_ITEMS = 10_000  # filled after `process()`, at most
WORKER_ITEMS = 256  # filled per tenant after a worker's claim of jobs, at most


def may_fail(embedder: Embedder | None) -> bool:
    """Whether vectors can be missing because of this embedder: a server (an outage),
    or one that `missed` a write since it was last caught up (`embed_or_none`: a local
    model that failed on an input)."""
    return bool(getattr(embedder, "may_fail", False) or getattr(embedder, "missed", False))


class LateVectors:
    """One memory's view of its late vectors: whether it has reason to think some wait
    (`suspect`: at first, and after a pass that did not finish), so that a recall looks
    for them only then, or when its embedder `missed` a write since; and whether its
    embedder ever may have failed (`failed`), so that every recall after says what waits."""

    def __init__(self) -> None:
        self.suspect = True
        self.failed = False

    def before_recall(self, deps: Deps, fill: bool = True) -> bool:
        """Fill in late vectors before a recall when there is reason to (and `fill`: a
        service's recall only reads, its worker fills them); whether the packet should
        say what still waits (`noted`): always, for an embedder that may fail."""
        embedder = deps.embedder()
        # a text set aside (by this memory's catch-up, perhaps not after a recall): the
        # embedder failed on it, and `noted` drops it once erased
        self.failed = self.failed or may_fail(embedder) or deps.refused.any(deps.tenant)
        if not self.failed:
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
    written without vectors: how many were stored, and whether none is left but those
    the embedder refused (False also when there is no embedder to fill them or it is
    down). The index is looked at first (`Deps.searching`): an embedder it no longer
    fits (another process switched it) fills nothing; a batch the store refused anyway
    is not asked for again.

    A text the embedder refuses is set aside (`remem.memory.refusals`) and the pass
    walks on past it (`_Asker`); `limit` counts every text the pass looks at, and the
    next pass starts where this one stopped (a pass that started further on and came to
    the end is not complete: the next one starts over)."""
    deps.searching()
    embedder = deps.embedder()
    if embedder is None or limit <= 0 or embedder_down(embedder) is not None:
        return 0, False
    store, tenant = deps.store, deps.tenant
    aside = deps.refused.of(tenant, embedder.name)
    asker = _Asker(embedder)
    deadline = None if seconds is None else time.monotonic() + seconds
    done, looked, complete, started = 0, 0, False, aside.resume
    while looked < limit and (deadline is None or time.monotonic() < deadline):
        waiting = store.backfill.unembedded(tenant, min(BATCH, limit - looked), aside.resume)
        if not len(waiting):
            aside.resume, complete = START, started == START
            break
        looked += len(waiting)
        records = [(k, r) for k, r in waiting.records if not aside.has("record", r.id)]
        events = [e for e in waiting.events if not aside.has("event", e.id)]
        try:
            made_r = asker.vectors([r.text for _, r in records])
            made_e = asker.vectors([e.text for e in events])
        except EmbedderError as exc:  # down again: the rest waits for the next pass
            log.info("vectors still missing (%d filled this pass): %s", done, exc)
            break
        aside.resume = waiting.after
        for (_, r), v in zip(records, made_r, strict=True):
            if isinstance(v, str):
                aside.add("record", r.id, r.actor, v)
        for e, v in zip(events, made_e, strict=True):
            if isinstance(v, str):
                aside.add("event", e.id, e.actor, v)
        vectors = [(k, r, v) for (k, r), v in zip(records, made_r, strict=True)
                   if not isinstance(v, str)]  # fmt: skip
        made = [(e, v) for e, v in zip(events, made_e, strict=True) if not isinstance(v, str)]
        stored = store.backfill.add_record_vectors(tenant, vectors, embedder.name)
        if made:
            store.search.add_event_vectors(tenant, made, embedder.name)
        if vectors and not stored:
            break  # the index became another model's: stop, do not ask again
        done += stored + len(made)
    if complete:  # then the document chunks
        more, complete = _fill_chunks(deps, asker, limit - looked, deadline)
        done += more
    if done:
        log.info("filled in %d vector(s) written without one", done)
    return done, complete


PROBE = "remem"  # a one-word text any embedder takes: asked once a pass sees a refusal


class _Asker:
    """The embedding calls of one pass. A batch the embedder refuses (an
    `EmbedderInputRefused`, or any other failure of a local model) is halved until the
    refused texts stand alone: each is answered by the reason (a str) in place of its
    vector, and the others get theirs. Before the first text is set aside, `PROBE` is
    asked: refused too, the embedder takes no text at all (a setting its server does not
    take), nothing is set aside and an `EmbedderRefused` ends the pass. Any other
    `EmbedderError` (down: timeouts, 5xx after their retries, a bad answer) ends the
    pass too, and the texts wait for the next one: transient failures are retried with
    backoff by the embedder, then across passes."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.probed = False

    def vectors(self, texts: list[str]) -> list[Vector | str]:
        """The vector of each text, or the reason the embedder refused it."""
        if not texts:
            return []
        try:
            with local_failures_refused("the text(s)"):
                return list(self.embedder.embed(texts))
        except EmbedderInputRefused as exc:  # other errors, remem's own too, end the pass
            reason = str(exc)
        if not self.probed:
            self._probe(reason)
        if len(texts) == 1:
            return [reason]
        half = len(texts) // 2
        return self.vectors(texts[:half]) + self.vectors(texts[half:])

    def _probe(self, reason: str) -> None:
        try:
            self.embedder.embed([PROBE])
        except Exception as exc:
            raise EmbedderRefused(
                f"the embedder refuses every text, even a one-word one ({reason}): check "
                "its settings ([embed]: model, dimensions)"
            ) from exc
        self.probed = True


def _fill_chunks(deps: Deps, asker: _Asker, limit: int, deadline: float | None) -> tuple[int, bool]:
    """`fill_vectors` for document chunks: how many were stored, and whether none is
    left but those set aside."""
    embedder, index, done, looked = asker.embedder, deps.store.documents, 0, 0
    aside = deps.refused.of(deps.tenant, embedder.name)
    started = aside.resume_chunks
    while looked < limit and (deadline is None or time.monotonic() < deadline):
        read = index.unembedded(deps.tenant, min(BATCH, limit - looked), aside.resume_chunks)
        if not read:
            aside.resume_chunks = ""
            return done, started == ""
        looked += len(read)
        chunks = [(cid, text) for cid, text in read if not aside.has("chunk", cid)]
        try:
            made = asker.vectors([text for _, text in chunks])
        except EmbedderError as exc:
            log.info("chunk vectors still missing: %s", exc)
            return done, False
        aside.resume_chunks = read[-1][0]
        pairs: list[tuple[str, Vector]] = []
        for (cid, _), v in zip(chunks, made, strict=True):
            if isinstance(v, str):
                aside.add("chunk", cid, None, v)
            else:
                pairs.append((cid, v))
        stored = index.add_vectors(deps.tenant, pairs, embedder.name)
        if pairs and not stored:  # the index became another model's: stop
            return done, False
        done += stored
    return done, False


def noted(packet: Packet, deps: Deps, actor: str) -> Packet:
    """`packet` with what of the actor still waits for a vector (recall finds it by words
    only): a note when anything does, and `explain["unembedded"]`; of those, the ones
    the embedder refused and set aside, with its reason, and `explain["refused"]` (those
    still stored: one erased since, in any process, is never named and is dropped)."""
    left = deps.store.backfill.count_unembedded(deps.tenant, actor)
    embedder = deps.embedder()
    refused: list[Refusal] = []
    if embedder is not None:
        aside = deps.refused.of(deps.tenant, embedder.name)
        if not left and aside.refused:  # nothing of the actor waits: none is stored
            aside.drop_actor(actor)
        elif left:
            refused = _still_stored(deps, aside, aside.of_actor(actor))
    notes = packet.notes
    if left:
        notes = (
            *notes,
            f"{left} record(s) or event(s) of actor {actor!r} were written while the "
            "embedder could not embed: until their vectors are filled in, recall finds "
            "them by words only",
        )
    if refused:
        notes = (
            *notes,
            f"{len(refused)} of actor {actor!r}'s texts the embedder refused (the last: "
            f"{refused[-1].kind} {refused[-1].id}: {refused[-1].reason}); they are set "
            "aside, found by words only, and asked again by another embedder",
        )
    explain: dict[str, Any] | None = packet.explain
    if explain is not None:
        explain = {**explain, "unembedded": left, "refused": min(len(refused), left)}
    return replace(packet, notes=notes, explain=explain)


def _still_stored(deps: Deps, aside: Aside, refused: list[Refusal]) -> list[Refusal]:
    """Those of `refused` whose record or event is still stored; the others were erased
    since (in any process) and are dropped from `aside`, never named again."""
    if not refused:
        return []
    tenant = deps.tenant
    ids = {kind: [r.id for r in refused if r.kind == kind] for kind in ("record", "event")}
    stored = {("record", r.id) for r in deps.store.records.get_records(tenant, ids["record"])}
    stored |= {("event", e.id) for e in deps.store.events.get_events(tenant, ids["event"])}
    for r in refused:
        if (r.kind, r.id) not in stored:
            aside.drop(r.kind, r.id)
    return [r for r in refused if (r.kind, r.id) in stored]
