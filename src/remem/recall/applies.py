"""Gathering the standing preferences a request applies to (see `remem.policy.applies`).

A request for a recommendation, plan, booking or suggestion is placed in its
life domains by the cosine of its query vector with each domain's sentences.
For each of those domains, and for the domains that bound every request
(money, physical limits), the scope's records nearest to the domain (the mean
of its sentences' vectors) are searched; each found record's own domains come
from its stored vector the same way. Ranking (`remem.recall.rank`) keeps the
standing ones whose domains meet the request's, and scores them by their
cosine with the query: what is gathered here is only what they apply to.

The domain sentences are embedded once per embedder (by name) and kept for
the process; nothing is embedded at import.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder
from remem.embed.minilm.embedder import NAME as MINILM
from remem.embed.minilm.onnx_encoder import cache_dir
from remem.forksafe import ForkSafeLock
from remem.model import Record
from remem.policy.applies import DOMAINS, domains_of, is_request
from remem.store.roles import Scope, Store

Vector = npt.NDArray[np.float32]

# Records searched near each domain (the answers are kept per scope version, `_near`).
# PrefEval development hit@1/@5/@10 at 50 per actor:
# 15 -> 0.366/0.820/0.958, 25 -> 0.374/0.838/0.964, 50 -> 0.370/0.836/0.962 (10 per actor
# the same at all three); at 100,000 records a request fetches what is found, so 25 keeps
# the bench's p95 at 36.6 ms where 50 gave 46.7.
POOL = 25

_CACHE: dict[str, _DomainVectors] = {}
_LOCK = ForkSafeLock()


@dataclass(frozen=True, slots=True)
class Applicable:
    """What a recall gathered for the standing preferences of a request."""

    domains: tuple[str, ...] = ()  # the request's; empty when it is not a request
    of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # record id -> its domains
    records: Mapping[str, Record] = field(default_factory=dict)  # the records found
    cosines: Mapping[str, float] = field(default_factory=dict)  # id -> cosine with the query


@dataclass(frozen=True, slots=True)
class _DomainVectors:
    sentences: Vector  # every domain's sentences, one row each
    owner: tuple[int, ...]  # the domain (index into DOMAINS) of each row
    centres: Vector  # each domain's normalised mean sentence vector, one row each

    def cosines(self, vectors: Vector) -> npt.NDArray[np.float64]:
        """Each vector's cosine with each domain: the best of its sentences'."""
        sims = vectors @ self.sentences.T
        out = np.full((len(vectors), len(DOMAINS)), -1.0)
        for col, dom in enumerate(self.owner):
            out[:, dom] = np.maximum(out[:, dom], sims[:, col])
        return out


def domain_vectors(embedder: Embedder) -> _DomainVectors:
    """The domains' sentence vectors of this embedder, embedded on first use."""
    with _LOCK:
        cached = _CACHE.get(embedder.name)
    if cached is not None:
        return cached
    pairs = [(i, s) for i, d in enumerate(DOMAINS) for s in d.sentences]
    sentences = sentence_vectors(embedder, [s for _, s in pairs], "domains")
    owner = tuple(i for i, _ in pairs)
    centres = np.zeros((len(DOMAINS), sentences.shape[1]), dtype=np.float32)
    for row, dom in zip(sentences, owner, strict=True):
        centres[dom] += row
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-9)
    made = _DomainVectors(sentences, owner, centres)
    with _LOCK:
        _CACHE[embedder.name] = made
    return made


