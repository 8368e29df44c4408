"""Issue 15 item 1: a scope's vectors persisted beside the SQLite database.

A fresh process opens the scope's file instead of reading every vector
through SQLite; the file is a cache (stale, damaged or another database's
file is rebuilt from the database, and answers do not change), and erasure
reaches it: after `forget`, the file's bytes hold neither the forgotten id
nor its vector.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from remem import Memory
from remem.embed import HashEmbedder
from remem.model import Authority, Kind, Record, Sensitivity, Source, Status
from remem.policy.scope import namespace_for
from remem.store.roles import Scope, Write
from remem.store.sqlite.search import PREPARED_MIN
from remem.store.sqlite.store import SQLiteStore
from remem.store.sqlite.vectors.index import APPROX_MIN, QUANTISE_AT
from tests.support.vectors import write_ann

TEXTS = [f"I keep a {w} in the garden shed, number {i}" for i, w in
         enumerate(["rake", "hoe", "spade", "trowel", "wheelbarrow", "ladder"] * 4)]  # fmt: skip


def vector_files(db: Path) -> list[Path]:
    folder = Path(str(db) + ".vectors")
    return sorted(folder.glob("*.vec")) if folder.is_dir() else []


def answer(mem: Memory, query: str = "where is the spade") -> list[str]:
    return [item.id for item in mem.recall(actor="ann", query=query, k=5).records]


def synced(mem: Memory) -> None:
    """Wait for the vector files a recall writes beside its answer."""
    assert isinstance(mem.store, SQLiteStore)
    mem.store.search.sync_vector_files()


def open_mem(db: Path) -> Memory:
    return Memory.open(db, embedder=HashEmbedder())


def test_a_fresh_open_answers_from_the_scopes_file(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        for text in TEXTS:
            mem.remember(actor="ann", text=text)
        first = answer(mem)
    files = vector_files(db_path)
    assert [p.name.split(".")[1] for p in files] == ["records"]
    written = files[0].stat().st_mtime_ns
    with open_mem(db_path) as mem:  # a fresh store: nothing cached in memory
        assert answer(mem) == first
    assert files[0].stat().st_mtime_ns == written  # opened, not rebuilt


def test_a_damaged_or_stale_file_is_rebuilt_and_answers_do_not_change(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        for text in TEXTS:
            mem.remember(actor="ann", text=text)
        first = answer(mem)
    (path,) = vector_files(db_path)
    whole = path.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"garbage" * 10, whole[:8] + b"\xff" * 64):
        path.write_bytes(damaged)
        with open_mem(db_path) as mem:
            assert answer(mem) == first
        assert path.read_bytes() == whole  # rebuilt from the database, whole again
    with open_mem(db_path) as other:  # another process adds to the scope
        added = other.remember(actor="ann", text="the spade is behind the door").id
    with open_mem(db_path) as mem:
        assert added in answer(mem)  # the stale file was not trusted


def test_a_file_left_by_another_database_at_the_same_path_is_not_trusted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with open_mem(db) as mem:
        old = mem.remember(actor="ann", text="I keep the spade in the shed").id
        answer(mem)
    for p in tmp_path.glob("m.db*"):
        if p.is_file():
            p.unlink()  # the database goes, its vector folder stays
    with open_mem(db) as mem:  # same path, same scope version, other records
        new = mem.remember(actor="ann", text="I keep the spade in the shed").id
        assert answer(mem) == [new]
    (path,) = vector_files(db)
    assert new.encode() in path.read_bytes() and old.encode() not in path.read_bytes()


def forgotten_bytes(mem: Memory, record_id: str) -> list[bytes]:
    vec = mem.store.search.record_vectors(mem.tenant, [record_id], HashEmbedder().name)[record_id]
    return [record_id.encode(), vec.astype(np.float16).tobytes(), vec.astype(np.float32).tobytes()]


def test_forget_record_leaves_neither_its_id_nor_its_vector_in_the_file(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        ids = [mem.remember(actor="ann", text=text).id for text in TEXTS]
        answer(mem)
        gone = ids[2]
        needles = forgotten_bytes(mem, gone)
        synced(mem)  # written beside the recall
        held = vector_files(db_path)[0].read_bytes()
        assert needles[0] in held and (needles[1] in held or needles[2] in held)
        report = mem.forget(record_id=gone)
        assert report.verified and report.remaining["vector_files"] == 0
        for path in vector_files(db_path):
            assert not any(n in path.read_bytes() for n in needles)
        assert gone not in answer(mem)  # the rebuilt file
        synced(mem)
        (path,) = vector_files(db_path)
        data = path.read_bytes()
        assert ids[3].encode() in data and not any(n in data for n in needles)


def test_forget_actor_removes_the_scopes_files(db_path: Path) -> None:
    with open_mem(db_path) as mem:
        for text in TEXTS:
            mem.remember(actor="ann", text=text)
        mem.remember(actor="bob", text="I keep a spade too")
        answer(mem)
        mem.recall(actor="bob", query="spade")
        synced(mem)
        assert len(vector_files(db_path)) == 2
        report = mem.forget(actor="ann")
        assert report.verified and report.remaining["vector_files"] == 0
        (left,) = vector_files(db_path)
        assert b"ann" not in left.read_bytes() and b"bob" in left.read_bytes()


def test_an_in_memory_database_keeps_no_files_and_still_answers(tmp_path: Path) -> None:
    with Memory.open(":memory:", embedder=HashEmbedder()) as mem:
        assert isinstance(mem.store, SQLiteStore) and mem.store.search.vector_files is None
        rec = mem.remember(actor="ann", text="I keep the spade in the shed")
        assert answer(mem) == [rec.id]


def test_a_large_scope_opens_its_projection_and_finds_the_same_records(db_path: Path) -> None:
    emb = HashEmbedder()
    words = ["rake", "hoe", "spade", "trowel", "ladder", "hose", "shears", "sieve"]
    texts = [f"{words[i % 8]} {words[i // 8 % 8]} {words[i // 64 % 8]} item{i}"
             for i in range(APPROX_MIN + 500)]  # fmt: skip
    with open_mem(db_path) as mem:
        write_ann(mem, emb, texts)
        picks = [7, 12_345, len(texts) - 1]
        first = nearest(mem, [texts[i] for i in picks])  # loaded from the database
    (path,) = vector_files(db_path)
    assert path.stat().st_size < len(texts) * emb.dim * 4  # float16 matrix beside the projection
    with open_mem(db_path) as mem:  # from the file: projected, then refined
        again = nearest(mem, [texts[i] for i in picks])
    assert [h[0][0] for h in again] == [f"rec_big{i:06d}" for i in picks]
    assert [h[0] for h in again] == [h[0] for h in first]  # the same best, the same cosine


def nearest(mem: Memory, queries: list[str]) -> list[list[tuple[str, float]]]:
    emb = HashEmbedder()
    scope = Scope(mem.tenant, "ann")
    now = datetime(2026, 6, 1, tzinfo=UTC)
    return [
        mem.store.search.vector_search(scope, emb.name, emb.embed([q])[0], 5, now) for q in queries
    ]


def shed_records(mem: Memory, actor: str, count: int, start: int = 0) -> list[Record]:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        Record(
            id=f"rec_{actor}{start + j:06d}", tenant=mem.tenant, actor=actor,
            namespace=namespace_for(mem.tenant, actor, Kind.SEMANTIC), kind=Kind.SEMANTIC,
            text=f"{TEXTS[j % len(TEXTS)]} box{start + j}",
            source=Source("explicit", (), "t", "t"), authority=Authority.CONFIRMED,
            sensitivity=Sensitivity.NORMAL, valid_from=when, created_at=when, updated_at=when,
            status=Status.ACTIVE,
        )
        for j in range(count)
    ]  # fmt: skip


def test_a_bulk_load_leaves_the_filled_scopes_file_and_forget_reaches_it(db_path: Path) -> None:
    emb = HashEmbedder()
    with open_mem(db_path) as mem:
        with mem.store.bulk_load():
            for start in range(0, PREPARED_MIN, 2500):
                ann = shed_records(mem, "ann", 2500, start)
                bob = shed_records(mem, "bob", 10, start)  # too few to be worth a file
                vectors = tuple(emb.embed([r.text for r in ann + bob]))
                mem.store.records.apply(
                    Write(tenant=mem.tenant, inserts=tuple(ann + bob), vectors=vectors,
                          vector_model=emb.name)
                )  # fmt: skip
        # no search has run: the load itself left ann's file, and only hers
        (path,) = vector_files(db_path)
        assert path.name.split(".")[1] == "records"
        assert b"rec_ann004999" in path.read_bytes() and b"rec_bob" not in path.read_bytes()
        loaded = answer(mem, "where is the spade box17")
    written = path.stat().st_mtime_ns
    with open_mem(db_path) as mem:  # a fresh store answers from that file, unchanged
        assert answer(mem, "where is the spade box17") == loaded
        assert path.stat().st_mtime_ns == written
        gone = loaded[0]
        needles = forgotten_bytes(mem, gone)
        assert needles[0] in path.read_bytes()
        assert mem.forget(record_id=gone).verified
        assert gone not in answer(mem, "where is the spade box17")
        synced(mem)
        for left in vector_files(db_path):
            assert not any(n in left.read_bytes() for n in needles)


def test_a_large_scopes_int8_pass_takes_writes_and_loses_a_forgotten_row(db_path: Path) -> None:
    """The int8 codes of the coarse pass (`remem.store.sqlite.vectors.coarse`, begun at a large
    scope's third search) are a copy of the projection: a record added after them is still
    found, and after `forget` the codes held have lost the forgotten row."""
    emb = HashEmbedder()
    total = APPROX_MIN + 500
    scope = Scope("default", "ann")
    now = datetime(2026, 6, 1, tzinfo=UTC)
    texts: dict[str, str] = {}
    with open_mem(db_path) as mem:
        with mem.store.bulk_load():
            for start in range(0, total, 5000):
                ann = shed_records(mem, "ann", min(5000, total - start), start)
                texts.update((r.id, r.text) for r in ann)
                vectors = tuple(emb.embed([r.text for r in ann]))
                mem.store.records.apply(
                    Write(tenant=mem.tenant, inserts=tuple(ann), vectors=vectors,
                          vector_model=emb.name)
                )  # fmt: skip
        assert isinstance(mem.store, SQLiteStore) and mem.tenant == scope.tenant
        target = f"rec_ann{total - 40:06d}"
        query = emb.embed([texts[target]])[0]

        def search() -> list[tuple[str, float]]:
            return mem.store.search.vector_search(scope, emb.name, query, 10, now)

        def held() -> Any:
            return mem.store.search._vec_cache[("default", "ann", "records")].vectors

        for _ in range(QUANTISE_AT):
            search()
        assert held().wait_coarse(60) is not None
        first = search()
        before = held()
        assert before._coarse8 is not None and len(before._coarse8.codes) == total
        assert first[0][0] == target

        added = shed_records(mem, "ann", 1, start=total)[0]
        added = dataclasses.replace(added, text=texts[target])
        mem.store.records.apply(
            Write(tenant=mem.tenant, inserts=(added,), vectors=(query,), vector_model=emb.name)
        )
        assert search()[0][0] == added.id  # the new row (the tail) beside the int8 codes
        assert held()._coarse8 is before._coarse8  # shared: the base rows did not change
        assert before._coarse8.wait_packed(60)  # its own session, begun at a search since

        gone = first[0][0]
        row = [bytes(i).decode() for i in before.ids].index(gone)
        assert mem.forget(record_id=gone).verified
        after = held()
        assert gone not in [rid for rid, _ in search()]
        assert after._coarse8 is not None and len(after._coarse8.codes) == total - 1
        assert np.array_equal(after._coarse8.codes, np.delete(before._coarse8.codes, row, 0))
        assert after._coarse8.packed.session is None  # not the forgotten row's: made anew
