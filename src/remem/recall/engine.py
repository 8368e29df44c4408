"""The recall pipeline; see `remem.recall` for its shape."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from remem.embed.base import Embedder
from remem.model import Packet, PacketItem, Record, Sensitivity, Status, iso
from remem.policy.precedence import RANK
from remem.policy.untrusted import quote
from remem.policy.validity import is_recallable, within_sensitivity
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack
from remem.store.base import Hit, Scope, Store

RRF_K = 60  # the usual constant of reciprocal-rank fusion
POOL = 50  # how many candidates each retriever contributes
EVENT_POOL = 20
# A record found only by its vector must be at least this similar to the query:
# below it, all-MiniLM-L6-v2 pairs are mostly unrelated and would only pad the
# packet up to k. Records that share words with the query are exempt.
MIN_VECTOR_ONLY_COSINE = 0.25


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall: whose memories, what about, how many, how large."""

    scope: Scope
    query: str
    shared: tuple[Scope, ...] = ()  # further scopes whose records apply (e.g. procedures)
    k: int = 10
    budget: int = 1000
    as_of: datetime | None = None
    include_events: bool = True
    explain: bool = False
    max_sensitivity: Sensitivity | None = None


def recall(store: Store, embedder: Embedder | None, req: RecallRequest, now: datetime) -> Packet:
    """Answer a recall request with a packet; see `remem.recall`."""
    at = req.as_of or now
    notes: list[str] = []
    scopes = (req.scope, *req.shared)
    query_vec = None
    if embedder is None:
        notes.append("no embedding model installed: recall is lexical only")
    else:
        query_vec = embedder.embed([req.query])[0]

    # every scope contributes its own ranked lists; reciprocal-rank fusion sums them
    ranks: dict[str, float] = defaultdict(float)
    rejected: list[dict[str, Any]] = []
    lexical: list[Hit] = []
    vector: list[tuple[str, float]] = []
    for scope in scopes:
        hits = store.search_records(scope, req.query, POOL)
        lexical.extend(hits)
        for rank, hit in enumerate(hits):
            ranks[hit.id] += 1.0 / (RRF_K + rank + 1)
    lexical_ids = set(ranks)
    for scope in scopes:
        if embedder is None or query_vec is None:
            break
        near = store.vector_search(
            scope, embedder.name, query_vec, POOL, at, include_invalid=req.as_of is not None
        )
        vector.extend(near)
        for rank, (rid, cosine) in enumerate(near):
            if rid not in lexical_ids and cosine < MIN_VECTOR_ONLY_COSINE:
                rejected.append({"id": rid, "reason": f"weak match (cosine {cosine:.2f})"})
                continue
            ranks[rid] += 1.0 / (RRF_K + rank + 1)

    fetched = {r.id: r for r in store.get_records(req.scope.tenant, list(ranks))}
    eligible: list[Record] = []
    for rid in ranks:
        rec = fetched.get(rid)
        if rec is None:
            rejected.append({"id": rid, "reason": "deleted"})
        elif not is_recallable(rec, now, req.as_of):
            rejected.append({"id": rid, "reason": _why_not(rec, now, req.as_of)})
        elif not within_sensitivity(rec, req.max_sensitivity):
            rejected.append({"id": rid, "reason": f"sensitivity {rec.sensitivity.value}"})
        else:
            eligible.append(rec)
    eligible.sort(
        key=lambda r: (ranks[r.id], RANK[r.authority], r.valid_from.timestamp()), reverse=True
    )

    items: list[PacketItem] = [_record_item(r, ranks[r.id]) for r in eligible]
    if req.include_events:
        items.extend(_event_items(store, req, at, rejected))
    items.sort(key=lambda it: it.score, reverse=True)

    top, beyond = items[: req.k], items[req.k :]
    kept, over, used = pack([(it, it.tokens) for it in top], req.budget)
    for it in beyond:
        rejected.append({"id": it.id, "reason": f"ranked below k={req.k}"})
    for it in over:
        rejected.append({"id": it.id, "reason": f"over the {req.budget}-token budget"})

    explain = None
    if req.explain:
        explain = {
            "query": req.query,
            "as_of": iso(req.as_of),
            "lexical": [{"id": h.id, "bm25": round(h.score, 4)} for h in lexical],
            "vector": [{"id": rid, "cosine": round(c, 4)} for rid, c in vector],
            "selected": [it.id for it in kept],
            "rejected": rejected,
        }
    return Packet(
        records=tuple(kept),
        conflicts=tuple(_conflicts(eligible)),
        tokens=used,
        budget=req.budget,
        notes=tuple(notes),
        explain=explain,
    )


