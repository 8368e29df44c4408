"""An erasure leaves nothing of what it erased in the caches of a process (DESIGN 5),
on a real SQLite file and a real PostgreSQL database.

The process that erases empties its caches at once (`remem.lifecycle.erasure.
drop_erased`): the store's decoded records, recall's kept stems, the records near the
life domains and the speakers kept per scope, the embedder's refusals and recent texts.
Another process on the same database (a second `Memory` here, or a real second
process that erases) neither serves nor keeps them after its next recall of the scope,
or, for what no read tells it of, after `LINGER_SECONDS` (`remem.linger`; the clock it
reads is moved on here). Each cache is read back through its own methods.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.base import Vectors
from remem.model import Record
from remem.recall import applies
from remem.recall.fusion import holds_stems_of
from tests.support.clock import Clock
from tests.support.embed import packaged_or_skip

DIM = 64
MARK = "zanzibar"  # the word the picky model cannot take
REQUEST = "Suggest a restaurant for dinner tonight"  # food, by its words (test_applies_cache)


class Picky(HashEmbedder):
    """A local model that fails on any text holding `MARK` (its refusal is set aside)."""

    def __init__(self) -> None:
        super().__init__(DIM)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(MARK in t for t in texts):
            raise ValueError("the model cannot take this input")
        return super().embed(texts)


_AHEAD = [0.0]  # how far the clock `remem.linger` reads is moved on: never back


@pytest.fixture
def linger(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Moves the clock `remem.linger` reads past `LINGER_SECONDS` when called (it never
    goes back, so a sweep timed in an earlier test is due too)."""
    from remem import linger as module

    def later() -> None:
        _AHEAD[0] += module.LINGER_SECONDS + 1

    monkeypatch.setattr(module, "_clock", lambda: time.monotonic() + _AHEAD[0])
    yield later


def held(mem: Memory, record_id: str) -> bool:
    return bool(mem.store.held.holds(mem.tenant, record_id))  # type: ignore[attr-defined]


def refused_ids(mem: Memory) -> set[str]:
    return {r.id for r in mem.deps.refused.of_tenant(mem.tenant)}


def said(mem: Memory, clock: Clock, actor: str, text: str) -> None:
    clock.now += timedelta(seconds=10)
    mem.add_event(actor=actor, session="s1", role="user", text=text, time=clock(),
                  metadata={"speaker": actor.title()})  # fmt: skip
    mem.process()


def spicy(mem: Memory, actor: str = "ana") -> Record:
    (pref,) = [r for r in mem.records(actor=actor) if "spicy" in r.text.lower()]
    return pref


def fill(mem: Memory, clock: Clock, actor: str = "ana") -> None:
    """Recalls that fill every cache a recall keeps (a request, then a plain question)."""
    clock.now += timedelta(seconds=5)
    mem.recall(actor=actor, query=REQUEST)
    mem.recall(actor=actor, query="which food do I never eat")


def test_an_erasure_empties_this_process_caches_of_what_it_erased(db: str, clock: Clock) -> None:
    with Memory.open(db, embedder=Picky(), clock=clock) as mem:
        said(mem, clock, "ana", "I never eat spicy food.")
        pref = spicy(mem)
        keep = mem.remember(actor="ana", text="Ana keeps bees on the roof of her flat")
        pasted = mem.remember(actor="ana", text=f"Ana's {MARK} trip notes, pasted whole")
        mem.process()  # the catch-up of vectors sets the pasted text aside
        fill(mem, clock)
        assert held(mem, pref.id)
        assert pref.id in applies.holds_near(mem.store, mem.tenant, "ana")
        assert holds_stems_of(pref.text)
        assert pasted.id in refused_ids(mem)

        assert mem.forget(record_id=pref.id).verified
        assert not held(mem, pref.id)
        assert pref.id not in applies.holds_near(mem.store, mem.tenant, "ana")
        assert not holds_stems_of(pref.text)
        assert mem.forget(record_id=pasted.id).verified
        assert pasted.id not in refused_ids(mem)

        packet = mem.recall(actor="ana", query="bees on the roof")  # recall goes on as before
        assert [r.id for r in packet.records][:1] == [keep.id]


