"""Raw events of the thread log as recall candidates, on the records' scale.

An event scores like a record (see `remem.recall.fusion`), plus:

- **neighbours**: the turn that asks often shares the query's words while the
  turn after it holds the answer, in words of its own ("Yes! Last week, at
  the lake."). The events on either side of each of the best-matching events
  earn a share of its score that halves with each step away (one half next
  to it, one quarter two turns away), whether or not they match anything
  themselves; an event keeps the best share it is offered.
- **the speaker and the date**: an event said by a speaker the query names,
  or within a time span it names, earns a bonus (`Query.bonus`).

What cannot be returned (an event after the as-of time, one whose text was
forgotten, one whose records were superseded or removed) is set aside before
scoring: it neither sets the scale nor lends a neighbour a bonus.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from remem.model import Event, Status
from remem.recall.fusion import candidate_ids, fuse, without_weak_vectors
from remem.recall.query import Query
from remem.store.base import Hit, Scope, Store

EVENT_POOL = 50  # how many events each retriever contributes
NEIGHBOURS_OF = 20  # the best events whose neighbours earn a share of their score
NEIGHBOUR_SHARES = (0.5, 0.25)  # the share one and two turns away


@dataclass
class EventSearch:
    """The event candidates of one recall: word hits, vector hits and the events."""

    scope: Scope
    lexical: list[Hit] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    events: dict[str, Event] = field(default_factory=dict)

    @classmethod
    def run(
        cls,
        store: Store,
        scope: Scope,
        words: str,
        query_vec: npt.NDArray[np.float32] | None,
        model: str,
        at: datetime,
    ) -> EventSearch:
        """Search the scope's events by words and by vector, and fetch them."""
        found = cls(scope)
        if query_vec is not None:
            found.vector = store.vector_search_events(scope, model, query_vec, EVENT_POOL, at)
        found.search_words(store, words)
        return found

    def search_words(self, store: Store, words: str) -> None:
        """(Re)run the word search and fetch the events not fetched yet."""
        self.lexical = store.search_events(self.scope, words, EVENT_POOL)
        missing = [e for e in candidate_ids(self.lexical, self.vector) if e not in self.events]
        if missing:
            self.events.update((e.id, e) for e in store.get_events(self.scope.tenant, missing))


def speakers_of(events: Iterable[Event]) -> set[str]:
    """Who said these events (their `speaker` metadata)."""
    return {s for e in events if isinstance(s := e.metadata.get("speaker"), str)}


@dataclass
class ScoredEvents:
    """The returnable events of one recall (candidates and their neighbours)."""

    events: dict[str, Event] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    records_made: dict[str, int] = field(default_factory=dict)  # event id -> its active records


def score_events(
    store: Store,
    found: EventSearch,
    query: Query,
    at: datetime,
    rejected: dict[str, str],
) -> ScoredEvents:
    """The returnable events (candidates and their neighbours), scored."""
    vector = without_weak_vectors(found.lexical, found.vector, rejected)
    ids = candidate_ids(found.lexical, vector)
    out = ScoredEvents()
    _returnable(store, [found.events[e] for e in ids if e in found.events], at, rejected, out)
    candidates = dict(out.events)
    base = fuse(found.lexical, vector, candidates)
    base = {eid: base.get(eid, 0.0) for eid in candidates}

    share, near = _neighbour_shares(store, candidates, base)
    _returnable(store, near.values(), at, rejected, out)
    for eid, ev in out.events.items():
        bonus = query.bonus([ev.metadata.get("speaker")], ev.time)
        out.scores[eid] = base.get(eid, 0.0) + share.get(eid, 0.0) + bonus
    return out


def _neighbour_shares(
    store: Store, candidates: dict[str, Event], base: dict[str, float]
) -> tuple[dict[str, float], dict[str, Event]]:
    """What each neighbour of the best candidates is offered, and the neighbours
    that are not candidates themselves."""
    ranked = sorted(base, key=lambda e: base[e], reverse=True)[:NEIGHBOURS_OF]
    best = [eid for eid in ranked if base[eid] > 0]
    around = store.events_near([candidates[e] for e in best], len(NEIGHBOUR_SHARES))
    share: dict[str, float] = defaultdict(float)
    near: dict[str, Event] = {}
    for eid in best:
        for distance, nb in around.get(eid, []):
            share[nb.id] = max(share[nb.id], NEIGHBOUR_SHARES[distance - 1] * base[eid])
            if nb.id not in candidates:
                near[nb.id] = nb
    return share, near


def _returnable(
    store: Store,
    events: Iterable[Event],
    at: datetime,
    rejected: dict[str, str],
    out: ScoredEvents,
) -> None:
    """Add the events that may be returned to `out`; record the others in `rejected`."""
    events = list(events)
    if not events:
        return
    statuses = store.events_with_records(events[0].tenant, [e.id for e in events])
    for ev in events:
        made = statuses.get(ev.id, [])
        if ev.time > at:
            rejected[ev.id] = "event after the as-of time"
        elif not ev.text.strip():
            rejected[ev.id] = "event text was forgotten"
        elif set(made) - {Status.ACTIVE.value}:
            rejected[ev.id] = "its records were superseded or removed"
        else:
            out.events[ev.id] = ev
            out.records_made[ev.id] = len(made)
