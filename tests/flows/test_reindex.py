"""Changing the embedder is safe (issue 36, item 3): `Memory.reindex` re-embeds records,
events and document chunks with the new embedder, resumes after SIGKILL, keeps recall
going meanwhile without mixing models, erases from both indexes, and switches at once;
on both backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.vectors import Vectors
from remem.errors import EmbedderChanged, InvalidInput
from remem.lifecycle.reindex import ReindexProgress
from remem.store.roles import Scope, VectorModel

OLD, NEW = HashEmbedder(64), HashEmbedder(128)
FACTS = [
    "Alice is allergic to peanuts",
    "Alice plays the cello on Sundays",
    "Alice drives a green bicycle to work",
    "Alice keeps bees in her garden",
]
TURNS = ["I moved to Lisbon last spring", "My sister Clara visits in August"]


class Logged:
    """HashEmbedder(128)'s vectors, noting every text it embeds."""

    name, dim = NEW.name, NEW.dim

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return NEW.embed(texts)


def _fill(db: str, actors: Sequence[str] = ("alice",), turns: int = 0) -> None:
    """Records, events (`TURNS`, and `turns` more) and a document, embedded by OLD."""
    pool = "apples bridges candles dunes engines ferns glaciers harbours islands".split()
    extra = [f"a note about {pool[i % len(pool)]} number {i}" for i in range(turns)]
    with Memory.open(db, embedder=OLD) as mem:
        for actor in actors:
            for fact in FACTS:
                mem.remember(actor=actor, text=fact.replace("Alice", actor.title()))
            for i, text in enumerate([*TURNS, *extra]):
                mem.add_event(actor=actor, session="s1", role="user", text=text,
                              event_id=f"{actor}-{i}")  # fmt: skip
        mem.process()
        mem.add_document(text="The office opens at nine.", title="hours")


def _counts(mem: Memory, model: str) -> dict[str, tuple[int, int, int]]:
    return {c.kind: (c.todo, c.done, c.current)
            for c in mem.store.reindexing.counts(mem.tenant, model)}  # fmt: skip


def _vector_hits(mem: Memory, query: str) -> list[str]:
    explain = mem.recall(actor="alice", query=query, explain=True).explain
    assert explain is not None
    return [v["id"] for v in explain["vector"]]


