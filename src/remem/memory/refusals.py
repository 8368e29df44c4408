"""The texts an embedder refused, set aside so that the catch-up of vectors goes past them.

An embeddings server refuses some texts for good (HTTP 400, 413, 422: too long for its
model, invalid; `EmbedderInputRefused`), and a local model may fail on one. Such a text
would be asked again by every pass of `remem.memory.backfill`, oldest first, and hold up
the texts after it. Instead the pass records it here with the embedder's reason and
walks on: a `Refusals` is kept per memory (`Deps.refused`, shared with its pipeline's
worker), by tenant and embedder name, so that another embedder (or another process)
asks again, and nothing is lost: the text stays stored, found by its words, counted as
waiting for a vector, and the recall packet of its actor says why (`remem.memory.backfill
.noted`). At most `MAX_REFUSALS` are kept per tenant and embedder (the oldest then go,
and are asked once more); each pass starts where the last one stopped (`resume`), so
the ones set aside cost one read per pass at most, never a request.

A refusal names a text and its actor, and an embedder's reason may quote the text: an
erasure drops those of what it erased in its process (`Refusals.drop_erased`, from
`remem.lifecycle.erasure`); another process drops those of an actor no longer stored
at the actor's next recall (`remem.memory.backfill.noted`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

log = logging.getLogger("remem")

MAX_REFUSALS = 10_000  # set aside per tenant and embedder, at most
MAX_REASON = 200  # characters of a reason kept


@dataclass(frozen=True, slots=True)
class Refusal:
    """One text set aside: what it is (`kind`: record, event or chunk, and `id`), whose
    (`actor`, None for a document chunk) and the embedder's reason."""

    kind: str
    id: str
    actor: str | None
    reason: str


@dataclass(slots=True)
class Aside:
    """The refusals of one tenant by one embedder, and where its next pass starts
    (`resume`: the records' and events' cursor, then the chunks')."""

    refused: dict[tuple[str, str], Refusal] = field(default_factory=dict)
    resume: tuple[int, int] = (0, 0)
    resume_chunks: str = ""
    said: str = ""  # whose and by what, as `add` logs it: "of tenant 'acme' by the embedder x"

    def has(self, kind: str, id: str) -> bool:
        """Whether this text was set aside."""
        return (kind, id) in self.refused

    def add(self, kind: str, id: str, actor: str | None, reason: str) -> None:
        """Set a text aside with the embedder's reason (the oldest goes past the cap)."""
        if len(self.refused) >= MAX_REFUSALS:
            self.refused.pop(next(iter(self.refused)))
        self.refused[(kind, id)] = Refusal(kind, id, actor, reason[:MAX_REASON])
        log.warning("%s %s is set aside without a vector: refused %s (%s)", kind, id,
                    self.said, reason[:MAX_REASON])  # fmt: skip

    def drop(self, kind: str, id: str) -> None:
        """Forget a text set aside (erased since)."""
        self.refused.pop((kind, id), None)

    def of_actor(self, actor: str) -> list[Refusal]:
        """The actor's texts set aside, oldest first."""
        return [r for r in list(self.refused.values()) if r.actor == actor]

    def drop_actor(self, actor: str) -> None:
        """Forget every text of `actor` set aside (erased, or embedded since)."""
        for r in self.of_actor(actor):
            self.refused.pop((r.kind, r.id), None)


class Refusals:
    """Every `Aside` of one memory, by tenant and embedder name. Thread-safe to look up;
    a pass of one tenant and embedder runs at a time per worker thread, and two passes
    at once only set the same texts aside twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by: dict[tuple[str, str], Aside] = {}

    def of(self, tenant: str, embedder: str) -> Aside:
        """The refusals of `tenant`'s texts by the embedder named `embedder`."""
        with self._lock:
            said = f"of tenant {tenant!r} by the embedder {embedder}"
            return self._by.setdefault((tenant, embedder), Aside(said=said))

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

    def held(self, tenant: str) -> list[Refusal]:
        """Every refusal of `tenant`'s texts kept now, by any embedder."""
        with self._lock:
            asides = [a for (t, _), a in self._by.items() if t == tenant]
        return [r for a in asides for r in list(a.refused.values())]