def sentence_vectors(embedder: Embedder, sentences: list[str], label: str) -> Vector:
    """Fixed sentences embedded (`label` names them: "domains", "constraints"): for
    all-MiniLM-L6-v2 (its weights ship with remem, so its name fixes its vectors),
    read from the model cache folder when an earlier process wrote them there, else
    embedded and written for the next one.

    Embedding the 48 sentences took a fresh process's first request about 240 ms
    of its first recall (`remem bench --compare`, `cold_first_recall_ms`); reading
    them takes well under a millisecond. The file is named by the model and a
    digest of the sentences, so changed descriptions are embedded anew; a file that
    does not read as the right matrix is embedded again and replaced.
    """
    if not embedder.name.startswith(MINILM):
        return embedder.embed(sentences).astype(np.float32)
    digest = hashlib.sha256("\n".join([embedder.name, *sentences]).encode()).hexdigest()[:16]
    path = cache_dir() / f"{label}-{embedder.name}-{digest}.npy"
    with contextlib.suppress(OSError, ValueError):
        held = np.load(path, allow_pickle=False)
        if held.dtype == np.float32 and held.shape[0] == len(sentences) and np.isfinite(held).all():
            return np.asarray(held)
    made = embedder.embed(sentences).astype(np.float32)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, made, allow_pickle=False)
        os.replace(tmp, path)  # whole or absent under the real name
    return made


def gather_applicable(
    store: Store,
    embedder: Embedder | None,
    scopes: Sequence[Scope],
    text: str,
    query: Vector | None,
    at: datetime,
    past: bool = False,
    known: Mapping[str, Record] | None = None,
) -> Applicable:
    """The request's domains and the records near them, with their domains and cosines.

    Nothing is searched for a text that is not a request, without an embedder
    or when the request is in no domain. `known` holds records the recall has
    already read (its candidates): those are not read again, and each is placed in
    its domains too, whether or not it is among the `POOL` nearest a domain's
    centre. With more of a person's records about one domain than `POOL`, a
    candidate the search did not reach got none of the bonus its neighbours got
    and ranked below them by that accident (PrefEval, 50 per actor: "Does not want
    to crate train their dog" for "How can I manage my dog's behavior?"). Placing
    them costs one read of their stored vectors per request.
    """
    if embedder is None or query is None or not is_request(text):
        return Applicable()
    vecs = domain_vectors(embedder)
    asked = domains_of(text, list(vecs.cosines(query[None, :])[0]))
    if not asked:
        return Applicable()
    wanted = [i for i, d in enumerate(DOMAINS) if d.name in asked or d.everywhere]
    model = embedder.name
    stored: dict[str, Vector] = {}
    records: dict[str, Record] = {}
    of: dict[str, tuple[str, ...]] = {}
    for scope in scopes:
        near = _near(store, vecs, scope, model, wanted, at, past, known or {})
        for i in wanted:
            for rid in near.found[i]:
                if rid in near.records:
                    stored[rid] = near.vectors[rid]
                    records[rid] = near.records[rid]
                    of[rid] = near.domains[rid]
    others = sorted(r for r in (known or {}) if r not in records)
    if others and scopes:  # the recall's own candidates, near a domain's centre or not
        theirs = store.search.record_vectors(scopes[0].tenant, others, model)
        for rid, domains in _placed(vecs, theirs, known or {}).items():
            stored[rid], records[rid], of[rid] = theirs[rid], (known or {})[rid], domains
    ids = sorted(records)
    if not ids:
        return Applicable(domains=asked)
    cosines = np.stack([stored[r] for r in ids]).astype(np.float32) @ query
    return Applicable(
        domains=asked,
        of={r: of[r] for r in ids},
        records=records,
        cosines={r: float(cosines[n]) for n, r in enumerate(ids)},
    )


def _placed(
    vecs: _DomainVectors, stored: Mapping[str, Vector], records: Mapping[str, Record]
) -> dict[str, tuple[str, ...]]:
    """The domains of these records, from their stored vectors (`domains_of`)."""
    ids = sorted(stored)
    if not ids:
        return {}
    per_domain = vecs.cosines(np.stack([stored[r] for r in ids]).astype(np.float32))
    return {r: domains_of(records[r].text, list(per_domain[n])) for n, r in enumerate(ids)}


@dataclass(frozen=True, slots=True)
class _Near:
    """The records of one scope nearest to some domains' centres, with their vectors and
    domains, as read at `at` when the scope was at `version`."""

    version: int | None
    at: datetime
    found: Mapping[int, tuple[str, ...]]  # domain index -> record ids nearest its centre
    records: Mapping[str, Record]
    vectors: Mapping[str, Vector]
    domains: Mapping[str, tuple[str, ...]]  # record id -> its domains (`domains_of`)


