"""A recall embeds its query on its own thread, on both backends, and returns the same
packets as a new process would.

`remem.recall.gather` embeds the query where the recall runs (`_query_vectors`: handing
it to another thread to overlap the word searches cost more than it saved). These
recalls run through `Memory` on each backend with an embedder that notes which thread
embedded what; each packet is compared with the one a new `Memory` on the same database
returns, after writes and a forget too.
"""

from __future__ import annotations

import json
import os
import select
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.embed.vectors import Vectors
from remem.ids import counter_ids
from tests.support.backends import both_backends
from tests.support.clock import Clock
from tests.support.recall import say


class ThreadNoting:
    """The hashing embedder, noting for each call whether it ran on the main thread."""

    def __init__(self) -> None:
        self._inner = HashEmbedder()
        self.calls: list[tuple[bool, tuple[str, ...]]] = []

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append((threading.current_thread() is threading.main_thread(), tuple(texts)))
        return self._inner.embed(texts)


@pytest.fixture
def noting() -> ThreadNoting:
    return ThreadNoting()


@pytest.fixture
def mem(db_path: Path, clock: Clock, noting: ThreadNoting) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=noting, clock=clock, ids=counter_ids()) as m:
        yield m


def packet(mem: Memory, query: str, include_events: bool) -> dict[str, Any]:
    return mem.recall(
        actor="pair", query=query, include_events=include_events, explain=True
    ).as_dict()


def fresh(db_path: Path | str, clock: Clock, query: str, include_events: bool) -> dict[str, Any]:
    """The packet of a new `Memory` on the same database (a process of its own)."""
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock) as other:
        return packet(other, query, include_events)


@both_backends
@pytest.mark.parametrize("include_events", [True, False])
def test_the_query_is_embedded_on_the_recalls_thread_and_recall_returns_the_same(
    mem: Memory,
    noting: ThreadNoting,
    db_path: Path | str,
    clock: Clock,
    include_events: bool,
) -> None:
    say(mem, "Caroline", "My brother played rugby for years", 0)
    say(mem, "Melanie", "I am a teacher", 1)
    say(mem, "Melanie", "I am a painter and I paint lakes", 2)
    say(mem, "Caroline", "Nice, Melanie", 3)
    mem.process()

    plain = "which sport did the brother play"
    noting.calls.clear()
    first = packet(mem, plain, include_events)
    assert [main for main, _ in noting.calls] == [True]  # on the recall's own thread
    assert first == fresh(db_path, clock, plain, include_events)
    assert first["records"][0]["text"] == "Caroline's brother played rugby for years"

    named = "Is Melanie a painter?"
    once = packet(mem, named, include_events)
    noting.calls.clear()
    twice = packet(mem, named, include_events)
    if include_events:  # the events' speakers name Melanie: both forms embedded at once
        assert noting.calls == [(True, (named, "Is someone a painter?"))]
    else:  # the records' turns name the speaker after the first search: embedded again
        assert noting.calls == [(True, (named,)), (True, (named, "Is someone a painter?"))]
    assert once == twice == fresh(db_path, clock, named, include_events)

    # a speaker no earlier recall met
    say(mem, "Gina", "I paint portraits, I am a painter too", 4)
    mem.process()
    gina = "Is Gina a painter?"
    assert packet(mem, gina, include_events) == fresh(db_path, clock, gina, include_events)
    # and one that is gone: the store no longer names Melanie
    # the record, in the packet or not: with events, the turn it was made from says more
    # than it ("I paint lakes") and stands in its place (recall.rank.SAYS_SAME)
    (painter,) = [r.as_dict() for r in mem.records(actor="pair") if "painter" in r.text]
    assert painter["text"] == "Melanie is a painter"
    assert painter["id"] in str(once) or "its turn says more than it" in str(once)
    assert mem.forget(record_id=painter["id"]).verified
    after = packet(mem, named, include_events)
    assert after == fresh(db_path, clock, named, include_events)
    assert painter["id"] not in str(after)


def test_a_process_forked_after_a_recall_embeds_its_own_queries(mem: Memory, db_path: Path) -> None:
    say(mem, "Caroline", "My brother played rugby for years", 0)
    mem.process()
    expected = packet(mem, "which sport did the brother play", True)["records"]
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child recalls as the parent did
        try:
            with Memory.open(db_path, embedder=HashEmbedder()) as again:
                got = packet(again, "which sport did the brother play", True)["records"]
            os.write(write, json.dumps(got).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([read], [], [], 30)
        assert ready, "the forked process's recall did not answer within 30 s"
        assert json.loads(os.read(read, 1 << 20)) == expected
    finally:
        os.close(read)
        if not ready:
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
