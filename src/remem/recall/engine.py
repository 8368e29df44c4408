"""The recall pipeline; see `remem.recall` for its shape.

Scores: a candidate's BM25 score is divided by the best BM25 score among the
candidates that may be returned (so the best word match that can appear scores
1) and its cosine with the query is added. Records and raw events are scored
the same way, so one scale orders them. What cannot be returned (a superseded
or expired record, a raw event whose records were superseded) is set aside
before scoring: it must neither set the scale nor lend a bonus. A raw event
also earns half the better score of the events just before and after it in
its session: the turn that asks often shares the query's words while the next
one holds the answer. On the five LoCoMo development conversations this took
evidence recall@10 from 0.61 (events by words only) to 0.72 (see
`remem eval locomo`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder
from remem.model import Event, Packet, PacketItem, Record, Sensitivity, Status, iso
from remem.policy.precedence import RANK
from remem.policy.untrusted import instruction_flags, quote
from remem.policy.validity import is_recallable, within_sensitivity
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack
from remem.store.base import Hit, Scope, Store

POOL = 50  # how many candidates each retriever contributes
EVENT_POOL = 50
NEIGHBOUR_WEIGHT = 0.5
# raw events weigh a little less than governed records at the same match
EVENT_WEIGHT = 0.8
NEIGHBOURS_OF = 20  # the best events whose session neighbours are considered too
# A candidate found only by its vector must be at least this similar to the
# query: below it, all-MiniLM-L6-v2 pairs are mostly unrelated and would only
# pad the packet up to k. Candidates that share words with the query are exempt.
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
    query_vec = None
    if embedder is None:
        notes.append("no embedding model installed: recall is lexical only")
    else:
        query_vec = embedder.embed([req.query])[0]
    rejected: list[dict[str, Any]] = []

    lexical: list[Hit] = []
    vector: list[tuple[str, float]] = []
    for scope in (req.scope, *req.shared):
        lexical.extend(store.search_records(scope, req.query, POOL))
        if embedder is not None and query_vec is not None:
            vector.extend(
                store.vector_search(
                    scope, embedder.name, query_vec, POOL, at, include_invalid=req.as_of is not None
                )
            )
    vector = _without_weak_vectors(lexical, vector, rejected)

    # filter first, then score: a superseded record must not set the scale
    candidates = _ids(lexical, vector)
    fetched = {r.id: r for r in store.get_records(req.scope.tenant, candidates)}
    returnable: dict[str, Record] = {}
    for rid in candidates:
        rec = fetched.get(rid)
        if rec is None:
            rejected.append({"id": rid, "reason": "deleted"})
        elif not is_recallable(rec, now, req.as_of):
            rejected.append({"id": rid, "reason": _why_not(rec, now, req.as_of)})
        elif not within_sensitivity(rec, req.max_sensitivity):
            rejected.append({"id": rid, "reason": f"sensitivity {rec.sensitivity.value}"})
        else:
            returnable[rid] = rec
    scores = _fuse(lexical, vector, returnable)
    eligible = sorted(
        returnable.values(),
        key=lambda r: (scores[r.id], RANK[r.authority], r.valid_from.timestamp()),
        reverse=True,
    )

    items: list[PacketItem] = [_record_item(r, scores[r.id]) for r in eligible]
    event_explain: dict[str, Any] = {}
    if req.include_events:
        items.extend(_event_items(store, embedder, query_vec, req, at, rejected, event_explain))
    items.sort(key=lambda it: it.score, reverse=True)
    items = _one_of_each_source(items, rejected)

    top, beyond = items[: req.k], items[req.k :]
    top = [_untrusted(it) if it.kind == "event" else it for it in top]
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
            **event_explain,
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


def _without_weak_vectors(
    lexical: list[Hit], vector: list[tuple[str, float]], rejected: list[dict[str, Any]]
) -> list[tuple[str, float]]:
    """The vector hits worth keeping: weak ones are dropped unless they share words too."""
    words = {h.id for h in lexical}
    kept = []
    for rid, cosine in vector:
        if rid not in words and cosine < MIN_VECTOR_ONLY_COSINE:
            rejected.append({"id": rid, "reason": f"weak match (cosine {cosine:.2f})"})
        else:
            kept.append((rid, cosine))
    return kept


def _ids(lexical: list[Hit], vector: list[tuple[str, float]]) -> list[str]:
    """Candidate ids, word matches first, each once."""
    return list(dict.fromkeys([h.id for h in lexical] + [rid for rid, _ in vector]))


def _fuse(
    lexical: list[Hit], vector: list[tuple[str, float]], returnable: Container[str]
) -> dict[str, float]:
    """Normalised BM25 plus cosine for each returnable id.

    BM25 is divided by the best score among returnable hits: a hit that cannot
    be returned would otherwise shrink every score of its list (so a superseded
    record, or the event it came from, would push down the current one).
    """
    lexical = [h for h in lexical if h.id in returnable]
    best = max((h.score for h in lexical), default=0.0)
    scores: dict[str, float] = defaultdict(float)
    for h in lexical:
        scores[h.id] = max(scores[h.id], h.score / best if best > 0 else 0.0)
    for rid, cosine in vector:
        if rid in returnable:
            scores[rid] += max(cosine, 0.0)
    return dict(scores)


def _event_items(
    store: Store,
    embedder: Embedder | None,
    query_vec: npt.NDArray[np.float32] | None,
    req: RecallRequest,
    at: datetime,
    rejected: list[dict[str, Any]],
    explain: dict[str, Any],
) -> list[PacketItem]:
    """Raw events of the actor's thread log, scored on the records' scale."""
    lexical = store.search_events(req.scope, req.query, EVENT_POOL)
    vector: list[tuple[str, float]] = []
    if embedder is not None and query_vec is not None:
        vector = store.vector_search_events(req.scope, embedder.name, query_vec, EVENT_POOL, at)
    explain["events_lexical"] = [h.id for h in lexical]
    explain["events_vector"] = [rid for rid, _ in vector]
    vector = _without_weak_vectors(lexical, vector, rejected)
    candidates = _ids(lexical, vector)
    if not candidates:
        return []
    events = {e.id: e for e in store.get_events(req.scope.tenant, candidates)}

    # filter first, then score: an event that cannot be returned must neither set
    # the scale nor lend its neighbours a bonus (an event whose records were
    # superseded or deleted must not bring them back raw, nor prop up the turn
    # next to it)
    statuses = store.events_with_records(req.scope.tenant, list(events))
    returnable: dict[str, Event] = {}
    for eid, ev in events.items():
        if ev.time > at:
            rejected.append({"id": eid, "reason": "event after the as-of time"})
        elif not ev.text.strip():
            rejected.append({"id": eid, "reason": "event text was forgotten"})
        elif statuses.get(eid, set()) - {Status.ACTIVE.value}:
            rejected.append({"id": eid, "reason": "its records were superseded or removed"})
        else:
            returnable[eid] = ev
    scores = _fuse(lexical, vector, returnable)

    # a matching turn next to another matching turn is likelier the answer: a
    # candidate earns a share of its best neighbour's score (chatter that matches
    # nothing itself earns nothing)
    bonus: dict[str, float] = defaultdict(float)
    for eid in sorted(scores, key=lambda e: scores[e], reverse=True)[:NEIGHBOURS_OF]:
        for nb in store.adjacent_events(returnable[eid]):
            if nb.id in scores:
                bonus[nb.id] = max(bonus[nb.id], NEIGHBOUR_WEIGHT * scores[eid])
    return [
        _event_item(ev, EVENT_WEIGHT * (scores[eid] + bonus[eid])) for eid, ev in returnable.items()
    ]


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


def _event_item(ev: Event, score: float) -> PacketItem:
    text = f"{ev.role.value}: {ev.text}"
    return PacketItem(
        id=ev.id,
        text=text,
        kind="event",
        namespace=f"/tenants/{ev.tenant}/actors/{ev.actor}/sessions/{ev.session}",
        status="event",
        source_date=ev.time,
        source={"type": "event", "event_ids": [ev.id], "session": ev.session},
        score=score,
        tokens=estimate_tokens(text) + ITEM_OVERHEAD_TOKENS,
    )


def _one_of_each_source(
    items: list[PacketItem], rejected: list[dict[str, Any]]
) -> list[PacketItem]:
    """Keep a raw event or the records made from it, whichever ranks higher, not both."""
    out: list[PacketItem] = []
    events_in: set[str] = set()
    covered: set[str] = set()
    for it in items:
        if it.kind == "summary":  # a lossy index over many events: it stands beside them
            out.append(it)
            continue
        if it.kind == "event":
            if it.id in covered:
                rejected.append({"id": it.id, "reason": "represented by a record made from it"})
                continue
            events_in.add(it.id)
        else:
            sources = set(it.source.get("event_ids", []))
            if sources & events_in:
                rejected.append({"id": it.id, "reason": "its source event ranks higher"})
                continue
            covered |= sources
        out.append(it)
    return out


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