def test_a_dry_run_changes_nothing(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as mem:
        before = _counts(mem, NEW.name)
        report = mem.reindex(dry_run=True)
        assert report.dry_run and not report.switched and report.embedded == {}
        assert [m.model for m in report.old_models] == [OLD.name]
        assert report.todo == sum(todo for todo, _, _ in before.values()) > 0
        assert before["records"][0] >= 4 and before["events"][0] == 2 and before["chunks"][0] == 1
        message = report.message()
        assert "would re-embed" in message and "hash-64 (64) -> hash-128 (128)" in message
        assert _counts(mem, NEW.name) == before
        assert mem.store.reindexing.pending(mem.tenant) is None
        assert mem.store.records.vector_models(mem.tenant) == [VectorModel(OLD.name, 64, None)]
        with pytest.raises(EmbedderChanged, match="remem reindex"):  # nothing pending yet
            mem.recall(actor="alice", query="peanuts")


def test_a_full_reindex_recalls_with_the_new_model_alone(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as mem:
        seen: list[ReindexProgress] = []
        report = mem.reindex(batch=3, progress=seen.append)
        assert report.switched and report.batches == len(seen) > 1
        assert seen[-1].batches == report.batches
        after = _counts(mem, NEW.name)
        assert all(todo == done == 0 for todo, done, _ in after.values())
        assert after["events"][2] == 2 and after["chunks"][2] == 1
        assert sum(report.embedded.values()) == sum(c for _, _, c in after.values())
        assert mem.store.records.vector_models(mem.tenant) == [VectorModel(NEW.name, 128, None)]
        assert mem.store.reindexing.pending(mem.tenant) is None
        records = mem.store.records.list_records(Scope(mem.tenant, "alice"))
        stored = mem.store.search.record_vectors(mem.tenant, [r.id for r in records], NEW.name)
        for r in records:  # each one the new model's vector of its own text
            assert np.allclose(stored[r.id], NEW.embed([r.text])[0], atol=2e-3)
        assert mem.store.search.record_vectors(mem.tenant, [r.id for r in records], OLD.name) == {}
        packet = mem.recall(actor="alice", query="what is alice allergic to?", explain=True)
        assert not packet.notes
        peanuts = next(r.id for r in records if "peanuts" in r.text)
        assert peanuts in _vector_hits(mem, "what is alice allergic to?")
        assert mem.reindex().message().endswith("nothing to re-embed; every vector is hash-128's")
    with Memory.open(db, embedder=OLD) as old:  # the old model is now the one refused
        with pytest.raises(EmbedderChanged, match="hash-128"):
            old.recall(actor="alice", query="peanuts")


def test_recall_during_a_reindex_works_and_says_so(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as mem:
        report = mem.reindex(batch=2, max_batches=1)
        assert not report.switched and mem.store.reindexing.pending(mem.tenant) is not None
        packet = mem.recall(actor="alice", query="peanuts", explain=True)
        assert any("peanuts" in r.text for r in packet.records)  # by words
        assert any("lexical only" in n and "hash-128" in n for n in packet.notes)
        assert packet.explain is not None and packet.explain["vector"] == []
        assert packet.explain["notes"] == list(packet.notes)
    with Memory.open(db, embedder=OLD) as old:  # the old embedder: the old index, whole
        packet = old.recall(actor="alice", query="what is alice allergic to?", explain=True)
        assert not packet.notes and _vector_hits(old, "what is alice allergic to?")
    with Memory.open(db, embedder=NEW) as mem:
        assert mem.reindex().switched
        packet = mem.recall(actor="alice", query="what is alice allergic to?")
        assert not packet.notes and _vector_hits(mem, "what is alice allergic to?")


def test_writers_of_both_models_during_a_reindex_end_in_the_new_index(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as new, Memory.open(db, embedder=OLD) as old:
        new.reindex(batch=2, max_batches=1)
        a = new.remember(actor="alice", text="Alice collects stamps from Peru")
        b = old.remember(actor="alice", text="Alice sings in a choir on Fridays")
        assert new.reindex().switched  # b, written with the old model, re-embedded first
        stored = new.store.search.record_vectors(new.tenant, [a.id, b.id], NEW.name)
        for r in (a, b):
            assert np.allclose(stored[r.id], NEW.embed([r.text])[0], atol=2e-3)
        assert all(todo == 0 for todo, _, _ in _counts(new, NEW.name).values())


def test_forget_during_a_reindex_leaves_nothing_in_either_index(db: str) -> None:
    _fill(db, actors=("alice", "bob"))
    with Memory.open(db, embedder=NEW) as mem:
        mem.reindex(batch=100, max_batches=2)  # records and events re-embedded, not chunks
        index = mem.store.reindexing
        assert index.left_of_actor(mem.tenant, "alice") > 0 < index.left_of_actor(mem.tenant, "bob")
        gone = next(
            r for r in mem.store.records.list_records(Scope(mem.tenant, "bob")) if "bees" in r.text
        )
        assert mem.forget(actor="alice").verified
        assert mem.forget(record_id=gone.id).verified
        assert index.left_of_actor(mem.tenant, "alice") == 0
        assert index.pending(mem.tenant) is not None  # the reindex goes on for the rest
        left_bob = index.left_of_actor(mem.tenant, "bob")
        assert left_bob == len(mem.store.records.list_records(Scope(mem.tenant, "bob"))) + len(
            TURNS
        )
        assert mem.store.search.record_vectors(mem.tenant, [gone.id], OLD.name) == {}
        assert mem.reindex().switched
        bobs = mem.store.records.list_records(Scope(mem.tenant, "bob"))
        assert _counts(mem, NEW.name)["records"][2] == len(bobs)
        assert mem.store.search.record_vectors(mem.tenant, [gone.id], NEW.name) == {}
        assert mem.recall(actor="alice", query="peanuts").records == ()


class Forgetting:
    """HashEmbedder(128), which erases an actor (through another memory) the first time it
    is asked to embed that actor's text: an erasure between a batch's read and its store."""

    name, dim = NEW.name, NEW.dim

    def __init__(self, other: Memory, actor: str, needle: str) -> None:
        self.other, self.actor, self.needle, self.fired = other, actor, needle, False

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.fired and any(self.needle in t for t in texts):
            self.fired = True
            assert self.other.forget(actor=self.actor).verified
        return NEW.embed(texts)


def test_an_erasure_while_a_batch_is_embedded_leaves_nothing(db: str) -> None:
    _fill(db, actors=("alice", "bob"))
    with Memory.open(db, embedder=None) as other:
        embedder = Forgetting(other, "alice", "Alice")
        with Memory.open(db, embedder=embedder) as mem:
            report = mem.reindex(batch=100)
            assert embedder.fired and report.switched
            assert mem.store.reindexing.left_of_actor(mem.tenant, "alice") == 0
            assert mem.recall(actor="alice", query="peanuts").records == ()
            bobs = mem.store.records.list_records(Scope(mem.tenant, "bob"))
            assert _counts(mem, NEW.name)["records"][2] == len(bobs)


def test_a_second_embedder_change_while_one_is_pending_is_refused(db: str) -> None:
    _fill(db)
    third = HashEmbedder(32)
    with Memory.open(db, embedder=NEW) as mem:
        mem.reindex(batch=2, max_batches=1)
    with Memory.open(db, embedder=third) as mem:
        with pytest.raises(EmbedderChanged, match=r"reindex to hash-128 is pending"):
            mem.recall(actor="alice", query="peanuts")
        with pytest.raises(EmbedderChanged, match=r"remem reindex --cancel"):
            mem.reindex()
        assert mem.cancel_reindex()  # what the pending one stored is dropped
        assert _counts(mem, NEW.name)["records"][1] == 0
        report = mem.reindex()
        assert report.switched and not report.resumed
        assert mem.store.records.vector_models(mem.tenant) == [VectorModel(third.name, 32, None)]
        assert mem.recall(actor="alice", query="peanuts").records


def test_cancelled_the_old_model_takes_back_what_the_new_one_wrote(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as mem:
        mem.reindex(batch=2, max_batches=1)
        added = mem.remember(actor="alice", text="Alice collects stamps from Peru")
        assert mem.cancel_reindex() and not mem.cancel_reindex()
    with Memory.open(db, embedder=OLD) as old:
        held = [m.model for m in old.store.records.vector_models(old.tenant)]
        assert held == sorted([OLD.name, NEW.name])  # the stamps' vector is NEW's
        assert old.reindex().switched  # back to one model: the stamps re-embedded by OLD
        assert old.store.records.vector_models(old.tenant) == [VectorModel(OLD.name, 64, None)]
        stored = old.store.search.record_vectors(old.tenant, [added.id], OLD.name)
        assert np.allclose(stored[added.id], OLD.embed([added.text])[0], atol=2e-3)


def test_bad_arguments_are_refused_before_anything_changes(db: str) -> None:
    _fill(db)
    with Memory.open(db, embedder=NEW) as mem:
        for bad in (0, -1, 5000, True):
            with pytest.raises(InvalidInput, match="batch"):
                mem.reindex(batch=bad)
        with pytest.raises(InvalidInput, match="max_batches"):
            mem.reindex(max_batches=0)
        assert mem.store.reindexing.pending(mem.tenant) is None
    with Memory.open(db, embedder=None) as mem:
        with pytest.raises(InvalidInput, match="needs an embedder"):
            mem.reindex()


_CHILD = """
import sys, time
from remem import Memory
from remem.embed import HashEmbedder

class Slow:
    name, dim = "hash-128", 128
    def __init__(self):
        self.inner = HashEmbedder(128)
    def embed(self, texts):
        time.sleep(0.05)
        return self.inner.embed(texts)

with Memory.open(sys.argv[1], embedder=Slow()) as mem:
    mem.reindex(batch=2, progress=lambda p: print(p.batches, flush=True))
print("finished", flush=True)
"""


def test_a_reindex_killed_with_sigkill_resumes_and_embeds_each_item_once(db: str) -> None:
    _fill(db, turns=30)
    with Memory.open(db, embedder=None) as mem:
        total = sum(todo for todo, _, _ in _counts(mem, NEW.name).values())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, db], stdout=subprocess.PIPE,
                             env=env, text=True)  # fmt: skip
    assert child.stdout is not None
    for _ in range(3):  # three batches stored
        assert child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    logged = Logged()
    with Memory.open(db, embedder=logged) as mem:
        killed = _counts(mem, NEW.name)
        stored = sum(done for _, done, _ in killed.values())
        assert mem.store.reindexing.pending(mem.tenant) is not None
        assert 6 <= stored < total  # at least the three batches it reported, not all
        report = mem.reindex(batch=2)
        assert report.resumed and report.switched
        # the resumed run embedded only what the killed one had not stored, once each
        assert len(logged.texts) == len(set(logged.texts)) == total - stored
        after = _counts(mem, NEW.name)
        assert all(todo == done == 0 for todo, done, _ in after.values())
        assert sum(current for _, _, current in after.values()) == total
        assert mem.store.records.vector_models(mem.tenant) == [VectorModel(NEW.name, 128, None)]
