"""The coarse pass of a large scope's vector search in int8, on ONNX Runtime.

Above `remem.store.vectors.APPROX_MIN` rows a search first scores every row on
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
(or its `onnx` graph builder) the float32 pass runs, as before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I32 = npt.NDArray[np.int32]

_LOCK = threading.Lock()
_SESSION: list[Any] = []  # [session] once made, [None] when ONNX Runtime is missing
_CAST: list[Any] = []  # the same for `widen`


@dataclass(frozen=True)
class Int8Coarse:
    """A projected matrix quantised per column: `codes` (uint8, zero point 128) times
    `scale` is the projection within half a step."""

    codes: npt.NDArray[np.uint8]  # (rows, dim)
    scale: F32  # (dim,)

    @classmethod
    def of(cls, projected: F32) -> Int8Coarse | None:
        """The quantised form of `projected`, or None where ONNX Runtime is missing."""
        if _session() is None:
            return None
        scale = (np.abs(projected).max(axis=0) / 127).astype(np.float32)
        scale[scale == 0] = 1.0
        codes = np.rint(projected / scale).astype(np.int16) + 128
        return cls(np.ascontiguousarray(codes, np.uint8), scale)

    def kept(self, rows: npt.NDArray[np.bool_]) -> Int8Coarse:
        """Only these rows (a copy: no dropped row stays reachable)."""
        return Int8Coarse(np.ascontiguousarray(self.codes[rows]), self.scale)

    def scores(self, projected_queries: F32) -> I32:
        """(rows, queries) integer scores, in each column in the order of the float
        product `projected @ projected_queries.T` within the quantisation error."""
        x = projected_queries * self.scale  # (m, dim): the column scales moved over
        step = np.maximum(np.abs(x).max(axis=1, keepdims=True), 1e-30) / 127
        b = np.ascontiguousarray(np.rint(x / step).astype(np.int8).T)  # (dim, m)
        session = _session()
        assert session is not None  # `of` made this value: the session exists
        (out,) = session.run(None, {"A": self.codes, "B": b})
        scores: I32 = out
        return scores


def widen(rows: npt.NDArray[Any]) -> F32:
    """`rows` as float32 (exact: every float16 is a float32), by ONNX Runtime when it
    is installed and the rows are a float16 matrix."""
    if rows.dtype != np.float16 or rows.ndim != 2 or not rows.size:
        out: F32 = np.asarray(rows, np.float32)
        return out
    session = _cached(_CAST, _make_cast)
    if session is None:
        return np.asarray(rows, np.float32)
    (wide,) = session.run(None, {"X": np.ascontiguousarray(rows)})
    widened: F32 = wide
    return widened


def _session() -> Any:
    """A one-thread ONNX Runtime session of `MatMulInteger` (uint8 x int8 -> int32), made
    when first needed; None without onnxruntime or onnx."""
    return _cached(_SESSION, _make_session)


def _cached(held: list[Any], make: Any) -> Any:
    with _LOCK:
        if not held:
            held.append(make())
        return held[0]


def _make_cast() -> Any:
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    node = helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.FLOAT)
    graph = helper.make_graph(
        [node],
        "widen",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT16, ["rows", "dim"])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["rows", "dim"])],
    )
    return _run(graph)


def _make_session() -> Any:
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    zero = helper.make_tensor("zero", TensorProto.UINT8, [], [128])
    node = helper.make_node("MatMulInteger", ["A", "B", "zero"], ["C"])
    graph = helper.make_graph(
        [node],
        "coarse",
        [
            helper.make_tensor_value_info("A", TensorProto.UINT8, ["rows", "dim"]),
            helper.make_tensor_value_info("B", TensorProto.INT8, ["dim", "queries"]),
        ],
        [helper.make_tensor_value_info("C", TensorProto.INT32, ["rows", "queries"])],
        initializer=[zero],
    )
    return _run(graph)


def _run(graph: Any) -> Any:
    """A one-thread CPU session of `graph`, or None where ONNX Runtime cannot run it."""
    try:
        import onnxruntime as ort
        from onnx import helper
    except ImportError:
        return None
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what ONNX Runtime 1.20 and later read
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the embedder has the other core (`one_blas_thread`)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception:  # an ONNX Runtime that cannot run it: the float32 pass runs
        return None
