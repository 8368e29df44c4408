"""Exact facts: one field's value, and an actor's profile, by structured lookup.

Pure functions over records the store already returned; no similarity, no I/O.

Bi-temporal reads: a record is *held* at (`known_at`, `valid_at`) as
`remem.policy.validity.held` defines it (recall reads by the same rule): known
then (written by `known_at`, not erased) and valid then as far as was known then.
So `as_of=T` (both axes at T) is what the agent believed at T, and `valid_at=T`
alone is what is known now about T.

Within one field, the held records decide: none is `not_found`; values that all
agree are `found` (the record of highest authority, then the newest); two or
more different values are a `conflict` (kept side by side by consolidation
because a newer statement had lower authority), each candidate with provenance.
Records of several fields (a family asked for by its name, "allergies" of
`allergy:shellfish` and `allergy:sesame`) are decided field by field and answered
together: the asked field's own first (then the family's named fields: "diet" for
"dietary restrictions"), then the others by authority and recency,
each candidate naming its `field`; `found` when no field of them conflicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from remem.model import Kind, PacketItem, Record, Sensitivity, Status, iso
from remem.policy.fields import family_of, stored_field
from remem.policy.precedence import RANK
from remem.policy.validity import Closings, held, within_sensitivity
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack

FOUND, CONFLICT, NOT_FOUND = "found", "conflict", "not_found"
_NOT_FACTS = (Kind.SUMMARY,)  # a summary's field is its session key, not a fact
RANK_OF = {a.value: n for a, n in RANK.items()}  # precedence by authority name


@dataclass(frozen=True, slots=True)
class FactValue:
    """One record's answer for a field, with its provenance."""

    record_id: str
    value: str
    kind: str
    namespace: str
    text: str
    authority: str
    sensitivity: str
    source_date: datetime  # when it was stated (the record's valid_from)
    valid_from: datetime
    valid_until: datetime | None
    known_since: datetime  # when remem wrote it
    source: dict[str, Any]
    field: str = ""  # the field it is the value of (one of a family's, for a family)

    def as_dict(self) -> dict[str, Any]:
        """The value and its provenance as JSON-ready data."""
        return {
            "record_id": self.record_id,
            "value": self.value,
            "kind": self.kind,
            "namespace": self.namespace,
            "text": self.text,
            "authority": self.authority,
            "sensitivity": self.sensitivity,
            "source_date": iso(self.source_date),
            "valid_from": iso(self.valid_from),
            "valid_until": iso(self.valid_until),
            "known_since": iso(self.known_since),
            "source": self.source,
            "field": self.field,
        }


@dataclass(frozen=True, slots=True)
class Fact:
    """The answer for one field: `found` (one value), `conflict` or `not_found`.

    `candidates` holds the found value alone, or every conflicting value (highest
    authority, then newest, first), or nothing; for a family, those of each of its
    fields, the asked field's own first.
    """

    field: str
    status: str
    known_at: datetime
    valid_at: datetime
    candidates: tuple[FactValue, ...] = ()

    @property
    def found(self) -> FactValue | None:
        """The value when `status` is found, else None."""
        return self.candidates[0] if self.status == FOUND else None

    def line(self) -> str:
        """The fact in one compact line, as a profile and a packet show it."""
        if self.status == FOUND:
            return f"{self.field}: " + "; ".join(self._named(c) for c in self.candidates)
        if self.status == CONFLICT:
            said = " | ".join(f"{self._named(c)} ({c.authority})" for c in self.candidates)
            return f"{self.field}: CONFLICT {said}"
        return f"{self.field}: not known"

    def _named(self, c: FactValue) -> str:
        """A value, with its field when it is another field's of the family."""
        return c.value if c.field in ("", self.field) else f"{c.field}: {c.value}"

    @property
    def tokens(self) -> int:
        """What the line costs in a prompt, counted as recall counts a packet item."""
        return estimate_tokens(self.line()) + ITEM_OVERHEAD_TOKENS

    def as_dict(self) -> dict[str, Any]:
        """JSON: the status, the found value's provenance flat, and every candidate."""
        top = self.found
        return {
            "field": self.field,
            "status": self.status,
            "value": top.value if top else None,
            "record_id": top.record_id if top else None,
            "source_date": iso(top.source_date) if top else None,
            "authority": top.authority if top else None,
            "sensitivity": top.sensitivity if top else None,
            "valid_from": iso(top.valid_from) if top else None,
            "valid_until": iso(top.valid_until) if top else None,
            "known_at": iso(self.known_at),
            "valid_at": iso(self.valid_at),
            "candidates": [c.as_dict() for c in self.candidates],
        }


