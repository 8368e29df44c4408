"""Gathering: every store call of a recall, into one value that ranking reads.

What a recall may need is fetched here and nowhere else: the word and vector
hits over the scope's records and raw events, the records themselves and the
successors of superseded ones (their whole `superseded_by` chain, up to
`MAX_SUCCESSION` steps), the turns the records were made from (their
speakers), the turns either side of each event candidate, and which records
each of those events was made into, and, for a request for a recommendation
or a plan, the records near its life domains (`remem.recall.applies`).
Nothing is decided here about what may be
returned or how it scores: `remem.recall.rank` decides that from this value
alone, so it can be tested without a store.

An as-of recall (`known_at`, `valid_at`; see `remem.policy.validity`) must not
lose a record that was current then but is closed now: the word search finds
records of every status; the vector search looks at records valid at
`valid_at` and, when `known_at` is another time, at `known_at` too, superseded
ones included; and the record a too-new match superseded, back along its
`supersedes` chain to the one written by `known_at`, is fetched with its own
cosine (a record superseded by a successor backdated before `known_at` is
valid at neither time as stored). The closing time of each superseded
candidate written by `known_at` comes from its history, so that ranking can
tell "superseded since" from "superseded by then".
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, embed_queries
from remem.forksafe import ForkSafeLock
from remem.linger import Sweep
from remem.model import Event, Record, Status
from remem.recall.applies import Applicable, drop_past, gather_applicable
from remem.recall.constraints import drop_past as drop_past_turns
from remem.recall.constraints import standing_turns
from remem.recall.events import (
    EVENT_POOL,
    NEIGHBOUR_SHARES,
    EventSearch,
    GatheredEvents,
    speakers_of,
)
from remem.recall.fusion import candidate_ids
from remem.recall.query import Query, understand, with_speakers
from remem.recall.request import RecallRequest
from remem.store.roles import EventLog, Hit, RecordStore, Scope, Search, Store

Vector = npt.NDArray[np.float32]

POOL = 50  # how many candidates each retriever contributes
MAX_SUCCESSION = 8  # how far along a supersession chain a match is passed on
CACHED_SCOPES = 256  # shared scopes whose emptiness is kept (`_may_hold_records`)
NO_MODEL = "no embedding model installed: recall is lexical only"


@dataclass(frozen=True, slots=True)
class Gathered:
    """Everything one recall fetched; `remem.recall.rank.rank` reads nothing else."""

    request: RecallRequest
    query: Query
    lexical: tuple[Hit, ...] = ()
    vector: tuple[tuple[str, float], ...] = ()
    # when each superseded candidate written by known_at was closed (as-of recalls only)
    closed: Mapping[str, datetime] = field(default_factory=dict)
    # the cosines of superseded candidates (not valid now, so no vector search found them)
    replaced_vector: tuple[tuple[str, float], ...] = ()
    records: Mapping[str, Record] = field(default_factory=dict)  # candidates and successors
    sources: Mapping[str, Event] = field(default_factory=dict)  # turns records came from
    events: GatheredEvents | None = None  # None when events were not asked for
    vectors: bool = True  # whether the query was embedded (cosines are in the hits)
    applicable: Applicable = field(default_factory=Applicable)  # a request's standing records
    constraints: Mapping[str, str] = field(default_factory=dict)  # turn id -> its constraint kind
    notes: tuple[str, ...] = ()


def ahead(store: Store, req: RecallRequest) -> None:
    """Begin the reads every recall of `req` starts with (`Search.ahead`): the shared
    scopes' versions (`_may_hold_records`) and the word searches of the query's words,
    of the scope's events (when asked for) and records. On PostgreSQL they ride with the
    next round trip of the recall's span (the embedder's index check), so `gather` finds
    them answered instead of making three round trips of its own."""
    words = understand(req.query).words
    events = EVENT_POOL if req.include_events else 0
    store.search.ahead(req.scope, req.shared, words, events, POOL)


def gather(
    store: Store,
    embedder: Embedder | None,
    req: RecallRequest,
    now: datetime,
    why_lexical: str | None = None,
) -> Gathered:
    """Fetch the candidates of one recall and what ranking them needs (`why_lexical`: why
    there is no embedder, for the notes)."""
    at = req.valid_at or now
    _sweep_kept(now)
    notes: list[str] = []
    if embedder is None:
        notes.append(why_lexical or NO_MODEL)
    model = embedder.name if embedder is not None else ""
    base = understand(req.query)
    scopes = (req.scope, *(sc for sc in req.shared if _may_hold_records(store, sc)))
    tenant = req.scope.tenant
    known = req.known_at
    times = [at] if known is None or known == at else [at, known]

    def search_records(words: str) -> list[Hit]:
        return [h for sc in scopes for h in store.search.search_records(sc, words, POOL)]

    def search_vectors(vecs: _Vectors | None) -> list[tuple[str, float]]:
        if vecs is None:
            return []
        hits = [
            hit
            for scope in scopes
            for when in times
            for hit in store.search.vector_search(
                scope, model, vecs.query, POOL, when, include_invalid=req.past
            )
        ]
        return _best_of_each(hits) if len(times) > 1 else hits

    # The word search first: the speakers of what it finds tell which words of the
    # query are names, so that the query vector is made without them (`Query.embedded`)
    # and both forms are embedded in one call; what the vectors then find may name a
    # speaker the words did not (a name only ever addressed), and only then is the
    # query embedded again. The embedding runs on the recall's own thread
    # (`_query_vectors` says why).
    found = None
    records: dict[str, Record] = {}
    sources: dict[str, Event] = {}
    if req.include_events:
        found = EventSearch.run(store, req.scope, base.words, None, model, at)
        query = with_speakers(base, speakers_of(found.events.values()))
        searched = query.words
        lexical = search_records(searched)  # again below if the speakers change the words
        vecs = _query_vectors(embedder, query)
        for _ in range(2):
            if vecs is None:
                break
            found.vector = _event_vector_search(store.search, req.scope, model, vecs, at)
            new = [e for e, _ in found.vector if e not in found.events]
            found.events.update((e.id, e) for e in store.events.get_events(tenant, new))
            again = with_speakers(base, speakers_of(found.events.values()))
            if again.embedded == query.embedded:
                query = again
                break
            query, vecs = again, _query_vectors(embedder, again)
        if query.words != base.words:
            found.search_words(store, query.words)
        sources = dict(found.events)
        if query.words != searched:
            lexical = search_records(query.words)
        vector = search_vectors(vecs)
        missing = [r for r in candidate_ids(lexical, vector) if r not in records]
        records.update((r.id, r) for r in store.records.get_records(tenant, missing))
    else:  # no event search: the turns the records came from tell the speakers
        query = base
        lexical, vector, vecs = [], [], None
        for _ in range(3):
            if query.words != base.words or not lexical:
                lexical = search_records(query.words)
            if vecs is None or vecs.text != query.embedded:
                vecs = _query_vectors(embedder, query)
                vector = search_vectors(vecs)
            missing = [r for r in candidate_ids(lexical, vector) if r not in records]
            records.update((r.id, r) for r in store.records.get_records(tenant, missing))
            sources = _source_events(store.events, tenant, records.values(), sources)
            again = with_speakers(base, speakers_of(sources.values()))
            if again == query:
                break
            query = again
    applicable = gather_applicable(
        store, embedder, scopes, req.query, vecs.query if vecs else None, at, req.past, records
    )
    records.update((r, rec) for r, rec in applicable.records.items() if r not in records)
    closed: dict[str, datetime] = {}
    if req.known_at is not None:
        _predecessors(store.records, req.scope.tenant, req.known_at, records)
        closed = closings(store.records, req.scope.tenant, records.values(), req.known_at, now)
        # current then, closed since: a cosine of its own where no vector search found it
        hit = {rid for rid, _ in vector}
        since = sorted(r for r, t in closed.items() if t > req.known_at and r not in hit)
        if since and vecs is not None:
            stored = store.search.record_vectors(req.scope.tenant, since, model)
            vector.extend((r, _cosine(vecs, v)) for r, v in stored.items())
    replaced = sorted(
        rid
        for rid in candidate_ids(lexical, vector)
        if not req.past
        and (rec := records.get(rid)) is not None
        and rec.status is Status.INVALID
        and rec.superseded_by
    )
    replaced_vector: list[tuple[str, float]] = []
    if replaced and vecs is not None:
        stored = store.search.record_vectors(req.scope.tenant, replaced, model)
        replaced_vector = [(rid, _cosine(vecs, vec)) for rid, vec in stored.items()]
    _successors(store.records, req.scope.tenant, [records[r] for r in replaced], records)
    if query.speakers:
        sources = _source_events(store.events, req.scope.tenant, records.values(), sources)
    constraints: dict[str, str] = {}
    # a request in some life domain: one in none asks for knowledge, not a plan
    if found is not None and embedder is not None and not req.past and applicable.domains:
        for said in standing_turns(store, embedder, req.scope, at):  # `remem.recall.constraints`
            found.events.setdefault(said.event.id, said.event)
            constraints[said.event.id] = said.kind
    return Gathered(
        request=req,
        query=query,
        lexical=tuple(lexical),
        vector=tuple(vector),
        closed=closed,
        replaced_vector=tuple(replaced_vector),
        records=records,
        sources=sources,
        events=_gather_events(store, found) if found is not None else None,
        vectors=vecs is not None,
        applicable=applicable,
        constraints=constraints,
        notes=tuple(notes),
    )


@dataclass(frozen=True, slots=True)
class _Vectors:
    text: str  # what was embedded beside the question as asked
    query: Vector  # what every vector search of this recall takes


def _query_vectors(embedder: Embedder | None, query: Query) -> _Vectors | None:
    """The query's vector. When it names speakers of the scope, the normalised mean of
    the question as asked and without their names (`Query.embedded`), embedded in one
    call; otherwise the question alone.

    Measured on the LoCoMo development set (recall@10, a harness over one ingested
    database): the mean gave categories 1-4 0.803 and adversarial 0.842 against 0.768
    and 0.728 as asked; the name-free vector alone 0.804 and 0.871 but temporal 0.898
    -> 0.872 (a question naming the right speaker gains from the name meeting the
    short records that name them); the best cosine of the two, or one rule for events
    and another for records, did worse than the mean.

    Embedded on the recall's own thread: beginning the embedding on another thread
    before the word searches (2026-12-01, when an embedding took 5-10 ms) cost more
    than the overlap saved once the int8 query graph made it 2 ms, on both backends
    (the runs: docs/decisions/service-speed.md, "One recall at a time per core").
    """
    if embedder is None:
        return None
    if query.embedded == query.text:
        return _Vectors(query.text, embed_queries(embedder, [query.text])[0])
    asked, nameless = embed_queries(embedder, [query.text, query.embedded])
    both = asked + nameless
    mean = (both / max(float(np.linalg.norm(both)), 1e-9)).astype(np.float32)
    return _Vectors(query.embedded, mean)


_EMPTY_LOCK = ForkSafeLock()
# the version at which a shared scope held no records, per store (`_may_hold_records`)
_EMPTY: weakref.WeakKeyDictionary[Store, dict[tuple[str, str], int]] = weakref.WeakKeyDictionary()
# What recall keeps per scope holds the scope's words: an erasure drops its scope's
# (`remem.recall.erased`); every `LINGER_SECONDS` a recall drops what is kept past its
# time (`applies.drop_past`, `constraints.drop_past`), so what another process erased
# goes too (`remem.linger`).
_KEPT_SWEEP = Sweep()


def _sweep_kept(now: datetime) -> None:
    if _KEPT_SWEEP.due():
        drop_past(now)
        drop_past_turns(now)


def _may_hold_records(store: Store, scope: Scope) -> bool:
    """Whether a shared scope (the tenant's procedures) may hold records: False only when
    it held none, of any status, at the version it has now (`Search.scope_version`, bumped
    by every write of its records), as this process last looked. Most tenants have none,
    and searching an empty scope costs a recall two statements that find nothing (two
    round trips on PostgreSQL); looking costs one, and a list when the version moved."""
    version = store.search.scope_version(scope)
    if version is None:
        return True
    key = (scope.tenant, scope.actor)
    with _EMPTY_LOCK:
        if _EMPTY.get(store, {}).get(key) == version:
            return False
    if store.records.list_records(scope, list(Status), limit=1):
        return True
    with _EMPTY_LOCK:
        held = _EMPTY.setdefault(store, {})
        if len(held) >= CACHED_SCOPES:
            held.clear()
        held[key] = version
    return False


def _cosine(vecs: _Vectors, vec: Vector) -> float:
    """A stored record vector's cosine to the query, as the record search takes it."""
    return float(vec @ vecs.query)


def _event_vector_search(
    search: Search, scope: Scope, model: str, vecs: _Vectors, at: datetime
) -> list[tuple[str, float]]:
    return search.vector_search_events(scope, model, vecs.query, EVENT_POOL, at)


def _gather_events(store: Store, found: EventSearch) -> GatheredEvents:
    """The event candidates, the turns around each, and the records made of all of them."""
    ids = candidate_ids(found.lexical, found.vector)
    candidates = [found.events[e] for e in ids if e in found.events]
    events = dict(found.events)
    around = store.events.events_near(candidates, len(NEIGHBOUR_SHARES)) if candidates else {}
    near: dict[str, tuple[tuple[int, str], ...]] = {}
    for eid, nbs in around.items():
        near[eid] = tuple((distance, nb.id) for distance, nb in nbs)
        events.update((nb.id, nb) for _, nb in nbs)
    made: dict[str, tuple[str, ...]] = {}
    if events:
        tenant = next(iter(events.values())).tenant
        statuses = store.records.events_with_records(tenant, sorted(events))
        made = {eid: tuple(s) for eid, s in statuses.items()}
    return GatheredEvents(
        lexical=tuple(found.lexical),
        vector=tuple(found.vector),
        events=events,
        near=near,
        made=made,
    )


def closings(
    record_store: RecordStore,
    tenant: str,
    records: Iterable[Record],
    known: datetime | None,
    now: datetime,
) -> dict[str, datetime]:
    """When each INVALID record among `records` written by `known` was closed, from its
    history (its first INVALID entry; one written closed, as a late arrival, was
    closed when written). Nothing to read when `known` is None or not before `now`:
    every record is closed by now."""
    if known is None or known >= now:
        return {}
    out = {}
    for r in records:
        if r.status is Status.INVALID and r.created_at <= known:
            shut = [h.at for h in record_store.history(tenant, r.id) if h.status is Status.INVALID]
            out[r.id] = min(shut) if shut else r.created_at
    return out


def _best_of_each(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Vector hits once each (the best cosine), best first."""
    best: dict[str, float] = {}
    for rid, cosine in hits:
        best[rid] = max(cosine, best.get(rid, cosine))
    return sorted(best.items(), key=lambda h: h[1], reverse=True)


def _predecessors(
    record_store: RecordStore, tenant: str, known: datetime, records: dict[str, Record]
) -> None:
    """Fetch into `records` what each candidate written after `known` superseded, back
    along the `supersedes` chain to the record written by then (the one that may
    have been current at `known`)."""
    step = {r.supersedes for r in records.values() if r.created_at > known and r.supersedes}
    for _ in range(MAX_SUCCESSION):
        missing = sorted(s for s in step if s not in records)
        if missing:
            records.update((r.id, r) for r in record_store.get_records(tenant, missing))
        step = {
            prev
            for s in step
            if (rec := records.get(s)) is not None
            and rec.created_at > known
            and (prev := rec.supersedes)
        }
        if not step:
            break


def _successors(
    record_store: RecordStore, tenant: str, replaced: Iterable[Record], records: dict[str, Record]
) -> None:
    """Fetch into `records` the `superseded_by` chain of each replaced record."""
    following = {r.superseded_by for r in replaced if r.superseded_by}
    for _ in range(MAX_SUCCESSION):
        missing = sorted(s for s in following if s not in records)
        if missing:
            records.update((r.id, r) for r in record_store.get_records(tenant, missing))
        following = {
            nxt
            for s in following
            if (rec := records.get(s)) is not None and (nxt := rec.superseded_by)
        }
        if not following:
            break


def _source_events(
    event_log: EventLog, tenant: str, records: Iterable[Record], known: Mapping[str, Event]
) -> dict[str, Event]:
    """`known` and the other turns these records were made from."""
    ids = {e for r in records for e in r.source.event_ids} - set(known)
    if not ids:
        return dict(known)
    return dict(known) | {e.id: e for e in event_log.get_events(tenant, sorted(ids))}
