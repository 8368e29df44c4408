"""Erasures racing the work that derives data from what they erase, and erasures cut
short by a crash, on both backends.

Did not hold: a vector made from an event's text read before a record erasure emptied
it (by the vector catch-up, or a job's embedding of its batch) was stored after the
erasure, which had already verified: the erased text's embedding stayed, on SQLite and
PostgreSQL. Now an event whose text was emptied takes no vector (on PostgreSQL the
insert also locks the event row against an erasure in flight).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.base import Vectors
from remem.errors import EmbedderUnavailable
from remem.memory.backfill import fill_vectors
from remem.store.roles import Scope

DIM = 64
SECRET = "My locker is number 12"


class Outage(HashEmbedder):
    """An embeddings server that is down until `up`, then calls `before` once (if set)
    as it embeds a text holding 'locker': the moment an erasure races it."""

    may_fail = True

    def __init__(self) -> None:
        super().__init__(DIM)
        self.up = False
        self.before: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.up:
            raise EmbedderUnavailable("the embeddings server is down")
        if self.before is not None and any("locker" in t for t in texts):
            run, self.before = self.before, None
            run()
        return super().embed(texts)


def test_a_vector_caught_up_while_its_event_is_erased_is_not_stored(db: str) -> None:
    outage, hashed = Outage(), HashEmbedder(DIM)
    with Memory.open(db, embedder=outage) as mem, Memory.open(db, embedder=hashed) as other:
        event_id = mem.add_event(actor="alice", session="s1", role="user", text=SECRET)
        mem.process()  # the record is made; neither it nor the event has a vector yet
        (record,) = mem.records(actor="alice")
        reports = []
        outage.up = True
        outage.before = lambda: reports.append(other.forget(record_id=record.id))
        fill_vectors(mem.deps, 100)  # reads the event's text, then the erasure commits
        assert reports and reports[0].verified
        (event,) = mem.events(actor="alice")
        assert event.id == event_id and event.text == ""
        query = hashed.embed([SECRET])[0]
        near = mem.store.search.vector_search_events(
            Scope(mem.tenant, "alice"), outage.name, query, 10, datetime.now(UTC)
        )
        assert near == []
