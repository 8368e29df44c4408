"""The recall pipeline: gather ─► rank ─► pack; see `remem.recall` for its shape.

- `gather` makes every store call and returns one value (`Gathered`);
- `rank` orders what may be returned, a pure function of that value, the
  understood query and the time;
- packing (here) cuts what falls below the relevance floor (`floor`), keeps
  the top k, quotes raw events that carry instructions and fits the budget.

On the five LoCoMo development conversations (`remem eval locomo`), evidence
recall@10 over categories 1-4 went from 0.684 to 0.764 with the query
understanding, fusion and neighbour work, and every conversation gained.
Taking one piece out of the final ranking costs: the speakers 0.036, the dates
0.023, weighing raw events at 0.8 of records 0.016, neighbours one deep and
only among candidates 0.015.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime

from remem.blas import one_blas_thread
from remem.embed.base import Embedder, embedder_down
from remem.errors import EmbedderError
from remem.model import Packet, PacketItem, iso
from remem.policy.applies import is_request
from remem.policy.asker import about_asker
from remem.policy.untrusted import instruction_flags, quote
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack
from remem.recall.events import ASKS_ONLY_SHARE, speakers_of
from remem.recall.floor import (
    FLOOR,
    WORD_FLOOR,
    above_floor,
    at_least,
    unknown_names,
    within_k,
)
from remem.recall.gather import Gathered, gather
from remem.recall.instructions import standing_instructions
from remem.recall.rank import Ranking, conflicts, rank
from remem.recall.request import RecallRequest
from remem.recall.updates import updates_first
from remem.store.roles import Store
from remem.telemetry.hooks import observed_packing

__all__ = ["RecallRequest", "recall"]


def recall(
    store: Store,
    embedder: Embedder | None,
    req: RecallRequest,
    now: datetime,
    why_lexical: str | None = None,
) -> Packet:
    """Answer a recall request with a packet; see `remem.recall`. `why_lexical`: why there
    is no embedder (a note of the packet; default: none is installed).

    An embedder that cannot embed the query now (an embeddings server down: its `down`
    says why, or an `EmbedderError` while gathering) leaves the recall lexical only, as
    with no embedder, and the packet's notes say so and why."""
    down = embedder_down(embedder)
    # numpy's products in a recall are small (its candidates against a few dozen
    # vectors): OpenBLAS's threads cost more than they save, and spin on the other core
    with one_blas_thread():
        with store.search.reading(req.scope.tenant):  # one read transaction on PostgreSQL
            if down is None:
                try:
                    gathered = gather(store, embedder, req, now, why_lexical)
                except EmbedderError as exc:
                    down = str(exc)
            if down is not None and embedder is not None:
                why = (
                    f"the embedder {embedder.name} cannot embed now ({down}): "
                    "this recall is lexical only"
                )
                gathered = gather(store, None, req, now, why)
            store.search.last_read(req.scope.tenant)  # COMMIT rides with the next read
            standing = standing_instructions(store.records, req, now)
        return pack_packet(gathered, rank(gathered, now), standing)


