"""A scope's vectors persisted beside the SQLite database, memory-mapped on open.

Reading 100,000 vectors out of SQLite takes a fresh process 1-2 s, so each
(tenant, actor, kind) scope that has been searched keeps a copy in one file
under `<db>.vectors/`: a header (format, model, dim, rows, the scope's
`scope_versions` version and the id of its newest vector row), then the ids,
status and validity arrays, the matrix (float32 below `APPROX_MIN` rows,
float16 above, where only the refined rows are widened) and, above
`APPROX_MIN`, the PCA projection of `remem.store.vectors`. Opening maps the
file; nothing is read until a search touches it.

The file is a cache, never the source of truth. It is trusted only when its
header matches the scope's version and newest row as the database says
(read in the same transaction as the rows it would replace), so a stale,
foreign (another database's, same path) or damaged file is rebuilt from the
database. A file is written to a temporary name, fsynced and renamed into
place, so a crash never leaves a half file under the real name, and two
processes racing to write one end with one whole file. Erasure deletes the
scope's files (see `SQLiteStore.forget_record`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.store.vectors import ScopeVectors

FORMAT = 1
MAGIC = b"REMEMVEC"
ALIGN = 64
KINDS = ("records", "events")


@dataclass(frozen=True)
class Stamp:
    """What ties a file to the database's current state of one scope."""

    version: int
    last_id: str  # the scope's newest vector row, any status: a new database differs


class VectorFiles:
    """The folder of per-scope vector files beside one SQLite database."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def beside(cls, db_path: str) -> VectorFiles | None:
        """The folder `<db>.vectors/`, made if missing; None where files cannot be kept.

        An in-memory database (`:memory:`, a `file:` URI) or a location this
        process cannot write degrades to the in-memory path: the scope's
        vectors are then read from the database once per process, as before.
        """
        if db_path == ":memory:" or db_path.startswith("file:") or not db_path:
            return None
        folder = Path(db_path).expanduser().resolve().parent / (Path(db_path).name + ".vectors")
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            return None
        if not os.access(folder, os.W_OK | os.X_OK):
            return None
        return cls(folder)

    def path(self, tenant: str, actor: str, kind: str) -> Path:
        """The file of one scope (named by a digest: no tenant or actor text in the name)."""
        digest = hashlib.sha256(json.dumps([tenant, actor, kind]).encode()).hexdigest()[:32]
        return self.folder / f"{digest}.{kind}.vec"

    def open(self, tenant: str, actor: str, kind: str, stamp: Stamp) -> ScopeVectors | None:
        """The scope's vectors mapped from its file, or None if missing, damaged or stale."""
        found = _read(self.path(tenant, actor, kind))
        if found is None:
            return None
        head, arrays = found
        expected = {"tenant": tenant, "actor": actor, "kind": kind}
        if any(head.get(k) != v for k, v in expected.items()):
            return None
        if head.get("version") != stamp.version or head.get("last_id") != stamp.last_id:
            return None
        vectors = ScopeVectors(
            ids=arrays["ids"],
            matrix=arrays["matrix"],
            active=arrays["active"],
            valid_from=arrays["valid_from"],
            valid_until=arrays["valid_until"],
            model=str(head["model"]),
        )
        if "basis" in arrays and "projected" in arrays:
            vectors.attach_projection(arrays["basis"], arrays["projected"])
        return vectors

    def write(
        self, tenant: str, actor: str, kind: str, stamp: Stamp, vectors: ScopeVectors
    ) -> None:
        """Persist one scope's vectors atomically; a failure to write only loses the cache."""
        final = self.path(tenant, actor, kind)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        projection = vectors.projection()
        arrays: dict[str, npt.NDArray[Any]] = {
            "ids": _id_array(vectors.ids),
            "active": np.asarray(vectors.active, np.bool_),
            "valid_from": np.asarray(vectors.valid_from, np.float64),
            "valid_until": np.asarray(vectors.valid_until, np.float64),
            "matrix": np.asarray(vectors.matrix, np.float16 if projection else np.float32),
        }
        if projection is not None:
            arrays["basis"], arrays["projected"] = projection
        n, dim = vectors.matrix.shape
        head: dict[str, Any] = {
            "format": FORMAT, "tenant": tenant, "actor": actor, "kind": kind,
            "model": vectors.model, "dim": int(dim), "rows": int(n),
            "version": stamp.version, "last_id": stamp.last_id,
        }  # fmt: skip
        try:
            with open(tmp, "wb") as f:
                _dump(f, head, arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
            _fsync_dir(self.folder)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def remove_scope(self, tenant: str, actor: str) -> None:
        """Delete both files of a scope (erasure: they may hold what was forgotten)."""
        for kind in KINDS:
            with contextlib.suppress(FileNotFoundError):
                self.path(tenant, actor, kind).unlink()

    def holding(self, tenant: str, actor: str, ids: set[str] | None = None) -> int:
        """How many of the scope's files exist and hold any of `ids` (any id when None).

        Read back after an erasure: a file that exists but cannot be read counts.
        """
        count = 0
        for kind in KINDS:
            path = self.path(tenant, actor, kind)
            if not path.exists():
                continue
            found = _read(path)
            if ids is None or found is None:
                count += 1
                continue
            held = {bytes(i).decode("utf-8", "replace") for i in found[1]["ids"]}
            count += bool(held & ids)
        return count


def _id_array(ids: Any) -> npt.NDArray[np.bytes_]:
    if isinstance(ids, np.ndarray):
        return ids
    encoded = [str(i).encode() for i in ids]
    width = max((len(e) for e in encoded), default=1) or 1
    return np.array(encoded, dtype=f"S{width}")


def _dump(f: Any, head: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
    layout: dict[str, list[Any]] = {}
    offset = 0
    for name, arr in arrays.items():
        layout[name] = [arr.dtype.str, list(arr.shape), offset]
        offset += _padded(arr.nbytes)
    head = {**head, "arrays": layout, "data_bytes": offset}
    text = json.dumps(head).encode()
    start = _padded(len(MAGIC) + 8 + len(text))
    f.write(MAGIC + len(text).to_bytes(8, "little") + text)
    f.write(b"\0" * (start - len(MAGIC) - 8 - len(text)))
    for arr in arrays.values():
        data = np.ascontiguousarray(arr).tobytes()
        f.write(data)
        f.write(b"\0" * (_padded(len(data)) - len(data)))


def _read(path: Path) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The header and arrays (views of a read-only map) of a file, or None if not whole."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(MAGIC) + 8:
                return None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        if mapped[: len(MAGIC)] != MAGIC:
            return None
        length = int.from_bytes(mapped[len(MAGIC) : len(MAGIC) + 8], "little")
        if length > size:
            return None
        head = json.loads(mapped[len(MAGIC) + 8 : len(MAGIC) + 8 + length])
        start = _padded(len(MAGIC) + 8 + length)
        if head.get("format") != FORMAT or start + int(head["data_bytes"]) != size:
            return None
        arrays: dict[str, npt.NDArray[Any]] = {}
        for name, (dtype, shape, offset) in head["arrays"].items():
            dt = np.dtype(dtype)
            count = int(np.prod(shape)) if shape else 1
            if start + offset + count * dt.itemsize > size:
                return None
            flat = np.frombuffer(mapped, dtype=dt, count=count, offset=start + offset)
            arrays[name] = flat.reshape(shape)
        rows = int(head["rows"])
        if arrays["matrix"].shape != (rows, int(head["dim"])) or len(arrays["ids"]) != rows:
            return None
        return head, arrays
    except (ValueError, KeyError, TypeError):
        return None


def _padded(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