# The scope's records near every domain, read once per scope version and reused for
# at most CACHE_SECONDS of recall time: a record dated to become valid later (rare)
# joins within that time even if nothing is written meanwhile. Expired, superseded or
# forgotten records are set aside by ranking (each write bumps the version anyway).
# The kept records are the scope's own: an erasure drops its scope's (`drop_scope`), a
# read of another version replaces them, and every `LINGER_SECONDS` those past
# CACHE_SECONDS go (`drop_past`: what another process erased in a scope no request
# reads again stays at most CACHE_SECONDS + LINGER_SECONDS).
CACHE_SECONDS = 60.0
CACHED_SCOPES = 256
_NEAR: weakref.WeakKeyDictionary[Store, OrderedDict[tuple[str, str, str], _Near]] = (
    weakref.WeakKeyDictionary()
)


def drop_scope(store: Store, tenant: str, actor: str) -> None:
    """Forget the records kept near the domains for one scope of `store` (an erasure)."""
    with _LOCK:
        held = _NEAR.get(store, OrderedDict())
        for key in [k for k in held if k[:2] == (tenant, actor)]:
            del held[key]


def holds_near(store: Store, tenant: str, actor: str) -> frozenset[str]:
    """The ids of the records kept near the domains for one scope of `store`."""
    with _LOCK:
        held = _NEAR.get(store, OrderedDict())
        return frozenset(r for k, near in held.items() if k[:2] == (tenant, actor)
                         for r in near.records)  # fmt: skip


def drop_past(at: datetime) -> None:
    """Drop what is kept for longer than CACHE_SECONDS of recall time at `at` (never
    served again), of every store (`remem.recall.gather`'s sweep, `remem.linger`)."""
    with _LOCK:
        for held in list(_NEAR.values()):
            for key in [k for k, n in held.items()
                        if not 0 <= (at - n.at).total_seconds() < CACHE_SECONDS]:  # fmt: skip
                del held[key]


def _near(
    store: Store,
    vecs: _DomainVectors,
    scope: Scope,
    model: str,
    wanted: Sequence[int],
    at: datetime,
    past: bool,
    known: Mapping[str, Record],
) -> _Near:
    """The scope's records nearest to the `wanted` domains' centres.

    Where the store keeps a scope version and the recall reads the present, every
    domain's centre is searched in one pass and the answer is kept for the
    version (`CACHE_SECONDS` at most): a request of any domain then reads
    nothing but the version. At 100,000 records (`remem bench`, the request
    "which seat should I book" on a busy machine) this step took 70 ms p50 per
    request before and 0.4 ms after; the first request of a version pays one
    search of all twelve centres (116 ms at that load, against 46 for four).
    """
    version = None if past or scope.narrowed else store.search.scope_version(scope)
    key = (scope.tenant, scope.actor, model)
    if version is not None:
        with _LOCK:
            held = _NEAR.get(store, OrderedDict()).get(key)
        if (
            held is not None
            and held.version == version
            and 0 <= (at - held.at).total_seconds() < CACHE_SECONDS
        ):
            return held
        wanted = range(len(DOMAINS))  # all of them, for the next request of any domain
    centres = [vecs.centres[i] for i in wanted]
    hits = store.search.vector_search_many(scope, model, centres, POOL, at, include_invalid=past)
    found = {i: tuple(rid for rid, _ in h) for i, h in zip(wanted, hits, strict=True)}
    every = sorted({rid for ids in found.values() for rid in ids})
    stored = store.search.record_vectors(scope.tenant, every, model) if every else {}
    fresh = store.records.get_records(scope.tenant, sorted(r for r in stored if r not in known))
    records = {r: known[r] for r in stored if r in known} | {r.id: r for r in fresh}
    ids = sorted(records)
    domains = _placed(vecs, {r: stored[r] for r in ids}, records)
    near = _Near(version, at, found, records, {r: stored[r] for r in ids}, domains)
    if version is not None:
        with _LOCK:
            held_scopes = _NEAR.setdefault(store, OrderedDict())
            held_scopes[key] = near
            held_scopes.move_to_end(key)
            while len(held_scopes) > CACHED_SCOPES:
                held_scopes.popitem(last=False)
    return near
