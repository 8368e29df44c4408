"""The coarse pass of a large scope's vector search in int8, on ONNX Runtime.

Above `remem.store.sqlite.vectors.index.APPROX_MIN` rows a search first scores every row on
the scope's 96-dimensional PCA projection and refines the best `REFINE` rows
exactly. That pass is bound by memory bandwidth: 100,000 x 96 float32 is 38 MB
a query, more than the development machine's 32 MB L3 cache, 2.0 ms of the
search. Quantised per column to int8 it is 9.6 MB, and ONNX Runtime's
`MatMulInteger` (numpy has no fast integer product) scores it in 1.4-1.6 ms
through one session shared by every scope, the codes an input that MLAS packs
again on every run. Each scope's codes therefore get a session of their own
(`Packed`): the codes transposed about zero are the graph's constant B, given
to ONNX Runtime as external data (`add_external_initializers`), which packs them
once; a search passes only its queries and gets the same integers in 0.43-0.52
ms. Making it costs 0.07-0.1 s of CPU and holds 30 MB (the transposed codes and
ONNX Runtime's packed copy) per scope; until it is made, the shared session scores.

The refined rows are read from the float16 matrix and widened to float32 by
ONNX Runtime's `Cast` too (`widen`): numpy converts float16 one value at a
time, 0.75 ms for 1,000 rows against 0.03 (the conversion is exact either way).

Only which rows are refined can change, never a refined score: on LoCoMo's
turns tiled to 100,000 rows (noise 0.02-0.6 around each), the refined top 50
were those of the float32 pass for 99.5-100% of 400 questions, and overlapped
the exact top 50 as much (0.9994-0.9996 against 0.9995). Without ONNX Runtime
the float32 pass runs, as before.

The recalls a server answers at the same time share a pass: one MatMulInteger over a
scope's codes scores several queries in about the time of one (with the codes' own
session, 0.45 ms for one query over 100,000 rows, 0.48 for 4, 0.60 for 8), so the
queries of one scope that arrive while its pass runs are scored together in the next
(`remem.batching.CallBatcher`). Each query is quantised on its own before it joins,
and the product is of integers, so a query's scores are the same bytes alone or
batched.

Nothing here is on a request's path: the sessions (15 ms to make) and the
codes (25 ms for 100,000 rows, more while the projection is read from its file) are made
on a thread of their own (`ScopeVectors` starts it at a scope's third
search); searches until then take the float32 pass and numpy's conversion. A
scope's own session is begun on another thread from its third search with codes
(read from its file or made), once per set of codes: a catch-up keeps the codes
and the session, a forget copies the codes without the row and makes a new one.
Closing the store waits for it (`settle`): it reads the codes, often a map of the
scope's file.
The two graphs are stored as the bytes `onnx.helper` makes of them (a test
builds them again), so `onnx`, 2 s to import on a busy machine, is never
imported.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.batching import CallBatcher
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

# MatMulInteger(A: uint8 [queries, dim], zero point 128, B: int8 [dim, rows]) -> int32: the
# graph of `Packed`, B (one scope's codes) appended as an initializer by `_packed_model`
PACKED_MODEL = (
    b'\x08\x08\x12\x05remem:u\n\x1e\n\x01A\n\x01B\n\x04zero\x12\x01C"\rMatMulInteger'
    b"\x12\x06packed*\x0c\x10\x02*\x02\x80\x01B\x04zeroZ\x1d\n\x01A\x12\x18\n\x16\x08\x02"
    b"\x12\x12\n\t\x12\x07queries\n\x05\x12\x03dimb\x1e\n\x01C\x12\x19\n\x17\x08\x06\x12\x13"
    b"\n\t\x12\x07queries\n\x06\x12\x04rowsB\x04\n\x00\x10\r"
)
INT8 = 3  # TensorProto.INT8

CHUNK = 8192  # rows quantised at a time

_LOCK = ForkSafeLock()
_SESSIONS: dict[str, Any] = {}  # "coarse", "cast": made by `prepare` (None: cannot run)
_MAKING: list[threading.Thread] = []  # threads making a scope's own session (`Packed`)


def _sessions_after_fork() -> None:
    # A thread of the parent may have been making them: the child makes its own.
    if _LOCK.held_at_fork:
        _SESSIONS.clear()
    _MAKING.clear()  # the parent's threads: not the child's


def settle() -> None:
    """Wait for the scopes' own sessions being made (`Packed`): they read the codes,
    often a map of a scope's file, which must not be read once the store is closed
    (a file cut short under a map kills the reading process with SIGBUS)."""
    with _LOCK:
        making, _MAKING[:] = list(_MAKING), []
    for thread in making:
        thread.join()


after_fork_in_child(_sessions_after_fork)


def prepare() -> bool:
    """Make the two sessions if not yet made (on the caller's thread); whether they run."""
    with _LOCK:
        if not _SESSIONS:
            _SESSIONS["coarse"] = _session(MATMUL_INTEGER_MODEL)
            _SESSIONS["cast"] = _session(CAST_MODEL) if _SESSIONS["coarse"] else None
        return _SESSIONS["coarse"] is not None


class Packed:
    """A scope's codes held by an ONNX Runtime session of their own (`PACKED_MODEL`),
    made once on a thread (`soon`) and shared by every value holding the same codes."""

    __slots__ = ("_lock", "_pid", "_thread", "session")

    def __init__(self) -> None:
        self._lock = ForkSafeLock()
        self._pid = 0  # the process that began making the session (0: none)
        self._thread: threading.Thread | None = None
        self.session: Any = None  # one assignment: a search sees it or not

    def soon(self, codes: npt.NDArray[np.uint8]) -> None:
        """Begin making the session on a thread of its own, once per process: a child
        forked while a thread of its parent was making it makes its own."""
        if self.session is not None:  # every search asks: no lock once made
            return
        with self._lock:
            if self.session is not None or self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._thread = threading.Thread(
                target=self._make, args=(codes,), name="remem-packed", daemon=True
            )
            with _LOCK:
                _MAKING[:] = [t for t in _MAKING if t.is_alive()] + [self._thread]
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the session being made (if it is); whether there is one."""
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            thread.join(timeout)
        return self.session is not None

    def _make(self, codes: npt.NDArray[np.uint8]) -> None:
        if not prepare():
            return
        centred = np.ascontiguousarray((codes ^ np.uint8(0x80)).view(np.int8).T)  # code - 128
        self.session = _session(_packed_model(*codes.shape), {"B": centred})


@dataclass(frozen=True)
class Int8Coarse:
    """A projected matrix quantised per column: `codes` (uint8, zero point 128) times
    `scale` is the projection within half a step."""

    codes: npt.NDArray[np.uint8]  # (rows, dim)
    scale: F32  # (dim,)
    packed: Packed = field(default_factory=Packed, compare=False, repr=False)
    # the passes of concurrent searches merged; holds the codes, not `self` (no cycle)
    _batched: CallBatcher[npt.NDArray[np.int8]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        run = functools.partial(_coarse_pass, self.codes, self.packed)
        object.__setattr__(self, "_batched", CallBatcher[npt.NDArray[np.int8]](run))

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
        """Only these rows (a copy, its session to be made again: no dropped row stays
        reachable)."""
        return Int8Coarse(np.ascontiguousarray(self.codes[rows]), self.scale)

    def pack_soon(self) -> None:
        """Begin making the codes' own session (`Packed`) on a thread, if not yet begun."""
        self.packed.soon(self.codes)

    def wait_packed(self, timeout: float | None = None) -> bool:
        """Wait for the codes' own session being made; whether they have one."""
        return self.packed.wait(timeout)

    def scores(self, projected_queries: F32) -> I32:
        """(queries, rows) integer scores, in each row in the order of the float
        product `projected_queries @ projected.T` within the quantisation error: the
        same integers from the codes' own session once made, else from the shared one."""
        x = projected_queries * self.scale  # (m, dim): the column scales moved over
        step = np.maximum(np.abs(x).max(axis=1, keepdims=True), 1e-30) / 127
        b = np.rint(x / step).astype(np.int8)  # (m, dim), each query on its own
        scores: I32 = self._batched(list(b))  # with other threads' queries (`CallBatcher`)
        return scores


def _coarse_pass(
    codes: npt.NDArray[np.uint8], packed: Packed, queries: list[npt.NDArray[np.int8]]
) -> I32:
    """(queries, rows) integer scores of the quantised `queries` against `codes`: from
    the codes' own session once made, else from the shared one."""
    b = np.stack(queries)  # (m, dim)
    session = packed.session
    if session is not None:  # A: the queries as uint8 about zero point 128
        (out,) = session.run(None, {"A": b.view(np.uint8) ^ np.uint8(0x80)})
        own: I32 = out
        return own
    (out,) = _SESSIONS["coarse"].run(None, {"A": codes, "B": np.ascontiguousarray(b.T)})
    shared: I32 = out.T
    return shared


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


def _packed_model(rows: int, dim: int) -> bytes:
    """`PACKED_MODEL` with B (int8, [dim, rows]) declared as an initializer whose data is
    given to the session (`add_external_initializers`): a second `graph` field, which a
    protobuf parser merges into the first."""
    tensor = (
        _varint_field(1, dim) + _varint_field(1, rows) + _varint_field(2, INT8)
        + _bytes_field(8, b"B")
        + _bytes_field(13, _bytes_field(1, b"location") + _bytes_field(2, b"B"))  # external_data
        + _varint_field(14, 1)  # data_location: EXTERNAL
    )  # fmt: skip
    return PACKED_MODEL + _bytes_field(7, _bytes_field(5, tensor))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _session(model: bytes, external: dict[str, npt.NDArray[Any]] | None = None) -> Any:
    """A one-thread CPU session of `model` (its `external` initializers given, held by
    the session), or None where ONNX Runtime cannot run it."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the embedder has the other core (`one_blas_thread`)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        if external:
            values = [ort.OrtValue.ortvalue_from_numpy(a) for a in external.values()]
            options.add_external_initializers(list(external), values)
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        if external:
            session._remem_held = values  # the data the session reads, alive as long
        return session
    except Exception:  # an ONNX Runtime that cannot run it: the float32 pass runs
        return None
