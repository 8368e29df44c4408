"""Candidates and packet items: what ranking orders, and what a packet holds.

A recall ranks some 90 candidates and returns k of them: `rank` orders `Ranked`
candidates, and a `PacketItem` is built (`record_item`, `event_item`) only for those
packing keeps (`remem.recall.engine.pack_packet`).
"""

from __future__ import annotations

import copy

from remem.model import Event, Kind, PacketItem, Record, Role
from remem.policy.scope import session_namespace
from remem.policy.untrusted import quote
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens


def record_item(rec: Record, score: float) -> PacketItem:
    """A record as a packet item; a flagged record goes back as quoted data. Its metadata
    is a copy: the store and the recall's caches hand the same record to every recall
    (`remem.store.flows.records.Held`), and a caller may change what it was handed."""
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
        # the caller's own: held records are shared (most have none: nothing to copy)
        metadata=copy.deepcopy(rec.metadata) if rec.metadata else {},
        flags=rec.flags,
    )


def event_item(ev: Event, score: float) -> PacketItem:
    """A raw event as a packet item, marked kind="event"."""
    text = f"{ev.role.value}: {ev.text}"
    return PacketItem(
        id=ev.id,
        text=text,
        kind="event",
        namespace=session_namespace(ev.tenant, ev.actor, ev.session),
        status="event",
        source_date=ev.time,
        source={"type": "event", "event_ids": [ev.id], "session": ev.session},
        score=score,
        tokens=estimate_tokens(text) + ITEM_OVERHEAD_TOKENS,
    )


class Ranked:
    """A candidate as ranking and packing read it, and what its packet item is made of.

    `id`, `kind`, `text` and `score` are those of its packet item, `turns` the events it
    was made from (its item's `source["event_ids"]`); `item` builds the `PacketItem`
    itself, which only the few that reach a packet need: building one for each of the
    ~90 candidates of a recall cost ~0.4 ms of its CPU at 100,000 records (a frozen
    dataclass of eleven fields, with a dict of its source). `at` is the same candidate
    at another score, as `dataclasses.replace(item, score=...)` was.
    """

    __slots__ = ("_of", "id", "kind", "score", "text", "turns")

    def __init__(
        self,
        of: Record | Event,
        id: str,
        kind: str,
        text: str,
        score: float,
        turns: tuple[str, ...],
    ) -> None:
        self._of = of
        self.id = id
        self.kind = kind
        self.text = text
        self.score = score
        self.turns = turns

    @classmethod
    def of_record(cls, rec: Record, score: float) -> Ranked:
        """A record at `score`, as `record_item` makes it."""
        text = quote(rec.text) if rec.flags else rec.text
        return cls(rec, rec.id, _KIND[rec.kind], text, score, rec.source.event_ids)

    @classmethod
    def of_event(cls, ev: Event, score: float) -> Ranked:
        """A raw event at `score`, as `event_item` makes it."""
        return cls(ev, ev.id, "event", f"{_ROLE[ev.role]}: {ev.text}", score, (ev.id,))

    def at(self, score: float) -> Ranked:
        """The same candidate at `score`."""
        return Ranked(self._of, self.id, self.kind, self.text, score, self.turns)

    def item(self) -> PacketItem:
        """Its packet item (`record_item` or `event_item`)."""
        of = self._of
        return record_item(of, self.score) if isinstance(of, Record) else event_item(of, self.score)

    def __repr__(self) -> str:
        return f"Ranked({self.id!r}, {self.kind!r}, {self.text!r}, {self.score!r})"


# `.value` of an enum member is a Python property: read once per member, not per candidate
_KIND = {k: k.value for k in Kind}
_ROLE = {r: r.value for r in Role}
