"""A scope's vectors persisted beside the SQLite database, memory-mapped on open.

Reading 100,000 vectors out of SQLite takes a fresh process 1-2 s, so each
(tenant, actor, kind) scope that has been searched keeps a copy under
`<db>.vectors/`. The base file (`.vec`) holds a header (format, model, dim,
rows and the `Stamp` of the database state it was read from), then the ids,
database rows, status and validity arrays, the matrix (float32 below
`APPROX_MIN` rows, float16 above, where only the refined rows are widened)
and, above `APPROX_MIN`, the PCA projection of `remem.store.sqlite.vectors.index`. Opening
maps the file; nothing is read until a search touches it.

A scope that changed since is caught up from the database by reading only
what changed (`remem.store.sqlite.vectors.load`), and what that read is kept in
the tail file (`.tail`): the rows added since the base (float32) and the
status and validity arrays of every row as they are now, under the base's
stamp and its own. The tail is rewritten whole on each catch-up (it is
small); when it grows past `TAIL_MAX` rows the base is rewritten instead.

Above `APPROX_MIN` rows the base has a third file (`.i8`): the int8 codes of
its projection that the coarse pass scores (`remem.store.sqlite.vectors.coarse`), 96 bytes a
row, tied to the base by its stamp and a digest of its PCA basis, and checked whole by
a CRC-32 of its arrays written in its header. With them a
fresh process's first search scores 9.6 MB at 100,000 rows instead of the 38 MB
projection, and when the files are not in the page cache the float16 matrix
(which a first recall's searches refine almost all of) is read in the
background from the open (`_read_ahead_if_cold`) instead of fault by fault.
The codes are written with the base and, when missing, corrupted or not the
base's, made again from the projection by the process that opens it. A codes
file written before the checksum (or by an older remem after a downgrade) has
none and is made again, as is one an older remem left behind while it rewrote
the base (its stamp is the old base's).

All three are caches, never the source of truth: the caller compares their stamps
with the database (in the same transaction as the rows it would read), and
a stale, foreign (another database's, same path) or damaged file is caught
up or rebuilt from the database. A file is written to a temporary name,
fsynced and renamed into place, so a crash (a process killed mid-write)
leaves the old whole file or none under the real name, and two processes
racing to write one end with one whole file. Erasure deletes the scope's
files (see `SQLiteStore.forget_record`); the codes file holds the ids of its
rows, so what erasure reads back covers it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import secrets
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.store.sqlite.vectors.coarse import Int8Coarse, installed
from remem.store.sqlite.vectors.index import ScopeVectors

FORMAT = 2
MAGIC = b"REMEMVEC"
ALIGN = 64
KINDS = ("records", "events")
SUFFIXES = ("vec", "tail", "i8")
TAIL_MAX = 2000  # rows a tail holds before the base is rewritten (or 5% of the base)
STATUS_ARRAYS = ("active", "live", "valid_from", "valid_until")
AHEAD_BYTES = 4 << 20  # bytes asked for per read-ahead call (`_read_ahead_if_cold`)
PROBED = 16  # places of an array probed for being in the page cache


@dataclass(frozen=True)
class Stamp:
    """What ties vectors to the database state of one scope they were read from.

    `version`, `last_rowid`, `last_id` and `last_digest` (a digest of the
    newest vector row's bytes: another database's rows differ) say whether
    anything changed; `rows` and `closed` are where a catch-up starts: the
    scope's vector rows up to `last_rowid` (fewer now: some were deleted, so
    the vectors are rebuilt), and a digest of which of its records were not
    active (when it moved, statuses are patched; `remem.store.sqlite.vectors.load`).
    """

    version: int
    last_rowid: int
    last_id: str
    last_digest: str
    rows: int
    closed: str = ""

    def same_state(self, other: Stamp) -> bool:
        """Whether both describe the same database state (nothing changed between)."""
        return (self.version, self.last_rowid, self.last_id, self.last_digest) == (
            other.version, other.last_rowid, other.last_id, other.last_digest,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        """The stamp as a file header holds it."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Stamp | None:
        """A stamp read from a header, or None if it is not one."""
        try:
            return cls(
                int(d["version"]), int(d["last_rowid"]), str(d["last_id"]),
                str(d["last_digest"]), int(d["rows"]), str(d.get("closed", "")),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Opened:
    """A scope's vectors read from its files, the stamp of their base and of the whole."""

    vectors: ScopeVectors
    base: Stamp
    stamp: Stamp


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

    def path(self, tenant: str, actor: str, kind: str, suffix: str = "vec") -> Path:
        """A file of one scope (named by a digest: no tenant or actor text in the name)."""
        digest = hashlib.sha256(json.dumps([tenant, actor, kind]).encode()).hexdigest()[:32]
        return self.folder / f"{digest}.{kind}.{suffix}"

    def open(self, tenant: str, actor: str, kind: str) -> Opened | None:
        """The scope's vectors mapped from its base file and its tail, whatever their stamp.

        None if the base is missing, damaged or another scope's; a tail that
        is damaged or made for another base is left out. The caller compares
        the stamp with the database.
        """
        found = _read(self.path(tenant, actor, kind))
        if found is None:
            return None
        head, arrays = found
        expected = {"tenant": tenant, "actor": actor, "kind": kind}
        base = Stamp.from_dict(head.get("stamp"))
        if base is None or any(head.get(k) != v for k, v in expected.items()):
            return None
        vectors = ScopeVectors(
            ids=arrays["ids"], matrix=arrays["matrix"], active=arrays["active"],
            valid_from=arrays["valid_from"], valid_until=arrays["valid_until"],
            model=str(head["model"]), live=arrays["live"], rowids=arrays["rowids"],
        )  # fmt: skip
        codes = None
        if "basis" in arrays and "projected" in arrays:
            vectors.attach_projection(arrays["basis"], arrays["projected"])
            if installed():  # the projection is not scanned: the codes are
                codes = self._codes(tenant, actor, kind, head, base, arrays)
                vectors.attach_codes(codes)
                _read_ahead_if_cold(self.path(tenant, actor, kind), head, "matrix", arrays)
        tail = _read(self.path(tenant, actor, kind, "tail"))
        if tail is None:
            return Opened(vectors, base, base)
        t_head, t_arrays = tail
        stamp = Stamp.from_dict(t_head.get("stamp"))
        total = len(vectors.ids) + int(t_head["rows"])
        if (
            stamp is None
            or Stamp.from_dict(t_head.get("base")) != base
            or any(t_head.get(k) != v for k, v in {**expected, "model": vectors.model}.items())
            or any(len(t_arrays[name]) != total for name in (*STATUS_ARRAYS, "rowids"))
        ):
            return Opened(vectors, base, base)
        whole = ScopeVectors(
            ids=vectors.ids, matrix=vectors.matrix, active=t_arrays["active"],
            valid_from=t_arrays["valid_from"], valid_until=t_arrays["valid_until"],
            model=vectors.model, live=t_arrays["live"],
            rowids=t_arrays["rowids"], tail=t_arrays["matrix"],
            tail_ids=tuple(bytes(i).decode() for i in t_arrays["ids"]),
        )  # fmt: skip
        if "basis" in arrays and "projected" in arrays:
            whole.attach_projection(arrays["basis"], arrays["projected"])
            if codes is not None:  # the codes of the base rows: the tail is scored exactly
                whole.attach_codes(codes)
        return Opened(whole, base, stamp)

    def _codes(
        self, tenant: str, actor: str, kind: str, head: dict[str, Any], base: Stamp,
        arrays: dict[str, npt.NDArray[Any]],
    ) -> Int8Coarse:  # fmt: skip
        """The int8 codes of an opened base: read from its `.i8` file when that is the
        base's, else made from its projection and written."""
        projected, basis = arrays["projected"], arrays["basis"]
        path = self.path(tenant, actor, kind, "i8")
        found = _read(path)
        if found is not None:
            c_head, c_arrays = found
            expected = {"tenant": tenant, "actor": actor, "kind": kind, "model": head["model"],
                        "basis": _basis_digest(basis), "rows": len(projected)}  # fmt: skip
            codes, scale = c_arrays["matrix"], c_arrays.get("scale")
            if (
                all(c_head.get(k) == v for k, v in expected.items())
                and c_head.get("crc32") == _crc32(c_arrays)  # a flipped byte: made again
                and Stamp.from_dict(c_head.get("stamp")) == base
                and codes.dtype == np.uint8
                and codes.shape == projected.shape
                and scale is not None
                and scale.dtype == np.float32
                and scale.shape == (projected.shape[1],)
                and bool(np.all(scale > 0))
            ):
                _read_ahead_if_cold(path, c_head, "matrix", c_arrays)  # the first search reads all
                return Int8Coarse(codes, scale)
        made = Int8Coarse.quantised(projected)
        model = str(head["model"])
        if self._put_codes(tenant, actor, kind, model, base, arrays["ids"], basis, made):
            identity = _identity(self.path(tenant, actor, kind))
            if identity is None or identity != head.get("_identity"):
                # the base was removed (an erasure) or replaced meanwhile: not its codes
                with contextlib.suppress(OSError):
                    path.unlink()
        return made

    def _put_codes(
        self, tenant: str, actor: str, kind: str, model: str, stamp: Stamp, ids: Any,
        basis: Any, codes: Int8Coarse,
    ) -> bool:  # fmt: skip
        """Write the `.i8` file of the base stamped `stamp` (its rows' ids beside the codes)."""
        rows, dim = codes.codes.shape
        head: dict[str, Any] = {
            "format": FORMAT, "tenant": tenant, "actor": actor, "kind": kind,
            "model": model, "dim": int(dim), "rows": int(rows),
            "stamp": stamp.as_dict(), "basis": _basis_digest(basis),
        }  # fmt: skip
        arrays = {"ids": _id_array(ids), "matrix": codes.codes, "scale": codes.scale}
        head["crc32"] = _crc32(arrays)
        return self._put(self.path(tenant, actor, kind, "i8"), head, arrays)

    def write(
        self, tenant: str, actor: str, kind: str, stamp: Stamp, vectors: ScopeVectors
    ) -> bool:
        """Persist one scope's vectors as its base (its tail, now stale, is removed).

        Atomic; False when it could not be written (only the cache is lost).
        """
        vectors = vectors.merged()
        projection = vectors.projection()
        n, dim = vectors.matrix.shape
        arrays: dict[str, npt.NDArray[Any]] = {
            "ids": _id_array(vectors.ids),
            "rowids": _rowids(vectors),
            **_status_arrays(vectors),
            "matrix": np.asarray(vectors.matrix, np.float16 if projection else np.float32),
        }
        if projection is not None:
            arrays["basis"], arrays["projected"] = projection
        head: dict[str, Any] = {
            "format": FORMAT, "tenant": tenant, "actor": actor, "kind": kind,
            "model": vectors.model, "dim": int(dim), "rows": int(n), "stamp": stamp.as_dict(),
        }  # fmt: skip
        written = self._put(self.path(tenant, actor, kind), head, arrays)
        if written:
            with contextlib.suppress(OSError):
                self.path(tenant, actor, kind, "tail").unlink()
        if written and projection is not None and installed():
            basis, projected = projection
            codes = vectors.coarse_codes()  # made in this process from these very rows
            if codes is None or codes.codes.shape != projected.shape:
                codes = Int8Coarse.quantised(projected)
            self._put_codes(tenant, actor, kind, vectors.model, stamp, arrays["ids"], basis, codes)
        elif written:
            with contextlib.suppress(OSError):
                self.path(tenant, actor, kind, "i8").unlink()
        return written

    def write_tail(
        self, tenant: str, actor: str, kind: str, base: Stamp, stamp: Stamp,
        vectors: ScopeVectors,
    ) -> bool:  # fmt: skip
        """Persist what `vectors` hold beyond the base stamped `base` (see the module)."""
        tail = vectors.tail if vectors.tail is not None else np.zeros((0, vectors.matrix.shape[1]))
        arrays: dict[str, npt.NDArray[Any]] = {
            "ids": _id_array(vectors.tail_ids),
            "rowids": _rowids(vectors),
            **_status_arrays(vectors),
            "matrix": np.asarray(tail, np.float32),
        }
        head: dict[str, Any] = {
            "format": FORMAT, "tenant": tenant, "actor": actor, "kind": kind,
            "model": vectors.model, "dim": int(tail.shape[1]), "rows": len(vectors.tail_ids),
            "stamp": stamp.as_dict(), "base": base.as_dict(),
        }  # fmt: skip
        return self._put(self.path(tenant, actor, kind, "tail"), head, arrays)

    def _put(self, final: Path, head: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> bool:
        _clear_orphans(final)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as f:
                _dump(f, head, arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
            _fsync_dir(self.folder)
            return True
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False

    def remove_scope(self, tenant: str, actor: str) -> None:
        """Delete every file of a scope (erasure: they may hold what was forgotten)."""
        for kind in KINDS:
            for suffix in SUFFIXES:
                with contextlib.suppress(FileNotFoundError):
                    self.path(tenant, actor, kind, suffix).unlink()

    def remove_tail(self, tenant: str, actor: str, kind: str) -> None:
        """Delete one scope's tail file (one written while the scope changed)."""
        with contextlib.suppress(FileNotFoundError):
            self.path(tenant, actor, kind, "tail").unlink()

    def holding(
        self, tenant: str, actor: str, ids: set[str] | None = None, before: int | None = None
    ) -> int:
        """How many of the scope's files exist and hold any of `ids` (any id when None);
        with `before`, only those read from a scope version below it (a file read from
        the rows at or after an erasure's version holds none of what it erased).

        Read back after an erasure: a file that exists but cannot be read counts.
        """
        count = 0
        for kind in KINDS:
            for suffix in SUFFIXES:
                path = self.path(tenant, actor, kind, suffix)
                if not path.exists():
                    continue
                found = _read(path)
                if found is not None and before is not None and _read_since(found[0], before):
                    continue
                if ids is None or found is None:
                    count += 1
                    continue
                held = {bytes(i).decode("utf-8", "replace") for i in found[1]["ids"]}
                count += bool(held & ids)
        return count


def _read_since(head: dict[str, Any], version: int) -> bool:
    """Whether every stamp of a file's header (a tail's base too) is of `version` or later."""
    stamps = [Stamp.from_dict(head.get(name)) for name in ("stamp", "base") if name in head]
    return bool(stamps) and all(s is not None and s.version >= version for s in stamps)


def _clear_orphans(final: Path) -> None:
    """Delete the temporary files of `final` that a process killed mid-write left."""
    for tmp in final.parent.glob(f".{final.name}.*.tmp"):
        try:
            pid = int(tmp.name[len(final.name) + 2 :].split(".")[0])
            os.kill(pid, 0)  # raises if no such process: the writer is gone
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                tmp.unlink()
        except (ValueError, OSError):
            continue


def _rowids(vectors: ScopeVectors) -> npt.NDArray[np.int64]:
    if vectors.rowids is None:
        raise ValueError("vectors without their database rows cannot be kept in a file")
    return np.asarray(vectors.rowids, np.int64)


def _status_arrays(vectors: ScopeVectors) -> dict[str, npt.NDArray[Any]]:
    live = vectors.live if vectors.live is not None else np.ones(len(vectors), np.bool_)
    return {
        "active": np.asarray(vectors.active, np.bool_),
        "live": np.asarray(live, np.bool_),
        "valid_from": np.asarray(vectors.valid_from, np.float64),
        "valid_until": np.asarray(vectors.valid_until, np.float64),
    }


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
            stat = os.fstat(f.fileno())
            size = stat.st_size
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
        head["_identity"] = [stat.st_ino, stat.st_mtime_ns, stat.st_size]  # which file
        head["_start"] = start  # where the arrays begin in the map
        return head, arrays
    except (ValueError, KeyError, TypeError):
        return None


def _identity(path: Path) -> list[int] | None:
    """Which file is at `path` now (inode, modification time, size), as `_read` notes it."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_ino, stat.st_mtime_ns, stat.st_size]


def _crc32(arrays: dict[str, npt.NDArray[Any]]) -> int:
    """A checksum of the arrays' bytes: the codes decide which rows the coarse pass
    refines, so a corrupted or tampered byte must not be trusted. CRC-32, about 5 ms of
    CPU at 100,000 rows (12.6 MB of ids and codes), which the first search reads anyway."""
    crc = 0
    for arr in arrays.values():
        crc = zlib.crc32(np.ascontiguousarray(arr).data.cast("B"), crc)
    return crc


def _basis_digest(basis: npt.NDArray[Any]) -> str:
    return hashlib.sha256(np.ascontiguousarray(basis).tobytes()).hexdigest()[:32]


def _read_ahead_if_cold(
    path: Path, head: dict[str, Any], name: str, arrays: dict[str, npt.NDArray[Any]]
) -> None:
    """Begin reading one array of a file just mapped when a probe finds it outside the
    page cache, so that a first search does not wait for it one fault at a time.

    A fresh process's first recall at 100,000 rows refines 1,000 rows of the float16
    matrix for the query and 12,000 for the life domains' centres: about all of it.
    Asked for as a whole, the kernel reads it in the background, sequentially (in
    `AHEAD_BYTES` calls: this kernel reads one read-ahead window per call). Warm, the
    probe is `PROBED` reads that may not wait (about 20 us).
    """
    array, mapped = arrays[name], _mapped(arrays[name])
    nowait, advice = getattr(os, "RWF_NOWAIT", None), getattr(mmap, "MADV_WILLNEED", None)
    if mapped is None or nowait is None or advice is None or not array.nbytes:
        return
    begin = int(head["_start"]) + int(head["arrays"][name][2])
    end = begin + array.nbytes
    buf = bytearray(1)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        stat = os.fstat(fd)
        if [stat.st_ino, stat.st_mtime_ns, stat.st_size] != head.get("_identity"):
            return  # replaced since it was mapped
        for at in np.linspace(begin, end - 1, PROBED).astype(np.int64):
            os.preadv(fd, [buf], int(at), nowait)
        return  # cached
    except BlockingIOError:
        pass  # not in the page cache
    except OSError:
        return
    finally:
        os.close(fd)
    page = mmap.PAGESIZE
    with contextlib.suppress(OSError, ValueError):
        for at in range(begin // page * page, end, AHEAD_BYTES):
            mapped.madvise(advice, at, min(end, at + AHEAD_BYTES) - at)


def _mapped(array: npt.NDArray[Any]) -> mmap.mmap | None:
    """The map an array read by `_read` is a view of."""
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    found = base.obj if isinstance(base, memoryview) else base
    return found if isinstance(found, mmap.mmap) else None


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
