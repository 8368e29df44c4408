"""Issue 15 item 1: a scope that changed is caught up, not read again from SQLite.

After a write, the vectors held (in this process, or mapped from the scope's
base file by a fresh one) are brought up to date from what changed: rows
appended since, statuses patched (`remem.store.sqlite.vectors.load`). The base
file is not rewritten (its bytes stay the same), what was caught up is kept
in the scope's tail file, and a fresh store answers from base + tail exactly
as the database says. Erasure still reaches every file: a forgotten vector
leaves no trace in base or tail, and vectors held in memory elsewhere do not
return it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.roles import Scope
from remem.store.sqlite.store import SQLiteStore
from remem.store.sqlite.vectors.files import VectorFiles

TEXTS = [f"I keep a {w} in the garden shed, number {i}" for i, w in
         enumerate(["rake", "hoe", "spade", "trowel", "wheelbarrow", "ladder"] * 4)]  # fmt: skip
LATER = datetime(2100, 1, 1, tzinfo=UTC)


def open_mem(db: Path) -> Memory:
    return Memory.open(db, embedder=HashEmbedder())


def files_of(db: Path, suffix: str) -> list[Path]:
    folder = Path(str(db) + ".vectors")
    return sorted(folder.glob(f"*.records.{suffix}")) if folder.is_dir() else []


def synced(mem: Memory) -> SQLiteStore:
    assert isinstance(mem.store, SQLiteStore)
    mem.store.search.sync_vector_files()  # the files a recall writes beside its answer
    return mem.store


def nearest(mem: Memory, text: str, k: int = 5, include_invalid: bool = False) -> list[str]:
    emb = HashEmbedder()
    hits = mem.store.search.vector_search(
        Scope(mem.tenant, "ann"), emb.name, emb.embed([text])[0], k, LATER, include_invalid
    )
    return [h[0] for h in hits]


def recalled(mem: Memory, query: str) -> list[str]:
    return [item.id for item in mem.recall(actor="ann", query=query, k=5).records]


def base_with_records(mem: Memory) -> list[str]:
    ids = [mem.remember(actor="ann", text=text).id for text in TEXTS]
    recalled(mem, "where is the spade")  # reads the scope whole: writes its base file
    synced(mem)
    return ids


def test_an_append_is_caught_up_in_process_and_by_a_fresh_store(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        base_with_records(mem)
        (base,) = files_of(db_path, "vec")
        whole = base.read_bytes()
        added = mem.remember(actor="ann", text="the blue watering can hangs by the door").id
        assert nearest(mem, "the blue watering can hangs by the door")[0] == added
        assert added in recalled(mem, "blue watering can")
        synced(mem)
        assert base.read_bytes() == whole  # caught up, not rebuilt
        (tail,) = files_of(db_path, "tail")
        assert added.encode() in tail.read_bytes()
    with open_mem(db_path) as other:  # another process appends again
        again = other.remember(actor="ann", text="a green hose is coiled under the bench").id
    with open_mem(db_path) as fresh:  # maps base + tail, reads only the newest row
        assert nearest(fresh, "a green hose is coiled under the bench")[0] == again
        assert nearest(fresh, "the blue watering can hangs by the door")[0] == added
        synced(fresh)
    assert base.read_bytes() == whole
    assert again.encode() in tail.read_bytes() and added.encode() in tail.read_bytes()


def test_a_superseded_record_is_not_returned_after_a_catch_up(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        base_with_records(mem)
        old = mem.remember(
            actor="ann", text="my shed key is under the mat", field="shed_key", value="mat"
        )
        recalled(mem, "shed key")
        synced(mem)
        (base,) = files_of(db_path, "vec")
        whole = base.read_bytes()
        assert nearest(mem, "my shed key is under the mat")[0] == old.id
    with open_mem(db_path) as other:
        new = other.remember(
            actor="ann",
            text="my shed key is in the kitchen drawer",
            field="shed_key",
            value="drawer",
        )
        assert other.store.records.get_record(other.tenant, old.id).status.value == "invalid"  # type: ignore[union-attr]
    for mem in (open_mem(db_path), open_mem(db_path)):  # caught up; then from base + tail
        with mem:
            assert old.id not in nearest(mem, "my shed key is under the mat", k=30)
            assert nearest(mem, "my shed key is in the kitchen drawer")[0] == new.id
            assert old.id not in recalled(mem, "shed key under the mat")
            synced(mem)
    assert base.read_bytes() == whole
    (tail,) = files_of(db_path, "tail")
    assert new.id.encode() in tail.read_bytes()


def test_a_forget_reaches_the_tail_and_vectors_held_in_another_process(db_path: Path) -> None:
    with open_mem(db_path) as holder, open_mem(db_path) as other:
        ids = base_with_records(holder)
        added = holder.remember(actor="ann", text="the red trowel is in the left pocket").id
        assert nearest(holder, "the red trowel is in the left pocket")[0] == added
        store = synced(holder)
        (tail,) = files_of(db_path, "tail")
        vec = store.search.record_vectors(holder.tenant, [added], HashEmbedder().name)[added]
        needles = [added.encode(), vec.astype(np.float32).tobytes()]
        assert all(n in tail.read_bytes() for n in needles)
        report = other.forget(record_id=added)  # `holder` still holds it in memory
        assert report.verified and report.remaining["vector_files"] == 0
        for path in [*files_of(db_path, "vec"), *files_of(db_path, "tail")]:
            data = path.read_bytes()
            assert not any(n in data for n in needles)
        assert added not in nearest(holder, "the red trowel is in the left pocket", k=30)
        assert ids[2] in nearest(holder, TEXTS[2])
        synced(holder)
        for path in [*files_of(db_path, "vec"), *files_of(db_path, "tail")]:
            data = path.read_bytes()
            assert not any(n in data for n in needles)


def test_a_forget_copies_the_held_vectors_without_it_and_writes_them_again(
    db_path: Path,
) -> None:
    with open_mem(db_path) as mem:
        ids = base_with_records(mem)
        gone = ids[4]
        vec = synced(mem).search.record_vectors(mem.tenant, [gone], HashEmbedder().name)[gone]
        needles = [gone.encode(), vec.astype(np.float32).tobytes()]  # float32 below 20,000
        assert all(n in files_of(db_path, "vec")[0].read_bytes() for n in needles)
        assert mem.forget(record_id=gone).verified
        synced(mem)  # no recall since: the forget itself caught the held vectors up
        (base,) = files_of(db_path, "vec")
        data = base.read_bytes()
        assert not any(n in data for n in needles) and ids[5].encode() in data
        assert gone not in nearest(mem, TEXTS[4], k=30) and ids[5] in nearest(mem, TEXTS[5])


_WRITER = """
import sys
from remem import Memory
from remem.embed import HashEmbedder
mem = Memory.open(sys.argv[1], embedder=HashEmbedder())
i = 0
while True:
    mem.remember(actor="ann", text=f"a spare seed tray number {i} sits on shelf {i % 7}")
    mem.recall(actor="ann", query=f"seed tray {i}", k=3)  # catches up: writes the tail
    print(i, flush=True)
    i += 1
