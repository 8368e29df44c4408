"""Finding the turns that state a standing constraint (see `remem.policy.constraints`).

For a request, the scope's events nearest to each constraint sentence are
searched (`PER_SENTENCE` each); a user turn whose cosine with a sentence reaches
`CONSTRAINT_COSINE` states that kind of constraint, and the `MOST` closest
join the request's candidates. Ranking (`remem.recall.rank`) lets them past the
relevance floor and places them at `PLACE` at least: a constraint bounds any
plan, though it shares no word and little meaning with the request.

Only a request in some life domain (`remem.recall.applies`, `Applicable.domains`) is
bounded so: one near none ("the best way to stay updated on AI", "explain TCP and
UDP") asks for knowledge, not for a plan that a diet, a dog or a fear bounds. On
the PrefEval development set (10 per actor) three such turns stood at the place
above "I dislike reading long articles" for "stay updated on the latest developments
in AI" (7th; dense 4th); without them it is 4th. No other figure of the development
sets moved (docs/decisions/prefeval-topics.md).

The answer is kept per scope version (an added or embedded event bumps it) for
at most `CACHE_SECONDS`, as `remem.recall.applies` keeps the records near each
domain: a request of any kind then reads nothing but the version. The turns kept are
the scope's own: an erasure drops its scope's (`drop_scope`), and every
`LINGER_SECONDS` those past `CACHE_SECONDS` go (`drop_past`, `remem.linger`).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder
from remem.forksafe import ForkSafeLock
from remem.model import Event, Role
from remem.policy.constraints import CONSTRAINT_COSINE, MOST, SENTENCES
from remem.recall.applies import sentence_vectors
from remem.store.roles import Scope, Store

Vector = npt.NDArray[np.float32]

PER_SENTENCE = 5  # turns searched near each constraint sentence
CACHE_SECONDS = 60.0
CACHED_SCOPES = 256

_LOCK = ForkSafeLock()
_VECTORS: dict[str, Vector] = {}
_HELD: weakref.WeakKeyDictionary[Store, OrderedDict[tuple[str, str, str], _Held]] = (
    weakref.WeakKeyDictionary()
)


def drop_scope(store: Store, tenant: str, actor: str) -> None:
    """Forget the turns kept for one scope of `store` (after an erasure)."""
    with _LOCK:
        held = _HELD.get(store, OrderedDict())
        for key in [k for k in held if k[:2] == (tenant, actor)]:
            del held[key]


def drop_past(at: datetime) -> None:
    """Drop what is kept for longer than `CACHE_SECONDS` of recall time at `at` (never
    served again), of every store (`remem.recall.gather`'s sweep, `remem.linger`)."""
    with _LOCK:
        for held in list(_HELD.values()):
            for key in [k for k, h in held.items()
                        if not 0 <= (at - h.at).total_seconds() < CACHE_SECONDS]:  # fmt: skip
                del held[key]


def holds_turns(store: Store, tenant: str, actor: str) -> frozenset[str]:
    """The ids of the events kept as stating a constraint for one scope of `store`."""
    with _LOCK:
        held = _HELD.get(store, OrderedDict())
        return frozenset(s.event.id for k, h in held.items() if k[:2] == (tenant, actor)
                         for s in h.stated)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Stated:
    """A user turn that states a standing constraint: the turn, its kind, how close."""

    event: Event
    kind: str
    cosine: float


@dataclass(frozen=True, slots=True)
class _Held:
    version: int
    at: datetime
    stated: tuple[Stated, ...]


def _sentences(embedder: Embedder) -> Vector:
    with _LOCK:
        held = _VECTORS.get(embedder.name)
    if held is not None:
        return held
    made = sentence_vectors(embedder, [s for _, s in SENTENCES], "constraints")
    with _LOCK:
        _VECTORS[embedder.name] = made
    return made


def standing_turns(
    store: Store, embedder: Embedder, scope: Scope, at: datetime
) -> tuple[Stated, ...]:
    """The scope's user turns that state a standing constraint, closest first (`MOST`)."""
    version = None if scope.namespace_prefix else store.search.scope_version(scope)
    key = (scope.tenant, scope.actor, embedder.name)
    if version is not None:
        with _LOCK:
            held = _HELD.get(store, OrderedDict()).get(key)
        if (
            held is not None
            and held.version == version
            and 0 <= (at - held.at).total_seconds() < CACHE_SECONDS
        ):
            return held.stated
    best: dict[str, tuple[float, str]] = {}
    for (kind, _), vec in zip(SENTENCES, _sentences(embedder), strict=True):
        for eid, cosine in store.search.vector_search_events(
            scope, embedder.name, vec, PER_SENTENCE, at
        ):
            if cosine >= CONSTRAINT_COSINE and cosine > best.get(eid, (-1.0, ""))[0]:
                best[eid] = (cosine, kind)
    events = store.events.get_events(scope.tenant, sorted(best)) if best else []
    said = [Stated(ev, best[ev.id][1], best[ev.id][0]) for ev in events if ev.role is Role.USER]
    stated = tuple(sorted(said, key=lambda s: s.cosine, reverse=True)[:MOST])
    if version is not None:
        with _LOCK:
            scopes = _HELD.setdefault(store, OrderedDict())
            scopes[key] = _Held(version, at, stated)
            scopes.move_to_end(key)
            while len(scopes) > CACHED_SCOPES:
                scopes.popitem(last=False)
    return stated
