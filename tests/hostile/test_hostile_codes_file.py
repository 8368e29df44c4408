"""A large scope's `.i8` codes file with a flipped byte, or without a checksum.

Written against a defect: the codes file was checked by its stamp and basis digest
only, so a byte flipped in its codes (disk corruption, tampering) was trusted and
silently changed which rows the coarse pass refines. Now its header holds a CRC-32
of its arrays; a file whose bytes do not match, or one with no checksum (written by
an older remem, e.g. after a downgrade), is made again from the projection.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.sqlite.vectors.files import _dump, _read
from tests.support.vectors import built, db, files, held, nearest

pytest.importorskip("onnxruntime")  # the codes are scored by ONNX Runtime only

__all__ = ["built", "db"]  # the fixtures, imported to be used here


def _offset(path: Path, array: str, index: int) -> int:
    """Where byte `index` of one array of a file lies in its bytes."""
    found = _read(path)
    assert found is not None
    head, _ = found
    return int(head["_start"]) + int(head["arrays"][array][2]) + index


@pytest.mark.parametrize(("array", "index"), [("matrix", 4321 * 96 + 7), ("scale", 2),
                                              ("ids", 5)])  # fmt: skip
def test_a_codes_file_with_a_flipped_byte_is_made_again(db: Path, array: str, index: int) -> None:
    (path,) = files(db, "i8")
    whole = path.read_bytes()
    codes = np.array(_read(path)[1]["matrix"])  # type: ignore[index]
    at = _offset(path, array, index)
    flipped = bytearray(whole)
    flipped[at] ^= 0x5A
    path.write_bytes(bytes(flipped))
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        nearest(mem)
        used = held(mem).coarse_codes()
        assert used is not None and np.array_equal(used.codes, codes)  # not the flipped ones
    assert path.read_bytes() == whole  # made again from the projection, whole


def test_a_codes_file_without_a_checksum_is_made_again(db: Path) -> None:
    """What an older remem wrote (or writes after a downgrade) is not trusted."""
    (path,) = files(db, "i8")
    whole = path.read_bytes()
    found = _read(path)
    assert found is not None
    head, arrays = found
    old = {k: v for k, v in head.items() if k not in ("crc32", "arrays", "data_bytes")}
    old = {k: v for k, v in old.items() if not k.startswith("_")}
    copies = {name: np.array(a) for name, a in arrays.items()}  # off the map, then rewrite
    del found, arrays
    with open(path, "wb") as f:
        _dump(f, old, copies)
    assert path.read_bytes() != whole
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        nearest(mem)
    assert path.read_bytes() == whole  # written again, with its checksum
