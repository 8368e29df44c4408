"""Issue 15: a large scope's int8 codes kept in a file beside its vectors (`.i8`).

A fresh process's first search of a scope above `APPROX_MIN` rows scores the
codes read from that file instead of reading the whole float32 projection,
and gets the same answer as without the file. The file is a cache: missing,
damaged or another base's (stale), it is made again from the projection and
never trusted; a forget reaches it (read back, it holds neither the forgotten
id nor its row of codes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.sqlite.store import SQLiteStore
from remem.store.sqlite.vectors.coarse import Int8Coarse
from remem.store.sqlite.vectors.files import _read
from remem.store.sqlite.vectors.index import QUANTISE_AT
from tests.support.vectors import PICKS, TOTAL, built, db, files, held, nearest, text_of

pytest.importorskip("onnxruntime")  # the codes are scored by ONNX Runtime only

__all__ = ["built", "db"]  # the fixtures, imported to be used here


def read_codes(db: Path) -> tuple[list[str], np.ndarray]:
    """The ids and codes the scope's `.i8` file holds, read from its bytes."""
    (path,) = files(db, "i8")
    found = _read(path)
    assert found is not None
    _, arrays = found
    return [bytes(i).decode() for i in arrays["ids"]], np.array(arrays["matrix"])


def exact(db: Path) -> list[float]:
    """The 5 best cosines of each pick in turn, scanning every row of the scope's file."""
    found = _read(files(db, "vec")[0])
    assert found is not None
    matrix = np.asarray(found[1]["matrix"], np.float32)
    scores = [matrix @ HashEmbedder().embed([text_of(i)])[0] for i in PICKS]
    return [float(c) for row in scores for c in np.sort(row)[::-1][:5]]


def test_the_codes_are_written_with_the_base_and_a_fresh_first_search_uses_them(
    db: Path,
) -> None:
    ids, codes = read_codes(db)  # the bulk load wrote them beside the base
    assert len(ids) == TOTAL and codes.shape == (TOTAL, 96) and codes.dtype == np.uint8
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        with_codes = nearest(mem)
        first = held(mem)
        assert first.coarse_codes() is not None  # at the first search: read, not made
        assert np.array_equal(first.coarse_codes().codes, codes)
    for path in files(db, "i8"):
        path.unlink()
    written = files(db, "vec")[0].stat().st_mtime_ns
    with Memory.open(db, embedder=HashEmbedder()) as mem:  # missing: made again
        assert nearest(mem) == with_codes
    assert [h[0][0] for h in with_codes] == [f"rec_big{i:06d}" for i in PICKS]
    # what a scan of every row finds: the same cosines (rows of equal cosine in any order)
    assert [c for h in with_codes for _, c in h] == pytest.approx(exact(db), abs=1e-5)
    assert np.array_equal(read_codes(db)[1], codes)
    assert files(db, "vec")[0].stat().st_mtime_ns == written  # the base was only read


def test_closing_the_store_waits_for_the_scopes_own_session_reading_the_codes(
    db: Path,
) -> None:
    """From a scope's third search its codes (a map of the `.i8` file) are read by a
    thread making their own ONNX Runtime session; the store's close waits for it, so
    nothing reads the map afterwards (a file cut short under it: SIGBUS)."""
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        nearest(mem)  # a search of each pick
        while held(mem)._searches <= QUANTISE_AT:
            nearest(mem)
        codes = held(mem).coarse_codes()
        assert codes is not None and codes.packed._thread is not None  # begun
    assert codes.packed.session is not None  # made before the close returned
    assert not codes.packed._thread.is_alive()


def test_a_damaged_or_stale_codes_file_is_made_again_and_a_forget_reaches_it(db: Path) -> None:
    (path,) = files(db, "i8")
    whole = path.read_bytes()
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        expected = nearest(mem)
    for damaged in (whole[: len(whole) // 2], b"garbage" * 10, whole[:8] + b"\xff" * 64):
        path.write_bytes(damaged)
        with Memory.open(db, embedder=HashEmbedder()) as mem:
            assert nearest(mem) == expected
        assert path.read_bytes() == whole  # made again from the projection, whole
    gone = expected[0][0][0]
    before_ids, before = read_codes(db)
    row = before_ids.index(gone)
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        assert mem.forget(record_id=gone).verified
        after = [h[0][0] for h in nearest(mem)]
        assert isinstance(mem.store, SQLiteStore)
        mem.store.search.sync_vector_files()
    assert gone not in after
    ids, codes = read_codes(db)  # read back: the forgotten row's codes are gone
    assert gone not in ids and len(ids) == TOTAL - 1
    base = _read(files(db, "vec")[0])
    assert base is not None and [bytes(i).decode() for i in base[1]["ids"]] == ids
    kept = np.delete(before, row, 0)  # the rows kept, quantised on the same or a new basis
    assert np.array_equal(codes, kept) or np.array_equal(
        codes, Int8Coarse.quantised(np.array(base[1]["projected"])).codes
    )
    stale = path.read_bytes()
    path.write_bytes(whole)  # the codes of the base before the forget: another base's
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        assert [h[0][0] for h in nearest(mem)] == after
    assert path.read_bytes() == stale and gone not in read_codes(db)[0]  # not trusted


def test_forget_actor_removes_the_codes_file_too(db: Path) -> None:
    assert files(db, "i8")
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        nearest(mem)
        report = mem.forget(actor="ann")
        assert report.verified and report.remaining["vector_files"] == 0
    assert files(db, "i8") == [] and files(db, "vec") == []