def test_an_actor_erased_leaves_nothing_of_it_here(db: str, clock: Clock) -> None:
    with Memory.open(db, embedder=Picky(), clock=clock) as mem:
        said(mem, clock, "ana", "I never eat spicy food.")
        pref = spicy(mem)
        pasted = mem.remember(actor="ana", text=f"Ana's {MARK} trip notes, pasted whole")
        said(mem, clock, "bo", "I never eat spicy food either.")
        other = spicy(mem, "bo")
        mem.process()
        fill(mem, clock)
        fill(mem, clock, "bo")
        assert held(mem, pref.id) and pasted.id in refused_ids(mem)

        assert mem.forget(actor="ana").verified
        assert not held(mem, pref.id)
        assert applies.holds_near(mem.store, mem.tenant, "ana") == frozenset()
        assert pasted.id not in refused_ids(mem)
        # another actor's are the store's to keep, and stay
        assert other.id in applies.holds_near(mem.store, mem.tenant, "bo")


def test_another_memory_neither_serves_nor_keeps_a_record_erased_elsewhere(
    db: str, clock: Clock
) -> None:
    with Memory.open(db, embedder=Picky(), clock=clock) as mem, \
            Memory.open(db, embedder=Picky(), clock=clock) as other:  # fmt: skip
        said(mem, clock, "ana", "I never eat spicy food.")
        pref = spicy(mem)
        mem.remember(actor="ana", text="Ana eats no food after nine at night")
        fill(other, clock)
        assert held(other, pref.id)

        assert mem.forget(record_id=pref.id).verified
        packet = other.recall(actor="ana", query="which food do I never eat")
        assert pref.id not in {r.id for r in packet.records}
        assert not held(other, pref.id)  # at its next recall of the scope


def test_another_memory_drops_an_actor_erased_elsewhere(
    db: str, clock: Clock, linger: Callable[[], None]
) -> None:
    with Memory.open(db, embedder=Picky(), clock=clock) as mem, \
            Memory.open(db, embedder=Picky(), clock=clock) as other:  # fmt: skip
        said(mem, clock, "ana", "I never eat spicy food.")
        pref = spicy(mem)
        pasted = mem.remember(actor="ana", text=f"Ana's {MARK} trip notes, pasted whole")
        other.process()
        fill(other, clock)
        assert held(other, pref.id) and pasted.id in refused_ids(other)

        assert mem.forget(actor="ana").verified
        packet = other.recall(actor="ana", query="which food do I never eat")
        assert packet.records == ()
        assert pasted.id not in refused_ids(other)  # at its next recall of the actor
        linger()  # no read of the erased scope finds a record to tell of it
        clock.now += timedelta(seconds=61)  # the recalls' clock goes on as well
        other.recall(actor="bo", query="anything at all")
        assert not held(other, pref.id)


ERASE = """
import sys
from remem import Memory
from remem.embed import HashEmbedder

with Memory.open(sys.argv[1], embedder=HashEmbedder(64)) as mem:
    assert mem.forget(record_id=sys.argv[2]).verified
"""


def test_a_process_that_did_not_erase_drops_the_texts_within_the_linger_time(
    db: str, clock: Clock, linger: Callable[[], None]
) -> None:
    with Memory.open(db, embedder=HashEmbedder(DIM), clock=clock) as mem:
        said(mem, clock, "ana", "I never eat spicy food.")
        pref = spicy(mem)
        mem.remember(actor="ana", text="Ana eats no food after nine at night")
        fill(mem, clock)
        assert holds_stems_of(pref.text) and held(mem, pref.id)
        done = subprocess.run(
            [sys.executable, "-c", ERASE, db, pref.id],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert holds_stems_of(pref.text), "a text kept by its words: no read tells of it"
        mem.recall(actor="ana", query="which food do I never eat")
        assert not held(mem, pref.id)  # its scope's version moved, or the file changed
        linger()
        clock.now += timedelta(seconds=61)  # the recalls' clock goes on as well
        mem.recall(actor="ana", query="which food do I never eat")
        assert not holds_stems_of(pref.text)
        assert pref.id not in applies.holds_near(mem.store, mem.tenant, "ana")


def test_the_embedders_recent_texts_go_with_an_erasure(db: str, clock: Clock) -> None:
    model = packaged_or_skip()
    with Memory.open(db, embedder=model, clock=clock) as mem:
        rec = mem.remember(actor="ana", text="Ana sees a cardiologist every spring")
        assert model.holds_recent(rec.text)  # one text written: embedded alone, kept
        assert mem.forget(record_id=rec.id).verified
        assert not model.holds_recent(rec.text)
