"""Two processes remembering, recalling and forgetting on one SQLite file keep FTS5 sound.

Written against a defect: every forget merged both full-text indexes with FTS5
'optimize', which on SQLite 3.40 writes the merged segment onto a new level and
never drops the emptied ones; after about 2,000 erasures the structure record
held more levels than FTS5 reads and the index was "malformed" (503
`store_corrupt`) while `PRAGMA integrity_check` passed. Two `Memory` objects in
two processes reached it in under a minute; the level count, which FTS5's own
merges keep within 64, passed 64 within seconds. Now the index is rebuilt
instead of merged once it has more than `FTS_MAX_LEVELS` levels
(`remem.store.sqlite.erasure.scrub_fts`).
"""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
import string
import time
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.errors import NotFound
from remem.store.sqlite.erasure import fts_levels
from tests.support.store import files_bytes

SECONDS = 8.0  # each worker's time; the whole test stays under 20 s
FTS5_MAX_LEVEL = 64  # the most levels FTS5's own merges ever build


def _word(rnd: random.Random) -> str:
    return "".join(rnd.choice(string.ascii_lowercase) for _ in range(8))


def _work(path: str, worker: int, seconds: float, out: Any) -> None:
    """Remember, recall and forget (every second turn) until `seconds` pass; report the
    ids kept (with their unique word), the ids forgotten, and the first error."""
    rnd = random.Random(worker)
    mem = Memory.open(path, embedder=HashEmbedder())
    kept: dict[str, str] = {}
    forgotten: list[str] = []
    error = None
    try:
        end = time.monotonic() + seconds
        turn = 0
        while time.monotonic() < end:
            word = _word(rnd)
            actor = f"w{worker}"
            rec = mem.remember(actor=actor, text=f"{word.title()} lent me a {_word(rnd)}")
            kept[rec.id] = word
            mem.add_event(actor=actor, session="s", role="user", text=f"I met {word} today")
            mem.recall(actor=actor, query=f"who lent me {word}", k=5)
            if turn % 2 == 1:
                oldest = next(iter(kept))
                mem.forget(record_id=oldest)
                del kept[oldest]
                forgotten.append(oldest)
            turn += 1
    except Exception as exc:  # the parent reports it
        error = f"{type(exc).__name__}: {exc}"
    finally:
        mem.close()
    out.put((worker, kept, forgotten, error))


def test_two_processes_erasing_keep_fulltext_sound(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    Memory.open(path, embedder=HashEmbedder()).close()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_work, args=(path, w, SECONDS, out)) for w in range(2)]
    for p in workers:
        p.start()
    results = [out.get(timeout=SECONDS + 60) for _ in workers]
    for p in workers:
        p.join(30)
    assert [r[3] for r in results] == [None, None], results

    db = sqlite3.connect(path)
    try:
        for table in ("records_fts", "events_fts"):
            db.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
            assert fts_levels(db, table) <= FTS5_MAX_LEVEL, table
    finally:
        db.close()

    mem = Memory.open(path, embedder=HashEmbedder())
    try:
        forgotten = [i for r in results for i in r[2]]
        assert len(forgotten) >= 20, "too few erasures to mean anything"
        for record_id in forgotten:
            with pytest.raises(NotFound):
                mem.get(record_id)
        for worker, kept, _, _ in results:
            assert kept and all(mem.get(i).id == i for i in kept)
            for record_id, word in list(kept.items())[-10:]:  # found by its word alone
                packet = mem.recall(actor=f"w{worker}", query=word, k=5)
                assert record_id in {r.id for r in packet.records}, word
    finally:
        mem.close()


def _stack_levels(path: str, cycles: int) -> int:
    """Age the index as ~2,000 erasures on the old code did: a segment of several
    pages, then a small write and an 'optimize', `cycles` times (each stacked two
    levels on SQLite 3.40), then the rows used are deleted. Returns the level count."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        fill = "INSERT INTO records_fts (rowid, text, scope) VALUES (?, ?, 'aging')"
        for i in range(300):
            db.execute(fill, (10**9 + i, " ".join(f"filler{i}x{j}" for j in range(20))))
        for i in range(cycles):
            db.execute(fill, (2 * 10**9 + i, "aging"))
            db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
        db.execute("DELETE FROM records_fts WHERE rowid >= ?", (10**9,))
        db.execute("COMMIT")
        return fts_levels(db, "records_fts")
    finally:
        db.close()


def test_forget_heals_an_index_near_its_level_limit(tmp_path: Path) -> None:
    path = str(tmp_path / "aged.db")
    mem = Memory.open(path, embedder=HashEmbedder())
    try:
        rnd = random.Random(7)
        words = [(_word(rnd), _word(rnd)) for _ in range(12)]
        ids = [mem.remember(actor="ann", text=f"{a.title()} lent Ann a {b} locker").id
               for a, b in words]  # fmt: skip
        assert len(set(ids)) == 12
    finally:
        mem.close()
    assert _stack_levels(path, 999) >= 128  # 1,998 levels: two short of the limit

    mem = Memory.open(path, embedder=HashEmbedder())
    try:
        for n, record_id in enumerate(ids[:10]):  # each stacked a level on the old code
            report = mem.forget(record_id=record_id)
            assert report.verified and report.remaining["wal_frames"] == 0
            held = files_bytes(path).lower()  # the first was rebuilt away, the rest merged
            assert [w for pair in words[: n + 1] for w in pair if w.encode() in held] == []
        assert all(w.encode() in held for pair in words[10:] for w in pair)
        assert {r.id for r in mem.recall(actor="ann", query="locker", k=5).records} == set(ids[10:])
    finally:
        mem.close()
    db = sqlite3.connect(path)
    try:
        db.execute("INSERT INTO records_fts (records_fts) VALUES ('integrity-check')")
        assert fts_levels(db, "records_fts") <= FTS5_MAX_LEVEL
    finally:
        db.close()
