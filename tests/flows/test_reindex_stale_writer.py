"""A memory still running with the old embedder after another process switched the index
to a new one (`remem reindex` there) writes no vector of its old model and recalls by
words alone, saying so; what it wrote gets the new model's vectors once a memory with the
new embedder catches up (issue 36). Two memories on one store, or two processes, on both
backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence

from remem import Memory
from remem.embed import HashEmbedder
from remem.embed.vectors import Vectors
from remem.store.roles import VectorModel

OLD, NEW = HashEmbedder(64), HashEmbedder(128)
FACTS = ["Alice is allergic to peanuts", "Alice plays the cello on Sundays"]


class Counting:
    """HashEmbedder(64), counting the texts it embeds."""

    name, dim = OLD.name, OLD.dim

    def __init__(self) -> None:
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return OLD.embed(texts)


def _fill(db: str) -> None:
    with Memory.open(db, embedder=OLD) as mem:
        for fact in FACTS:
            mem.remember(actor="alice", text=fact)
        mem.add_event(actor="alice", session="s1", role="user", text="I moved to Lisbon",
                      event_id="alice-0")  # fmt: skip
        mem.process()
        mem.add_document(text="The office opens at nine.", title="hours")


def _vectors(mem: Memory, model: str) -> dict[str, tuple[int, int]]:
    """Per kind: vectors of other models, vectors of `model`."""
    return {c.kind: (c.todo, c.current)
            for c in mem.store.reindexing.counts(mem.tenant, model)}  # fmt: skip


def test_a_memory_left_on_the_old_embedder_writes_no_old_vectors_after_a_switch(
    db: str,
) -> None:
    _fill(db)
    counting = Counting()
    with Memory.open(db, embedder=counting) as old:
        packet = old.recall(actor="alice", query="what is alice allergic to?", explain=True)
        assert packet.explain is not None and packet.explain["vector"]  # the old index
        with Memory.open(db, embedder=NEW) as new:  # another process switches the index
            assert new.reindex().switched
        # `old` is not restarted: it goes on writing and recalling
        late = old.remember(actor="alice", text="Alice learns Portuguese on Tuesdays")
        old.add_event(actor="alice", session="s2", role="user",
                      text="I adopted a cat named Miso", event_id="alice-1")  # fmt: skip
        old.process()
        old.add_document(text="The canteen closes at three.", title="canteen")
        packet = old.recall(actor="alice", query="Portuguese", explain=True)
        assert late.id in [r.id for r in packet.records]  # by words
        assert packet.explain is not None and packet.explain["vector"] == []
        assert old.store.records.vector_models(old.tenant) == [VectorModel(NEW.name, 128, None)]
        assert all(other == 0 for other, _ in _vectors(old, NEW.name).values())
        assert any("lexical only" in n and NEW.name in n for n in packet.notes)
        with Memory.open(db, embedder=NEW) as new:
            new.process()  # the catch-up: what `old` wrote gets NEW's vectors
        embedded = counting.texts
        last = old.remember(actor="alice", text="Alice waters the ferns at dawn")
        old.process()  # its catch-up fills nothing with a model the index is not
        assert counting.texts == embedded  # it knows since its recall: no vectors made
    with Memory.open(db, embedder=NEW) as new:  # restarted with the new embedder
        assert new.store.search.record_vectors(new.tenant, [last.id], NEW.name) == {}
        report = new.reindex()  # nothing to re-embed; what was written without, filled
        assert report.filled == 1 and "1 written without vectors" in report.message()
        assert last.id in new.store.search.record_vectors(new.tenant, [last.id], NEW.name)
        packet = new.recall(actor="alice", query="Portuguese on Tuesdays", explain=True)
        assert packet.explain is not None
        assert late.id in [v["id"] for v in packet.explain["vector"]]
        assert not packet.notes
        assert all(other == 0 for other, _ in _vectors(new, NEW.name).values())
        assert _vectors(new, NEW.name)["events"] == (0, 2)  # Lisbon's and Miso's
        assert _vectors(new, NEW.name)["chunks"] == (0, 2)  # both documents'
        assert not len(new.store.backfill.unembedded(new.tenant, 100))
        assert new.store.documents.unembedded(new.tenant, 100) == []


def test_the_first_writer_of_an_empty_store_sets_the_model_the_other_writes_none(
    db: str,
) -> None:
    with Memory.open(db, embedder=OLD) as old, Memory.open(db, embedder=NEW) as new:
        assert old.embedder is not None and new.embedder is not None  # both bound: no vectors
        a = old.remember(actor="alice", text="Alice keeps bees in her garden")
        b = new.remember(actor="alice", text="Alice drives a green bicycle")
        assert new.store.records.vector_models(new.tenant) == [VectorModel(OLD.name, 64, None)]
        assert new.store.search.record_vectors(new.tenant, [a.id, b.id], NEW.name) == {}
        packet = new.recall(actor="alice", query="bicycle", explain=True)
        assert b.id in [r.id for r in packet.records]
        assert packet.explain is not None and packet.explain["vector"] == []
        assert any("lexical only" in n for n in packet.notes)


_CHILD = """
import json, sys
from remem import Memory
from remem.embed import HashEmbedder

with Memory.open(sys.argv[1], embedder=HashEmbedder(64)) as mem:
    packet = mem.recall(actor="alice", query="what is alice allergic to?", explain=True)
    print(json.dumps(len(packet.explain["vector"])), flush=True)
    sys.stdin.readline()  # the parent switched the index meanwhile
    late = mem.remember(actor="alice", text="Alice learns Portuguese on Tuesdays")
    packet = mem.recall(actor="alice", query="Portuguese", explain=True)
    print(json.dumps({"late": late.id, "records": [r.id for r in packet.records],
                      "vector": packet.explain["vector"], "notes": list(packet.notes)}),
          flush=True)
"""


def test_another_process_on_the_old_embedder_notices_the_switch(db: str) -> None:
    _fill(db)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, db], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        assert json.loads(child.stdout.readline()) > 0  # it searched the old index
        with Memory.open(db, embedder=NEW) as new:
            assert new.reindex().switched
        child.stdin.write("go\n")
        child.stdin.flush()
        seen = json.loads(child.stdout.readline())
    finally:
        child.stdin.close()
        child.stdout.close()
        child.wait(timeout=60)
    assert child.returncode == 0
    assert seen["late"] in seen["records"] and seen["vector"] == []
    assert any("lexical only" in n and NEW.name in n for n in seen["notes"])
    with Memory.open(db, embedder=NEW) as new:
        assert new.store.records.vector_models(new.tenant) == [VectorModel(NEW.name, 128, None)]
        assert new.store.search.record_vectors(new.tenant, [seen["late"]], OLD.name) == {}
        assert new.reindex().filled == 1