@observed_packing
def pack_packet(g: Gathered, ranking: Ranking, standing: Sequence[PacketItem] = ()) -> Packet:
    """The packet of a ranking: above the floor, the top k, within the budget.

    `standing` (`remem.recall.instructions`) is pinned first, out of the same budget; a
    pinned item is not repeated among the ranked ones."""
    req = g.request
    rejected = dict(ranking.rejected)
    pins, dropped, pinned_tokens = pack([(it, it.tokens) for it in standing], req.budget)
    notes = (
        (*g.notes, f"{len(dropped)} standing instruction(s) left out: over the budget")
        if dropped
        else g.notes
    )
    floor = FLOOR if g.vectors else WORD_FLOOR
    asks = is_request(req.query)
    items, evidence, applies = ranking.items, ranking.evidence, ranking.applies
    if standing:
        pinned_ids = {p.id for p in standing}
        items = tuple(it for it in items if it.id not in pinned_ids)
    strangers = (
        unknown_names(req.query, _gathered_speakers(g), _gathered_texts(g)) if not asks else ()
    )
    relevant = above_floor(items, evidence, rejected, floor, applies, strangers)
    asker = not strangers and about_asker(req.query)
    if asker:  # the floor does not shorten a question about the asker below k
        relevant = at_least(items, relevant, req.k, rejected)
    ranked = within_k(relevant, req.k, list(g.constraints))  # empty unless a request
    kept_ids = {it.id for it in ranked}
    beyond = [it for it in relevant if it.id not in kept_ids and it.id not in rejected]
    # a packet item for each of the few kept (`Ranked.item`), not for every candidate
    top = [_untrusted(it.item()) if it.kind == "event" else it.item() for it in ranked]
    top = updates_first(top, req.query)  # the newer state before the older (`remem.recall.updates`)
    kept, over, used = pack([(it, it.tokens) for it in top], req.budget - pinned_tokens)
    for below in beyond:
        rejected[below.id] = f"ranked below k={req.k}"
    for it in over:
        rejected[it.id] = f"over the {req.budget}-token budget"

    explain = None
    if req.explain:
        found = g.events
        explain = {
            "query": req.query,
            "understood": g.query.explain(),
            "as_of": iso(req.known_at) if req.known_at == req.valid_at else None,
            "known_at": iso(req.known_at),
            "valid_at": iso(req.valid_at),
            "axes": _axes(req),
            "lexical": [{"id": h.id, "bm25": round(h.score, 4)} for h in g.lexical],
            "named_fields": list(ranking.named),
            "vector": [{"id": rid, "cosine": round(c, 4)} for rid, c in ranking.vector],
            "events_lexical": [h.id for h in found.lexical] if found else [],
            "events_vector": [rid for rid, _ in found.vector] if found else [],
            "inherited": [{"id": rid, "from": old} for rid, old in ranking.heirs.items()],
            "request_domains": list(g.applicable.domains),
            "applies": [
                {"id": rid, "reason": "applies to: " + ", ".join(doms)}
                for rid, doms in ranking.applies.items()
            ],
            "only_ask": [
                {"id": eid, "reason": f"only asks: ranked at {ASKS_ONLY_SHARE} of its score"}
                for eid in ranking.only_ask
            ],
            "floor": {
                "evidence": floor,
                "unknown_names": list(strangers),
                "about_asker": asker,
            },
            "pinned_instructions": [it.id for it in pins],
            "selected": [it.id for it in kept],
            "rejected": [{"id": i, "reason": why} for i, why in rejected.items()],
            "notes": list(notes),
        }
    return Packet(
        records=tuple(kept),
        conflicts=tuple(conflicts(ranking.eligible)),
        tokens=used + pinned_tokens,
        budget=req.budget,
        notes=notes,
        explain=explain,
        pinned=tuple(pins),
    )


def _gathered_speakers(g: Gathered) -> set[str]:
    """Who said the turns the recall gathered, and the scope's speakers the query named."""
    turns = [*g.sources.values(), *(g.events.events.values() if g.events is not None else ())]
    return speakers_of(turns) | set(g.query.speakers)


def _gathered_texts(g: Gathered) -> Iterator[str]:
    """Every text the recall gathered: records, their turns, event candidates, neighbours."""
    yield from (r.text for r in g.records.values())
    yield from (e.text for e in g.sources.values())
    if g.events is not None:
        yield from (e.text for e in g.events.events.values())
    yield from (r.text for r in g.applicable.records.values())


def _axes(req: RecallRequest) -> str:
    """Which time axes the recall used, in words (for `explain`)."""
    if not req.past:
        return "now: active records valid now"
    known = iso(req.known_at) or "now"
    valid = iso(req.valid_at) or "now"
    if req.known_at == req.valid_at:
        return f"as of {known}: what was written by then and valid then"
    return f"known at {known} (written by then), valid at {valid}"


def _untrusted(item: PacketItem) -> PacketItem:
    """A raw event that carries instructions goes back quoted, like a flagged record.

    Checked only for the events that made the top k: the patterns cost about
    0.2 ms an event, too much to spend on every candidate.
    """
    role, _, text = item.text.partition(": ")
    flags = instruction_flags(text)
    if not flags:
        return item
    quoted = f"{role}: {quote(text)}"
    tokens = estimate_tokens(quoted) + ITEM_OVERHEAD_TOKENS
    return replace(item, text=quoted, flags=flags, tokens=tokens)
