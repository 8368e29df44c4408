"""The recall pipeline; see `remem.recall` for its shape.

    query ─► understood: the dates and the speakers it names (`query`)
          ─► records: BM25 + cosine, fused (`fusion`), plus the bonuses
          ─► events: the same, plus their neighbouring turns (`events`)
          ─► one ranking ─► an event or its records, not both ─► top k ─► budget

Records are scored like events: fused BM25 and cosine, plus the speaker bonus
when they were made from a turn of a speaker the query names (a record says
"Painted a lake sunrise", its turn was Melanie's), plus the date bonus when
they hold from a time the query names. A record that scores close to the turn
it was made from is shown in the turn's place: the governed fact before the
raw words.

On the five LoCoMo development conversations (`remem eval locomo`), evidence
recall@10 over categories 1-4 went from 0.684 to 0.764, and every conversation
gained. Taking one piece out of the final ranking costs: the speakers 0.036,
the dates 0.023, weighing raw events at 0.8 of records (as before) 0.016,
neighbours one deep and only among candidates (as before) 0.015.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from remem.embed.base import Embedder
from remem.model import Event, Packet, PacketItem, Record, Sensitivity, Status, iso
from remem.policy.precedence import RANK
from remem.policy.untrusted import instruction_flags, quote
from remem.policy.validity import is_recallable, within_sensitivity
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack
from remem.recall.events import EventSearch, score_events, speakers_of
from remem.recall.fusion import candidate_ids, fuse, without_weak_vectors
from remem.recall.query import Query, understand, with_speakers
from remem.store.base import Hit, Scope, Store

POOL = 50  # how many candidates each retriever contributes
# A record stands in for the event it was made from when it scores at least
# this share of the event's score (see `_one_of_each_source`).
STAND_IN = 0.8
MAX_SUCCESSION = 8  # how far along a supersession chain a match is passed on


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
    model = embedder.name if embedder is not None else ""
    rejected: dict[str, str] = {}
    query = understand(req.query)

    # the events first: their speakers tell which words of the query are names
    found = None
    if req.include_events:
        found = search = EventSearch.run(store, req.scope, query.words, query_vec, model, at)
        query = _learn_speakers(
            query, speakers_of(search.events.values()), lambda w: search.search_words(store, w)
        )

    vector: list[tuple[str, float]] = []
    if query_vec is not None:
        for scope in (req.scope, *req.shared):
            vector.extend(
                store.vector_search(
                    scope, model, query_vec, POOL, at, include_invalid=req.as_of is not None
                )
            )
    lexical = _search_records(store, req, query.words)
    fetched = {r.id: r for r in store.get_records(req.scope.tenant, candidate_ids(lexical, vector))}
    if found is not None:
        sources = found.events
    else:  # no event search ran: the turns the records came from tell the speakers
        sources = _source_events(store, req.scope.tenant, fetched.values(), {})

        def search_again(words: str) -> None:
            lexical[:] = _search_records(store, req, words)
            missing = [r for r in candidate_ids(lexical, vector) if r not in fetched]
            fetched.update((r.id, r) for r in store.get_records(req.scope.tenant, missing))

        query = _learn_speakers(query, speakers_of(sources.values()), search_again)
    vector = without_weak_vectors(lexical, vector, rejected)

    # filter first, then score: a superseded record must not set the scale
    returnable: dict[str, Record] = {}
    replaced: dict[str, Record] = {}  # superseded since: its successor may inherit its match
    for rid in candidate_ids(lexical, vector):
        rec = fetched.get(rid)
        if rec is None:
            rejected[rid] = "deleted"
        elif not is_recallable(rec, now, req.as_of):
            rejected[rid] = _why_not(rec, now, req.as_of)
            if req.as_of is None and rec.status is Status.INVALID and rec.superseded_by:
                replaced[rid] = rec
        elif not within_sensitivity(rec, req.max_sensitivity):
            rejected[rid] = f"sensitivity {rec.sensitivity.value}"
        else:
            returnable[rid] = rec
    if replaced and query_vec is not None:  # not valid now, so no vector search found them
        stored = store.record_vectors(req.scope.tenant, sorted(replaced), model)
        vector.extend((rid, float(vec @ query_vec)) for rid, vec in stored.items())
    scores = fuse(lexical, vector, returnable, also=replaced)
    heirs = _inherit(store, req, now, replaced, fetched, returnable, scores)
    if query.speakers:
        sources = _source_events(store, req.scope.tenant, returnable.values(), sources)
    for rid, rec in returnable.items():  # said by whoever said the turns it was made from
        said = [sources[e].metadata.get("speaker") for e in rec.source.event_ids if e in sources]
        scores[rid] = scores.get(rid, 0.0) + query.bonus(said, rec.valid_from)
    eligible = sorted(
        returnable.values(),
        key=lambda r: (scores[r.id], RANK[r.authority], r.valid_from.timestamp()),
        reverse=True,
    )

    items: list[PacketItem] = [_record_item(r, scores[r.id]) for r in eligible]
    records_made: dict[str, int] = {}
    if found is not None:
        scored = score_events(store, found, query, at, rejected)
        items.extend(_event_item(ev, scored.scores[eid]) for eid, ev in scored.events.items())
        records_made = scored.records_made
    items.sort(key=lambda it: it.score, reverse=True)  # stable: records first at a tie
    items = _one_of_each_source(items, rejected, records_made)

    top, beyond = items[: req.k], items[req.k :]
    top = [_untrusted(it) if it.kind == "event" else it for it in top]
    kept, over, used = pack([(it, it.tokens) for it in top], req.budget)
    for it in beyond:
        rejected[it.id] = f"ranked below k={req.k}"
    for it in over:
        rejected[it.id] = f"over the {req.budget}-token budget"

    explain = None
    if req.explain:
        explain = {
            "query": req.query,
            "understood": query.explain(),
            "as_of": iso(req.as_of),
            "lexical": [{"id": h.id, "bm25": round(h.score, 4)} for h in lexical],
            "vector": [{"id": rid, "cosine": round(c, 4)} for rid, c in vector],
            "events_lexical": [h.id for h in found.lexical] if found else [],
            "events_vector": [rid for rid, _ in found.vector] if found else [],
            "inherited": [{"id": rid, "from": old} for rid, old in heirs.items()],
            "selected": [it.id for it in kept],
            "rejected": [{"id": i, "reason": why} for i, why in rejected.items()],
        }
    return Packet(
        records=tuple(kept),
        conflicts=tuple(_conflicts(eligible)),
        tokens=used,
        budget=req.budget,
        notes=tuple(notes),
        explain=explain,
    )


def _inherit(
    store: Store,
    req: RecallRequest,
    now: datetime,
    replaced: dict[str, Record],
    fetched: dict[str, Record],
    returnable: dict[str, Record],
    scores: dict[str, float],
) -> dict[str, str]:
    """Let the current record of a superseded match rank where the match did.

    "How much can we spend?" matches the words of the old budget, not of the
    raise that superseded it; the raise is the answer. Each superseded
    candidate's score passes along its `superseded_by` chain to the first
    record that may be returned (in scope, recallable, within sensitivity),
    which keeps the better of its own score and the inherited one. Returns
    heir id -> the superseded record it inherited from.
    """
    scopes = (req.scope, *req.shared)
    known = dict(fetched)
    heirs: dict[str, str] = {}
    chains = {rid: rec.superseded_by for rid, rec in replaced.items() if rec.superseded_by}
    for _ in range(MAX_SUCCESSION):
        missing = sorted({s for s in chains.values() if s not in known})
        if missing:
            known.update((r.id, r) for r in store.get_records(req.scope.tenant, missing))
        following: dict[str, str] = {}
        for old, heir in chains.items():
            rec = known.get(heir)
            if rec is None:
                continue
            if heir not in returnable and (
                is_recallable(rec, now)
                and within_sensitivity(rec, req.max_sensitivity)
                and any(_in_scope(rec, sc) for sc in scopes)
            ):
                returnable[heir] = rec
            if heir in returnable:
                if scores.get(old, 0.0) > scores.get(heir, 0.0):
                    scores[heir] = scores[old]
                    heirs[heir] = old
            elif rec.superseded_by:
                following[old] = rec.superseded_by
        chains = following
        if not chains:
            break
    return heirs


def _in_scope(rec: Record, scope: Scope) -> bool:
    prefix = scope.namespace_prefix
    return (
        rec.tenant == scope.tenant
        and rec.actor == scope.actor
        and (prefix is None or rec.namespace.startswith(prefix))
    )


def _learn_speakers(query: Query, speakers: set[str], search_again: Callable[[str], None]) -> Query:
    """`query` knowing the speakers it names; the word search runs again when names left it."""
    named = with_speakers(query, speakers)
    if named.words != query.words:
        search_again(named.words)
    return named


def _search_records(store: Store, req: RecallRequest, words: str) -> list[Hit]:
    lexical: list[Hit] = []
    for scope in (req.scope, *req.shared):
        lexical.extend(store.search_records(scope, words, POOL))
    return lexical


def _source_events(
    store: Store, tenant: str, records: Iterable[Record], known: dict[str, Event]
) -> dict[str, Event]:
    """`known` and the other turns these records were made from."""
    ids = {e for r in records for e in r.source.event_ids} - set(known)
    if not ids:
        return known
    return known | {e.id: e for e in store.get_events(tenant, sorted(ids))}


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
    items: list[PacketItem], rejected: dict[str, str], records_of: dict[str, int]
) -> list[PacketItem]:
    """Keep a raw event or the records made from it, not both.

    `items` are in rank order. A record that scores at least `STAND_IN` of
    the event it was made from takes the event's place (and score): the
    governed fact is preferred to the raw words, and ranks where they did. A
    record further behind its event gives way to it.

    A turn made into several records ("I'm vegetarian. And I can't stand
    cilantro.") holds what each of them holds, so it is never replaced by
    one of them: a record of it that ranks first brings the turn up to its
    rank instead. `records_of` counts the active records of each returnable
    event (summaries aside).
    """
    event_items = {it.id: it for it in items if it.kind == "event"}
    best_record: dict[str, PacketItem] = {}  # event id -> its best record, if any
    for it in items:
        if it.kind not in ("event", "summary"):
            for eid in it.source.get("event_ids", []):
                best_record.setdefault(eid, it)
    out: list[PacketItem] = []
    placed: set[str] = set()
    events_in: set[str] = set()
    covered: set[str] = set()
    for it in items:
        if it.kind == "summary":  # a lossy index over many events: it stands beside them
            out.append(it)
            continue
        if it.kind == "event":
            if it.id in events_in:  # brought up by one of its records
                continue
            rec = best_record.get(it.id)
            if (
                it.id not in covered
                and rec is not None
                and rec.id not in placed
                and records_of.get(it.id, 0) <= 1
                and rec.score >= STAND_IN * it.score
            ):
                out.append(replace(rec, score=it.score))
                placed.add(rec.id)
                covered |= set(rec.source.get("event_ids", []))
            if it.id in covered:
                rejected[it.id] = "represented by a record made from it"
                continue
            events_in.add(it.id)
        elif it.id in placed:
            continue
        else:
            sources = set(it.source.get("event_ids", []))
            if sources & events_in:
                rejected[it.id] = "its source event ranks higher"
                continue
            (turn,) = sources if len(sources) == 1 else (None,)
            if turn in event_items and turn not in covered and records_of.get(turn, 0) > 1:
                rejected[it.id] = "its turn, made into several records, stands for them"
                events_in.add(turn)
                out.append(replace(event_items[turn], score=it.score))
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