def _event_items(
    store: Store,
    req: RecallRequest,
    at: datetime,
    rejected: list[dict[str, Any]],
) -> list[PacketItem]:
    hits = store.search_events(req.scope, req.query, EVENT_POOL)
    if not hits:
        return []
    events = {e.id: e for e in store.get_events(req.scope.tenant, [h.id for h in hits])}
    # an event that yielded records is represented by them (current or superseded),
    # never handed back raw beside them
    extracted = store.events_with_records(req.scope.tenant, list(events))
    items = []
    for rank, hit in enumerate(hits):
        ev = events.get(hit.id)
        if ev is None:
            continue
        if ev.id in extracted:
            rejected.append({"id": ev.id, "reason": "event represented by its records"})
            continue
        if ev.time > at:
            rejected.append({"id": ev.id, "reason": "event after the as-of time"})
            continue
        text = f"{ev.role.value}: {ev.text}"
        items.append(
            PacketItem(
                id=ev.id,
                text=text,
                kind="event",
                namespace=f"/tenants/{ev.tenant}/actors/{ev.actor}/sessions/{ev.session}",
                status="event",
                source_date=ev.time,
                source={"type": "event", "event_ids": [ev.id], "session": ev.session},
                # one retriever instead of two: events rank below records that
                # both retrievers agree on, and fill in where records are missing
                score=1.0 / (RRF_K + rank + 1),
                tokens=estimate_tokens(text) + ITEM_OVERHEAD_TOKENS,
            )
        )
    return items


def _record_item(rec: Record, score: float) -> PacketItem:
    # remembered text is untrusted: a flagged record goes back as quoted data
    text = quote(rec.text) if rec.flags else rec.text
    return PacketItem(
        id=rec.id,
        text=text,
        kind=rec.kind.value,
        namespace=rec.namespace,
        status=rec.status.value,
        source_date=rec.valid_from,
        source=rec.source.as_dict() | {"authority": rec.authority.value},
        score=score,
        tokens=estimate_tokens(text) + ITEM_OVERHEAD_TOKENS,
        flags=rec.flags,
    )


def _why_not(rec: Record, now: datetime, as_of: datetime | None) -> str:
    if rec.status is not Status.ACTIVE and as_of is None:
        by = f" by {rec.superseded_by}" if rec.superseded_by else ""
        return f"{rec.status.value}{by}"
    at = as_of or now
    if rec.valid_from > at:
        return "not yet valid at the requested time"
    return "expired (valid_until has passed)"


def _conflicts(records: list[Record]) -> list[dict[str, Any]]:
    """Active records about the same field with different values: ask, don't pick."""
    by_field: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        if r.field and r.status is Status.ACTIVE:
            by_field[r.field].append(r)
    out = []
    for field, recs in by_field.items():
        values = {(r.value or r.text).strip().lower() for r in recs}
        if len(values) > 1:
            out.append(
                {
                    "field": field,
                    "record_ids": [r.id for r in recs],
                    "values": [r.value or r.text for r in recs],
                    "question": f"{len(recs)} different values for {field}; which is current?",
                }
            )
    return out
