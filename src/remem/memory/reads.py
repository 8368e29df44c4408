"""The facade's read paths: recall with its arguments checked, pinned fields, exact
facts, profiles and records as of a time.

Each takes the memory's `Deps`; `Memory`'s methods of the same names delegate
here and document the behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from remem.documents.flows import check_sources
from remem.errors import InvalidInput
from remem.facts.about import records_about
from remem.facts.lookup import Fact, Profile, lookup, pinned_items, profile
from remem.facts.request import FactAsk, ProfileAsk, RecordsAsk
from remem.memory.deps import Deps
from remem.model import Packet, Record, Sensitivity, Status
from remem.policy.dataclasses import shown
from remem.policy.fields import canonical_field
from remem.policy.metadata import check_filter, matches
from remem.policy.scope import SHARED_ACTOR, actor_prefix, check_name, namespace_problem
from remem.policy.text import nfc
from remem.policy.validity import held, within_sensitivity
from remem.recall import RecallRequest, recall
from remem.recall.budget import pack
from remem.recall.gather import ahead
from remem.recall.gather import closings as closed_at
from remem.recall.request import RecallAsk
from remem.store.roles import FIELD_HELD_MOST, Scope
from remem.writes.checks import MAX_EVENT_CHARS, count, optional_time, sensitivity, statement


def recall_packet(deps: Deps, ask: RecallAsk) -> Packet:
    """The memory half of `Memory.ask`: the request checked, then ranked (and pinned)
    recall. `ask.actor` is the actor read (a face has resolved a key's own)."""
    req = recall_request(deps, ask)
    fields = deps.config.recall.pin if ask.pin is None else pin_fields(ask.pin)
    if not fields:
        with deps.store.search.reading(deps.tenant):  # the index check joins the recall's reads
            embedder, why = deps.searching()
            return recall(deps.store, embedder, req, deps.clock(), why_lexical=why)
    return _pinned_recall(deps, req, fields)


def recall_ahead(deps: Deps, ask: RecallAsk, index_checked: bool) -> None:
    """Begin the first reads of the recall `ask` will make (`remem.recall.gather.ahead`),
    and the embedder's index check when `index_checked`, so that on PostgreSQL they ride
    with the catch-up's round trip (`Backend.ahead`). A request that is not valid begins
    nothing: `recall_packet` refuses it where it always did. Where the store's reads make
    no round trips (SQLite), nothing is checked or begun."""
    if not deps.store.search.reads_ahead:
        return
    try:
        if "memory" not in check_sources(ask.sources):
            return
        req = recall_request(deps, ask)
    except InvalidInput:
        return
    if index_checked:
        deps.store.reindexing.index_state_ahead(deps.tenant)
    ahead(deps.store, req)


def recall_request(deps: Deps, ask: RecallAsk) -> RecallRequest:
    """`ask` checked, as the request recall reads; InvalidInput names what is wrong."""
    actor = check_name("actor", ask.actor)
    statement("query", ask.query, MAX_EVENT_CHARS)
    k, budget = ask.k, ask.budget
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInput(f"k must be an integer from 1 to 1000; got {shown(k)}")
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= 1_000_000:
        raise InvalidInput(f"budget must be an integer from 1 to 1000000; got {shown(budget)}")
    namespace = narrowed(deps, actor, ask.namespace)
    scope = Scope(deps.tenant, actor, namespace, check_filter(ask.metadata))
    when = optional_time(ask.as_of, "as_of")
    return RecallRequest(
        scope=scope,
        # the tenant's approved procedures apply to every actor
        shared=() if scope.narrowed else (Scope(deps.tenant, SHARED_ACTOR),),
        query=ask.query,
        k=k,
        budget=budget,
        known_at=optional_time(ask.known_at, "known_at") or when,
        valid_at=optional_time(ask.valid_at, "valid_at") or when,
        include_events=ask.include_events and not scope.narrowed,
        explain=ask.explain,
        max_sensitivity=sensitivity(ask.max_sensitivity),
    )


def _pinned_recall(deps: Deps, req: RecallRequest, fields: Sequence[str]) -> Packet:
    """`recall` with exact facts at the head, inside the same budget."""
    now = deps.clock()
    known, valid = req.axes(now)
    ceiling = req.max_sensitivity
    found = [fact_at(deps, req.scope.actor, f, known, valid, ceiling, now) for f in fields]
    items = pinned_items(found, req.scope.namespace_prefix)
    if req.scope.metadata:  # only the pinned values of records the filter selects
        held = deps.store.records.get_records(deps.tenant, [it.id for it in items])
        kept_ids = {r.id for r in held if matches(r.metadata, req.scope.metadata)}
        items = [it for it in items if it.id in kept_ids]
    kept, dropped, used = pack([(it, it.tokens) for it in items], req.budget)
    notes = [f"pinned field {f.field!r}: nothing known" for f in found if not f.candidates]
    if dropped:
        notes.append(f"{len(dropped)} pinned value(s) left out: over the budget")
    rest = req.budget - used
    if rest >= 1:
        embedder, why = deps.searching()
        ranked = recall(deps.store, embedder, replace(req, budget=rest), now, why_lexical=why)
    else:
        ranked = Packet((), (), 0, req.budget)
    ids = {it.id for it in kept}
    records = tuple(r for r in ranked.records if r.id not in ids)
    explain = ranked.explain
    if explain is not None:
        explain = {
            **explain,
            "pinned": [
                {
                    "field": f.field,
                    "status": f.status,
                    "records": [c.record_id for c in f.candidates],
                }
                for f in found
            ],
        }
    return replace(
        ranked,
        pinned=(*kept, *ranked.pinned),  # the fields asked for, then standing instructions
        records=records,
        tokens=used + sum(r.tokens for r in (*ranked.pinned, *records)),
        budget=req.budget,
        notes=(*notes, *ranked.notes),
        explain=explain,
    )


def fact(deps: Deps, ask: FactAsk) -> Fact:
    """`Memory.ask_fact`: one field of `ask.actor` by exact lookup."""
    actor = check_name("actor", ask.actor)
    now = deps.clock()
    known, valid = axes(deps, ask.as_of, ask.known_at, ask.valid_at, now)
    return fact_at(deps, actor, canonical_field(ask.field), known, valid, None, now)


def fact_at(
    deps: Deps,
    actor: str,
    field: str,
    known: datetime,
    valid: datetime,
    ceiling: Sensitivity | None,
    now: datetime,
) -> Fact:
    """The value of a canonical `field` of `actor`, known at `known` and valid at `valid`
    (`now`: the time the axes were taken at, so a lookup of now reads no closings):
    the field's own records are those the store reads as held then (at most
    `FIELD_HELD_MOST`), whatever the length of its history."""
    scope, store = Scope(deps.tenant, actor), deps.store.records
    when = (known, valid, known < now)  # closings: see `closings`

    def then(stored: str) -> list[Record]:
        return store.records_by_field(scope, stored, held_at=when, limit=FIELD_HELD_MOST)

    found = [r for r in records_about(store, scope, field, then) if within_sensitivity(r, ceiling)]
    return lookup(field, found, known, valid, closings(deps, found, known, now))


def closings(
    deps: Deps, records: Sequence[Record], known: datetime, now: datetime | None = None
) -> dict[str, datetime]:
    """When the INVALID records among `records` written by `known` were closed, from
    their history; nothing to read when `known` is `now` (default: the clock's now) or
    later (every one is closed by now)."""
    return closed_at(deps.store.records, deps.tenant, records, known, now or deps.clock())


# records about a field a profile reads, newest first, at most: a bounded read on the
# request path (HTTP, MCP); past it the profile says so (`Profile.capped`, `note`)
PROFILE_RECORDS_MOST = 2_000


def actor_profile(deps: Deps, ask: ProfileAsk) -> Profile:
    """`Memory.ask_profile`: every current field of `ask.actor` and its value, from the
    actor's newest `PROFILE_RECORDS_MOST` records about a field (active and invalid);
    when there are more, the profile says that older ones were not read."""
    actor = check_name("actor", ask.actor)
    budget = ask.budget
    if budget is not None and (
        not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 1_000_000
    ):
        raise InvalidInput(f"budget must be an integer from 1 to 1000000; got {shown(budget)}")
    known, valid = axes(deps, ask.as_of, ask.known_at, ask.valid_at)
    recs = deps.store.records.list_records(
        Scope(deps.tenant, actor),
        [Status.ACTIVE, Status.INVALID],
        PROFILE_RECORDS_MOST + 1,  # one more: whether any was left
        fielded=True,
    )
    capped = PROFILE_RECORDS_MOST if len(recs) > PROFILE_RECORDS_MOST else 0
    recs = recs[:PROFILE_RECORDS_MOST]
    ceiling = sensitivity(ask.max_sensitivity)
    closed = closings(deps, recs, known)
    return profile(actor, recs, known, valid, ceiling, budget, closed, capped)


def axes(
    deps: Deps, as_of: object, known_at: object, valid_at: object, now: datetime | None = None
) -> tuple[datetime, datetime]:
    """(known at, valid at): each given, else `as_of`, else now (`now`, else the clock's)."""
    base = optional_time(as_of, "as_of") or now or deps.clock()
    known = optional_time(known_at, "known_at") or base
    valid = optional_time(valid_at, "valid_at") or base
    return known, valid


def narrowed(deps: Deps, actor: str, namespace: object) -> str | None:
    """`namespace` checked and in NFC (as namespaces are stored), or None: it must lie
    under the actor's `/tenants/{tenant}/actors/{actor}/` (a request may narrow its
    scope, never widen it)."""
    if namespace is None:
        return None
    if (problem := namespace_problem(namespace)) is not None:
        raise InvalidInput(problem)
    assert isinstance(namespace, str)  # namespace_problem refuses any other
    prefix = actor_prefix(deps.tenant, actor)
    namespace = nfc(namespace)
    if not namespace.startswith(prefix):
        raise InvalidInput(f"namespace must lie under {prefix}")
    return namespace


def records(deps: Deps, ask: RecordsAsk) -> list[Record]:
    """`Memory.ask_records`: an actor's records, newest first (as of a time, with `as_of`);
    with `field`, only those about it (read by the field's index, however many other
    records the actor has); with `namespace`, only those under it; with `metadata`,
    only those whose metadata has each of its keys with an equal value."""
    actor = check_name("actor", ask.actor)
    all, limit, field, namespace = ask.all, count("limit", ask.limit), ask.field, ask.namespace
    pairs = check_filter(ask.metadata)
    scope = Scope(deps.tenant, actor, narrowed(deps, actor, namespace), pairs)
    at = optional_time(ask.as_of, "as_of")
    every = [Status.ACTIVE, Status.INVALID]
    store, now = deps.store.records, deps.clock()
    if field is not None:

        def own(stored: str) -> list[Record]:  # the newest `limit` the answer may hold
            if at is not None:
                then = (at, at, at < now)
                return store.records_by_field(scope, stored, held_at=then, limit=limit)
            return store.records_by_field(scope, stored, current=not all, limit=limit)

        about = [
            r
            for r in records_about(store, scope, canonical_field(field), own)  # and invalid
            if (scope.namespace_prefix is None or r.namespace.startswith(scope.namespace_prefix))
            and matches(r.metadata, pairs)
        ]
        recs = sorted(about, key=lambda r: r.valid_from, reverse=True)
        if at is None:
            return [r for r in recs if all or r.status is Status.ACTIVE][:limit]
    elif at is not None:
        recs = deps.store.records.list_records(scope, every)
    else:
        return deps.store.records.list_records(scope, None if all else [Status.ACTIVE], limit)
    closed = closings(deps, recs, at, now)
    return [r for r in recs if held(r, at, at, closed)][:limit]


def records_page(deps: Deps, ask: RecordsAsk, after: tuple[datetime, str] | None) -> list[Record]:
    """Up to `ask.limit` of `records` in the order of their unique key (valid_from, id),
    newest first, after `after` (None: from the newest): a keyset page. The plain list is
    read by the store's query after the key; with `field` or `as_of` the list is the one
    `records` reads whole (its `limit`, 10,000), cut after the key here. `metadata`
    narrows both as in `records`."""
    if ask.field is None and ask.as_of is None:
        actor = check_name("actor", ask.actor)
        limit = count("limit", ask.limit)
        pairs = check_filter(ask.metadata)
        scope = Scope(deps.tenant, actor, narrowed(deps, actor, ask.namespace), pairs)
        statuses = None if ask.all else [Status.ACTIVE]
        return deps.store.records.records_page(scope, statuses, after, limit)
    found = records(deps, replace(ask, limit=10_000))
    found.sort(key=lambda r: (r.valid_from, r.id), reverse=True)
    if after is not None:
        found = [r for r in found if (r.valid_from, r.id) < after]
    return found[: ask.limit]


def pin_fields(pin: object) -> list[str]:
    """The fields a caller pins, canonical and once each; at most 20."""
    if isinstance(pin, str) or not isinstance(pin, Sequence):
        raise InvalidInput("pin must be a list of field names")
    if len(pin) > 20:
        raise InvalidInput(f"at most 20 fields may be pinned; got {len(pin)}")
    return list(dict.fromkeys(canonical_field(f) for f in pin))
