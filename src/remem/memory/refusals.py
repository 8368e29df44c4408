"""The texts an embedder refused, set aside so that the catch-up of vectors goes past them.

An embeddings server refuses some texts for good (HTTP 400, 413, 422: too long for its
model, invalid; `EmbedderInputRefused`), and a local model may fail on one. Such a text
would be asked again by every pass of `remem.memory.backfill`, oldest first, and hold up
the texts after it. Instead the pass records it here with the embedder's reason and
walks on: a `Refusals` is kept per memory (`Deps.refused`, shared with its pipeline's
worker, and by a service with every tenant's memory), by tenant and embedder name, so
that another embedder (or another process) asks again, and nothing is lost: the text
stays stored, found by its words, counted as waiting for a vector, and the recall packet
of its actor says why (`remem.memory.backfill.noted`). Each pass starts where the last
one stopped (`resume`), so the ones set aside cost one read per pass at most, never a
request.

What is kept is bounded, however many tenants a service has:

- at most `MAX_REFUSALS` texts per tenant and embedder;
- at most `MAX_HELD` texts in all, across tenants and embedders: past it the oldest
  set aside, of any tenant, goes first;
- at most `MAX_ASIDES` tenant-embedder pairs (each with its `resume`): past it the
  pair looked up least recently goes, with its texts.

A text that goes is asked once more by a later pass (and set aside again if refused
again); a pair that goes starts its next pass from the beginning. The worst case is
`MAX_HELD` refusals of `MAX_REASON` characters and `MAX_ASIDES` cursors: tens of MB.

A refusal names a text and its actor, and an embedder's reason may quote the text: an
erasure drops those of what it erased in its process (`Refusals.drop_erased`, from
`remem.lifecycle.erasure`); another process drops those of an actor no longer stored
at the actor's next recall (`remem.memory.backfill.noted`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

log = logging.getLogger("remem")

MAX_REFUSALS = 10_000  # set aside per tenant and embedder, at most
MAX_HELD = 50_000  # set aside in all, across tenants and embedders
MAX_ASIDES = 10_000  # tenant-embedder pairs kept (the least recently looked up go)
MAX_REASON = 200  # characters of a reason kept

Pair = tuple[str, str]  # (tenant, embedder name)
Key = tuple[str, str]  # (kind, id)


@dataclass(frozen=True, slots=True)
class Refusal:
    """One text set aside: what it is (`kind`: record, event or chunk, and `id`), whose
    (`actor`, None for a document chunk) and the embedder's reason."""

    kind: str
    id: str
    actor: str | None
    reason: str


@dataclass(slots=True, eq=False)
class Aside:
    """The refusals of one tenant by one embedder, and where its next pass starts
    (`resume`: the records' and events' cursor, then the chunks'). Kept by its
    `Refusals` (`owner`), which holds every aside's texts to its bounds; one made alone
    or let go (no owner) holds only its own (`most`)."""

    refused: dict[Key, Refusal] = field(default_factory=dict)
    resume: tuple[int, int] = (0, 0)
    resume_chunks: str = ""
    said: str = ""  # whose and by what, as `add` logs it: "of tenant 'acme' by the embedder x"
    owner: Refusals | None = None  # None: alone, or let go by its owner
    pair: Pair = ("", "")
    most: int = MAX_REFUSALS  # its own bound, alone or kept

    def has(self, kind: str, id: str) -> bool:
        """Whether this text was set aside."""
        return (kind, id) in self.refused

    def add(self, kind: str, id: str, actor: str | None, reason: str) -> None:
        """Set a text aside with the embedder's reason (the oldest goes past a bound)."""
        refusal = Refusal(kind, id, actor, reason[:MAX_REASON])
        owner = self.owner
        if owner is None:
            _put(self.refused, (kind, id), refusal, self.most)
        else:
            owner._add(self, (kind, id), refusal)
        log.warning("%s %s is set aside without a vector: refused %s (%s)", kind, id,
                    self.said, reason[:MAX_REASON])  # fmt: skip

    def drop(self, kind: str, id: str) -> None:
        """Forget a text set aside (erased since)."""
        owner = self.owner
        if owner is None:
            self.refused.pop((kind, id), None)
        else:
            owner._drop(self, (kind, id))

    def of_actor(self, actor: str) -> list[Refusal]:
        """The actor's texts set aside, oldest first."""
        return [r for r in list(self.refused.values()) if r.actor == actor]

    def drop_actor(self, actor: str) -> None:
        """Forget every text of `actor` set aside (erased, or embedded since)."""
        for r in self.of_actor(actor):
            self.drop(r.kind, r.id)


