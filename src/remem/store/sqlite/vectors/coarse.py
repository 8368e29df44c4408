"""The coarse pass of a large scope's vector search in int8, on ONNX Runtime.

Above `remem.store.sqlite.vectors.index.APPROX_MIN` rows a search first scores every row on
the scope's 96-dimensional PCA projection and refines the best `REFINE` rows
exactly. That pass is bound by memory bandwidth: 100,000 x 96 float32 is 38 MB
a query, more than the development machine's 32 MB L3 cache, 2.0 ms of the
search. Quantised per column to int8 it is 9.6 MB, and ONNX Runtime's
`MatMulInteger` (numpy has no fast integer product) scores it in about 1.0 ms.

The refined rows are read from the float16 matrix and widened to float32 by
ONNX Runtime's `Cast` too (`widen`): numpy converts float16 one value at a
time, 0.75 ms for 1,000 rows against 0.03 (the conversion is exact either way).

Only which rows are refined can change, never a refined score: on LoCoMo's
turns tiled to 100,000 rows (noise 0.02-0.6 around each), the refined top 50
were those of the float32 pass for 99.5-100% of 400 questions, and overlapped
the exact top 50 as much (0.9994-0.9996 against 0.9995). Without ONNX Runtime
the float32 pass runs, as before.

Nothing here is on a request's path: the sessions (15 ms to make) and the
codes (25 ms for 100,000 rows, more while the projection is read from its file) are made
on a thread of their own (`ScopeVectors` starts it at a scope's second
search); searches until then take the float32 pass and numpy's conversion.
The two graphs are stored as the bytes `onnx.helper` makes of them (a test
builds them again), so `onnx`, 2 s to import on a busy machine, is never
imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.forksafe import ForkSafeLock, after_fork_in_child

F32 = npt.NDArray[np.float32]
I32 = npt.NDArray[np.int32]

# MatMulInteger(A: uint8 [rows, dim], B: int8 [dim, queries], zero point 128) -> int32
MATMUL_INTEGER_MODEL = (
    b'\x08\x08\x12\x05remem:\x91\x01\n\x1e\n\x01A\n\x01B\n\x04zero\x12\x01C"\rMatMulInteger'
    b"\x12\x06coarse*\x0c\x10\x02*\x02\x80\x01B\x04zeroZ\x1a\n\x01A\x12\x15\n\x13\x08\x02\x12\x0f"
    b"\n\x06\x12\x04rows\n\x05\x12\x03dimZ\x1d\n\x01B\x12\x18\n\x16\x08\x03\x12\x12\n\x05\x12\x03dim"
    b"\n\t\x12\x07queriesb\x1e\n\x01C\x12\x19\n\x17\x08\x06\x12\x13\n\x06\x12\x04rows\n\t\x12"
    b"\x07queriesB\x04\n\x00\x10\r"
)
# Cast(X: float16 [rows, dim]) -> float32
CAST_MODEL = (
    b'\x08\x08\x12\x05remem:X\n\x17\n\x01X\x12\x01Y"\x04Cast*\t\n\x02to\x18\x01\xa0\x01\x02'
    b"\x12\x05widenZ\x1a\n\x01X\x12\x15\n\x13\x08\n\x12\x0f\n\x06\x12\x04rows\n\x05\x12\x03dim"
    b"b\x1a\n\x01Y\x12\x15\n\x13\x08\x01\x12\x0f\n\x06\x12\x04rows\n\x05\x12\x03dimB\x04\n\x00\x10\r"
)

CHUNK = 8192  # rows quantised at a time

_LOCK = ForkSafeLock()
_SESSIONS: dict[str, Any] = {}  # "coarse", "cast": made by `prepare` (None: cannot run)


def _sessions_after_fork() -> None:
    # A thread of the parent may have been making them: the child makes its own.
    if _LOCK.held_at_fork:
        _SESSIONS.clear()


after_fork_in_child(_sessions_after_fork)


def prepare() -> bool:
    """Make the two sessions if not yet made (on the caller's thread); whether they run."""
    with _LOCK:
        if not _SESSIONS:
            _SESSIONS["coarse"] = _session(MATMUL_INTEGER_MODEL)
            _SESSIONS["cast"] = _session(CAST_MODEL) if _SESSIONS["coarse"] else None
        return _SESSIONS["coarse"] is not None


@dataclass(frozen=True)
class Int8Coarse:
    """A projected matrix quantised per column: `codes` (uint8, zero point 128) times
    `scale` is the projection within half a step."""

    codes: npt.NDArray[np.uint8]  # (rows, dim)
    scale: F32  # (dim,)

    @classmethod
    def of(cls, projected: F32) -> Int8Coarse | None:
        """The quantised form of `projected` (slow: off the request path), or None where
        ONNX Runtime cannot run the coarse pass."""
        if not prepare():
            return None
        return cls.quantised(projected)

    @classmethod
    def quantised(cls, projected: F32) -> Int8Coarse:
        """The quantised form of `projected`, in numpy alone (25 ms for 100,000 rows)."""
        scale = (np.abs(projected).max(axis=0) / 127).astype(np.float32)
        scale[scale == 0] = 1.0
        inverse = (1 / scale).astype(np.float32)
        codes = np.empty(projected.shape, np.uint8)
        step = np.empty((min(CHUNK, len(projected)), projected.shape[1]), np.float32)
        for at in range(0, len(projected), CHUNK):  # in pieces that stay in cache: 6x faster
            part = step[: len(projected[at : at + CHUNK])]
            np.multiply(projected[at : at + CHUNK], inverse, out=part)
            np.rint(part, out=part)
            part += 128
            codes[at : at + len(part)] = part
        return cls(codes, scale)

    def kept(self, rows: npt.NDArray[np.bool_]) -> Int8Coarse:
        """Only these rows (a copy: no dropped row stays reachable)."""
        return Int8Coarse(np.ascontiguousarray(self.codes[rows]), self.scale)

    def scores(self, projected_queries: F32) -> I32:
        """(rows, queries) integer scores, in each column in the order of the float
        product `projected @ projected_queries.T` within the quantisation error."""
        x = projected_queries * self.scale  # (m, dim): the column scales moved over
        step = np.maximum(np.abs(x).max(axis=1, keepdims=True), 1e-30) / 127
        b = np.ascontiguousarray(np.rint(x / step).astype(np.int8).T)  # (dim, m)
        (out,) = _SESSIONS["coarse"].run(None, {"A": self.codes, "B": b})
        scores: I32 = out
        return scores


def installed() -> bool:
    """Whether ONNX Runtime is installed (found, not imported: codes worth keeping)."""
    return importlib.util.find_spec("onnxruntime") is not None


def widen(rows: npt.NDArray[Any]) -> F32:
    """`rows` as float32 (exact: every float16 is a float32), by ONNX Runtime once
    `prepare` has made its session, else by numpy."""
    cast = _SESSIONS.get("cast")
    if cast is None or rows.dtype != np.float16 or rows.ndim != 2 or not rows.size:
        out: F32 = np.asarray(rows, np.float32)
        return out
    (wide,) = cast.run(None, {"X": np.ascontiguousarray(rows)})
    widened: F32 = wide
    return widened


def _session(model: bytes) -> Any:
    """A one-thread CPU session of `model`, or None where ONNX Runtime cannot run it."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the embedder has the other core (`one_blas_thread`)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception:  # an ONNX Runtime that cannot run it: the float32 pass runs
        return None