"""


def test_a_process_killed_mid_update_leaves_old_or_whole_files(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        base_with_records(mem)
    (base,) = files_of(db_path, "vec")
    whole = base.read_bytes()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for delay in (0.6, 0.9, 1.3):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db_path)],
            stdout=subprocess.PIPE, env=env, text=True,
        )  # fmt: skip
        assert child.stdout is not None
        child.stdout.readline()  # it has written at least once
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert base.read_bytes() == whole  # the base is never rewritten by a catch-up
        with open_mem(db_path) as fresh:
            files = VectorFiles(Path(str(db_path) + ".vectors"))
            opened = files.open(fresh.tenant, "ann", "records")
            assert opened is not None  # the old base, and its tail is whole if there is one
            assert not files_of(db_path, "tail") or opened.stamp != opened.base
            fresh.remember(actor="ann", text=f"a watering can number {delay}")
            fresh.recall(actor="ann", query="watering can", k=3)
            synced(fresh)  # a write clears what a killed writer left half done
            assert not list(files.folder.glob(".*.tmp"))
            stored = fresh.store.records.list_records(Scope(fresh.tenant, "ann"))
            last = max(stored, key=lambda r: r.valid_from)
            assert nearest(fresh, last.text)[0] == last.id
            synced(fresh)
