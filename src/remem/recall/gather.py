"""Gathering: every store call of a recall, into one value that ranking reads.

What a recall may need is fetched here and nowhere else: the word and vector
hits over the scope's records and raw events, the records themselves and the
successors of superseded ones (their whole `superseded_by` chain, up to
`MAX_SUCCESSION` steps), the turns the records were made from (their
speakers), the turns either side of each event candidate, and which records
each of those events was made into. Nothing is decided here about what may be
returned or how it scores: `remem.recall.rank` decides that from this value
alone, so it can be tested without a store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from remem.embed.base import Embedder
from remem.model import Event, Record, Status
from remem.recall.events import NEIGHBOUR_SHARES, EventSearch, GatheredEvents, speakers_of
from remem.recall.fusion import candidate_ids
from remem.recall.query import Query, understand, with_speakers
from remem.recall.request import RecallRequest
from remem.store.base import Hit, Store

POOL = 50  # how many candidates each retriever contributes
MAX_SUCCESSION = 8  # how far along a supersession chain a match is passed on


@dataclass(frozen=True, slots=True)
class Gathered:
    """Everything one recall fetched; `remem.recall.rank.rank` reads nothing else."""

    request: RecallRequest
    query: Query
    lexical: tuple[Hit, ...] = ()
    vector: tuple[tuple[str, float], ...] = ()
    # the cosines of superseded candidates (not valid now, so no vector search found them)
    replaced_vector: tuple[tuple[str, float], ...] = ()
    records: Mapping[str, Record] = field(default_factory=dict)  # candidates and successors
    sources: Mapping[str, Event] = field(default_factory=dict)  # turns records came from
    events: GatheredEvents | None = None  # None when events were not asked for
    vectors: bool = True  # whether the query was embedded (cosines are in the hits)
    notes: tuple[str, ...] = ()


def gather(store: Store, embedder: Embedder | None, req: RecallRequest, now: datetime) -> Gathered:
    """Fetch the candidates of one recall and what ranking them needs."""
    at = req.as_of or now
    notes: list[str] = []
    query_vec = None
    if embedder is None:
        notes.append("no embedding model installed: recall is lexical only")
    else:
        query_vec = embedder.embed([req.query])[0]
    model = embedder.name if embedder is not None else ""
    query = understand(req.query)
    scopes = (req.scope, *req.shared)

    def search_records(words: str) -> list[Hit]:
        return [h for sc in scopes for h in store.search_records(sc, words, POOL)]

    # the events first: their speakers tell which words of the query are names
    found = None
    if req.include_events:
        found = search = EventSearch.run(store, req.scope, query.words, query_vec, model, at)
        query = _learn_speakers(
            query, speakers_of(search.events.values()), lambda w: search.search_words(store, w)
        )
    vector: list[tuple[str, float]] = []
    if query_vec is not None:
        for scope in scopes:
            vector.extend(
                store.vector_search(
                    scope, model, query_vec, POOL, at, include_invalid=req.as_of is not None
                )
            )
    lexical = search_records(query.words)
    records = {r.id: r for r in store.get_records(req.scope.tenant, candidate_ids(lexical, vector))}
    if found is not None:
        sources = dict(found.events)
    else:  # no event search ran: the turns the records came from tell the speakers
        sources = _source_events(store, req.scope.tenant, records.values(), {})

        def search_again(words: str) -> None:
            lexical[:] = search_records(words)
            missing = [r for r in candidate_ids(lexical, vector) if r not in records]
            records.update((r.id, r) for r in store.get_records(req.scope.tenant, missing))

        query = _learn_speakers(query, speakers_of(sources.values()), search_again)

    replaced = sorted(
        rid
        for rid in candidate_ids(lexical, vector)
        if req.as_of is None
        and (rec := records.get(rid)) is not None
        and rec.status is Status.INVALID
        and rec.superseded_by
    )
    replaced_vector: list[tuple[str, float]] = []
    if replaced and query_vec is not None:
        stored = store.record_vectors(req.scope.tenant, replaced, model)
        replaced_vector = [(rid, float(vec @ query_vec)) for rid, vec in stored.items()]
    _successors(store, req.scope.tenant, [records[r] for r in replaced], records)
    if query.speakers:
        sources = _source_events(store, req.scope.tenant, records.values(), sources)
    return Gathered(
        request=req,
        query=query,
        lexical=tuple(lexical),
        vector=tuple(vector),
        replaced_vector=tuple(replaced_vector),
        records=records,
        sources=sources,
        events=_gather_events(store, found) if found is not None else None,
        vectors=query_vec is not None,
        notes=tuple(notes),
    )


def _gather_events(store: Store, found: EventSearch) -> GatheredEvents:
    """The event candidates, the turns around each, and the records made of all of them."""
    ids = candidate_ids(found.lexical, found.vector)
    candidates = [found.events[e] for e in ids if e in found.events]
    events = dict(found.events)
    around = store.events_near(candidates, len(NEIGHBOUR_SHARES)) if candidates else {}
    near: dict[str, tuple[tuple[int, str], ...]] = {}
    for eid, nbs in around.items():
        near[eid] = tuple((distance, nb.id) for distance, nb in nbs)
        events.update((nb.id, nb) for _, nb in nbs)
    made: dict[str, tuple[str, ...]] = {}
    if events:
        tenant = next(iter(events.values())).tenant
        statuses = store.events_with_records(tenant, sorted(events))
        made = {eid: tuple(s) for eid, s in statuses.items()}
    return GatheredEvents(
        lexical=tuple(found.lexical),
        vector=tuple(found.vector),
        events=events,
        near=near,
        made=made,
    )


def _successors(
    store: Store, tenant: str, replaced: Iterable[Record], records: dict[str, Record]
) -> None:
    """Fetch into `records` the `superseded_by` chain of each replaced record."""
    following = {r.superseded_by for r in replaced if r.superseded_by}
    for _ in range(MAX_SUCCESSION):
        missing = sorted(s for s in following if s not in records)
        if missing:
            records.update((r.id, r) for r in store.get_records(tenant, missing))
        following = {
            nxt
            for s in following
            if (rec := records.get(s)) is not None and (nxt := rec.superseded_by)
        }
        if not following:
            break


def _learn_speakers(query: Query, speakers: set[str], search_again: Callable[[str], None]) -> Query:
    """`query` knowing the speakers it names; the word search runs again when names left it."""
    named = with_speakers(query, speakers)
    if named.words != query.words:
        search_again(named.words)
    return named


def _source_events(
    store: Store, tenant: str, records: Iterable[Record], known: Mapping[str, Event]
) -> dict[str, Event]:
    """`known` and the other turns these records were made from."""
    ids = {e for r in records for e in r.source.event_ids} - set(known)
    if not ids:
        return dict(known)
    return dict(known) | {e.id: e for e in store.get_events(tenant, sorted(ids))}