@dataclass(frozen=True, slots=True)
class Profile:
    """An actor's current facts, highest authority then newest first, cut to a budget."""

    actor: str
    known_at: datetime
    valid_at: datetime
    facts: tuple[Fact, ...]
    tokens: int
    budget: int | None
    dropped: int = 0  # facts left out for the budget
    capped: int = 0  # 0: every record about a field was read; else only the newest this many

    @property
    def note(self) -> str | None:
        """What a reader must know of the answer: that it was read from the newest records
        only (`capped`), or None."""
        if not self.capped:
            return None
        return (
            f"{self.actor}'s profile was read from their newest {self.capped:,} records about "
            "a field only; fields known from older records alone may be missing (ask for "
            "one field's fact to read it whole)"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON: every fact with its tokens, the fields in conflict, the totals, and
        whether the records read were capped (`capped`, `note`)."""
        return {
            "actor": self.actor,
            "known_at": iso(self.known_at),
            "valid_at": iso(self.valid_at),
            "facts": [{**f.as_dict(), "tokens": f.tokens} for f in self.facts],
            "conflicts": [f.field for f in self.facts if f.status == CONFLICT],
            "tokens": self.tokens,
            "budget": self.budget,
            "dropped": self.dropped,
            "capped": self.capped,
            "note": self.note,
        }


def lookup(
    field: str,
    records: Iterable[Record],
    known_at: datetime,
    valid_at: datetime,
    closed: Closings | None = None,
) -> Fact:
    """The answer for `field` (canonical) among `records` about it, or about the fields
    of its family, decided field by field. Pure."""
    by_field: dict[str, list[Record]] = {}
    for r in records:
        by_field.setdefault(stored_field(r.field) if r.field else field, []).append(r)
    if set(by_field) <= {field}:
        return _lookup_one(field, by_field.get(field, []), known_at, valid_at, closed)
    facts = [_lookup_one(f, rs, known_at, valid_at, closed) for f, rs in by_field.items()]
    facts = [f for f in facts if f.candidates]
    facts.sort(key=lambda f: (RANK_OF[f.candidates[0].authority], f.candidates[0].valid_from),
               reverse=True)  # fmt: skip
    family = family_of(field)
    own = [field, *(family.exact if family else ())]  # the asked field's own first, then
    facts.sort(key=lambda f: own.index(f.field) if f.field in own else len(own))  # its family's
    if not facts:
        return Fact(field, NOT_FOUND, known_at, valid_at)
    status = CONFLICT if any(f.status == CONFLICT for f in facts) else FOUND
    return Fact(field, status, known_at, valid_at, tuple(c for f in facts for c in f.candidates))


def _lookup_one(
    field: str,
    records: Iterable[Record],
    known_at: datetime,
    valid_at: datetime,
    closed: Closings | None = None,
) -> Fact:
    live = [r for r in records if r.kind not in _NOT_FACTS and held(r, known_at, valid_at, closed)]
    live.sort(key=lambda r: (RANK[r.authority], r.valid_from, r.created_at), reverse=True)
    seen: set[str] = set()
    values = []
    for r in live:
        if r.id not in seen:
            seen.add(r.id)
            values.append(_value(r, field))
    if not values:
        return Fact(field, NOT_FOUND, known_at, valid_at)
    top = values[0]
    from remem.consolidate import same_value  # consolidation's rules: not at import time

    if all(same_value(v.value, top.value) for v in values[1:]):
        return Fact(field, FOUND, known_at, valid_at, (top,))
    return Fact(field, CONFLICT, known_at, valid_at, tuple(values))


def profile(
    actor: str,
    records: Sequence[Record],
    known_at: datetime,
    valid_at: datetime,
    max_sensitivity: Sensitivity | None = None,
    budget: int | None = None,
    closed: Closings | None = None,
    capped: int = 0,
) -> Profile:
    """Every field an actor's records answer at that time, as facts. Pure.

    Ordered by the authority of each fact's first candidate, then its recency;
    with `budget`, facts are kept in that order while their lines fit. `capped`: the
    records are the newest this many only (said in the profile's `note`).
    """
    by_field: dict[str, list[Record]] = {}
    for r in records:
        if r.field and r.kind not in _NOT_FACTS and within_sensitivity(r, max_sensitivity):
            by_field.setdefault(stored_field(r.field), []).append(r)
    facts = [_lookup_one(f, rs, known_at, valid_at, closed) for f, rs in by_field.items()]
    facts = [f for f in facts if f.status != NOT_FOUND]
    facts.sort(
        key=lambda f: (RANK_OF[f.candidates[0].authority], f.candidates[0].valid_from),
        reverse=True,
    )
    if budget is None:
        tokens = sum(f.tokens for f in facts)
        return Profile(actor, known_at, valid_at, tuple(facts), tokens, None, 0, capped)
    kept, dropped, used = pack([(f, f.tokens) for f in facts], budget)
    return Profile(actor, known_at, valid_at, tuple(kept), used, budget, len(dropped), capped)


def _value(r: Record, field: str) -> FactValue:
    return FactValue(
        record_id=r.id,
        value=r.value if r.value is not None else r.text,  # a field stated without a value
        kind=r.kind.value,
        namespace=r.namespace,
        text=r.text,
        authority=r.authority.value,
        sensitivity=r.sensitivity.value,
        source_date=r.valid_from,
        valid_from=r.valid_from,
        valid_until=r.valid_until,
        known_since=r.created_at,
        source=r.source.as_dict(),
        field=field,
    )


def pinned_items(facts: Sequence[Fact], namespace_prefix: str | None = None) -> list[PacketItem]:
    """Packet items for pinned facts: one per value (each side of a conflict), flagged
    "pinned" (and "conflict"), with the field in their source. Pure."""
    items = []
    for fact in facts:
        for c in fact.candidates:
            if namespace_prefix is not None and not c.namespace.startswith(namespace_prefix):
                continue
            text = f"{c.field or fact.field}: {c.value}"
            items.append(
                PacketItem(
                    id=c.record_id,
                    text=text,
                    kind=c.kind,
                    namespace=c.namespace,
                    status=Status.ACTIVE.value,
                    source_date=c.source_date,
                    source={**c.source, "field": c.field or fact.field, "authority": c.authority},
                    score=1.0,
                    tokens=estimate_tokens(text) + ITEM_OVERHEAD_TOKENS,
                    flags=("pinned", "conflict") if fact.status == CONFLICT else ("pinned",),
                )
            )
    return items