def _put(refused: dict[Key, Refusal], key: Key, refusal: Refusal, most: int) -> Key | None:
    """Put `refusal` in `refused`, its oldest going when `most` are there: the key that
    went, if one did."""
    gone = None
    if key not in refused and len(refused) >= most:
        gone = next(iter(refused))
        del refused[gone]
    refused[key] = refusal
    return gone


class Refusals:
    """Every `Aside` of one memory (or service), by tenant and embedder name, held to the
    bounds of the module docstring. Thread-safe; a pass of one tenant and embedder runs
    at a time per worker thread, and two passes at once only set the same texts aside
    twice."""

    def __init__(
        self, *, most: int = MAX_HELD, asides: int = MAX_ASIDES, each: int = MAX_REFUSALS
    ) -> None:
        self._lock = threading.Lock()
        self._by: OrderedDict[Pair, Aside] = OrderedDict()  # least recently looked up first
        self._order: OrderedDict[tuple[Pair, Key], None] = OrderedDict()  # oldest first
        self.most, self.asides, self.each = most, asides, each

    def of(self, tenant: str, embedder: str) -> Aside:
        """The refusals of `tenant`'s texts by the embedder named `embedder`."""
        pair = (tenant, embedder)
        with self._lock:
            aside = self._by.get(pair)
            if aside is not None:
                self._by.move_to_end(pair)
                return aside
            said = f"of tenant {tenant!r} by the embedder {embedder}"
            aside = self._by[pair] = Aside(said=said, owner=self, pair=pair, most=self.each)
            while len(self._by) > self.asides:
                _, gone = self._by.popitem(last=False)
                gone.owner = None  # a pass that holds it goes on with it alone
                for key in gone.refused:
                    self._order.pop((gone.pair, key), None)
            return aside

    def held(self) -> int:
        """How many texts are set aside in all."""
        with self._lock:
            return len(self._order)

    def pairs(self) -> int:
        """How many tenant-embedder pairs are kept."""
        with self._lock:
            return len(self._by)

    def _add(self, aside: Aside, key: Key, refusal: Refusal) -> None:
        with self._lock:
            if aside.owner is not self:  # let go meanwhile: its own bound only
                _put(aside.refused, key, refusal, aside.most)
                return
            gone = _put(aside.refused, key, refusal, aside.most)
            if gone is not None:
                self._order.pop((aside.pair, gone), None)
            self._order[(aside.pair, key)] = None
            while len(self._order) > self.most:
                (pair, oldest), _ = self._order.popitem(last=False)
                other = self._by.get(pair)
                if other is not None:
                    other.refused.pop(oldest, None)

    def _drop(self, aside: Aside, key: Key) -> None:
        with self._lock:
            aside.refused.pop(key, None)
            if aside.owner is self:
                self._order.pop((aside.pair, key), None)

    def drop_erased(
        self, tenant: str, *, actor: str | None = None, texts: Iterable[tuple[str, str]] = ()
    ) -> None:
        """Forget, by every embedder, the refusals of `tenant`'s erased texts: each of
        `texts` (kind and id: record, event or chunk), and every text of `actor`."""
        erased = list(texts)
        with self._lock:
            asides = [a for (t, _), a in self._by.items() if t == tenant]
        for aside in asides:
            for kind, id in erased:
                aside.drop(kind, id)
            if actor is not None:
                aside.drop_actor(actor)

    def any(self, tenant: str) -> bool:
        """Whether any of `tenant`'s texts is set aside now, by any embedder."""
        with self._lock:
            return any(a.refused for (t, _), a in self._by.items() if t == tenant)

    def of_tenant(self, tenant: str) -> list[Refusal]:
        """Every refusal of `tenant`'s texts kept now, by any embedder."""
        with self._lock:
            asides = [a for (t, _), a in self._by.items() if t == tenant]
        return [r for a in asides for r in list(a.refused.values())]
