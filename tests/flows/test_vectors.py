"""The in-memory vector search: exact below APPROX_MIN rows, projected-then-refined above."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from remem.store.sqlite.vectors.index import APPROX_MIN, QUANTISE_AT, ScopeVectors


def make(n: int, dim: int = 64, seed: int = 0) -> ScopeVectors:
    rng = np.random.default_rng(seed)
    # clustered data, like sentence embeddings: a few directions dominate
    centres = rng.standard_normal((50, dim))
    m = centres[rng.integers(50, size=n)] + 0.3 * rng.standard_normal((n, dim))
    m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    return ScopeVectors(
        ids=tuple(f"r{i}" for i in range(n)),
        matrix=m,
        active=np.ones(n, dtype=np.bool_),
        valid_from=np.zeros(n),
        valid_until=np.full(n, math.inf),
        model="m",
    )


def exact(v: ScopeVectors, q: np.ndarray, k: int) -> list[str]:
    scores = v.matrix @ q
    return [v.ids[i] for i in np.argsort(-scores)[:k]]


def test_small_scope_is_exact() -> None:
    v = make(500)
    q = v.matrix[7]
    assert [rid for rid, _ in v.search(q, 10, 1.0, False)] == exact(v, q, 10)


def test_large_scope_finds_nearly_all_of_the_exact_top_k() -> None:
    v = make(APPROX_MIN + 5000)
    rng = np.random.default_rng(1)
    overlap = []
    v.search(v.matrix[0], 1, 1.0, False)  # the projection is built from the second search
    for i in rng.integers(len(v.ids), size=20):
        q = v.matrix[i]
        got = [rid for rid, _ in v.search(q, 50, 1.0, False)]
        assert got[0] == v.ids[i]  # the vector itself is always found first
        overlap.append(len(set(got) & set(exact(v, q, 50))) / 50)
    assert np.mean(overlap) >= 0.95


def test_masks_apply_on_the_projected_path_too() -> None:
    n = APPROX_MIN + 100
    only = np.zeros(n, np.bool_)
    only[3] = True
    v = replace(make(n), active=only)
    v.search(v.matrix[0], 1, 1.0, False)  # projected from the second search
    assert [rid for rid, _ in v.search(v.matrix[5], 10, 1.0, False)] == ["r3"]
    assert len(v.search(v.matrix[5], 10, 1.0, True)) == 10
    closed = replace(make(n), valid_until=np.full(n, 0.5))
    closed.search(closed.matrix[0], 1, 1.0, False)
    assert closed.search(closed.matrix[5], 10, 1.0, True) == []
    assert len(closed.search(closed.matrix[5], 10, 0.25, True)) == 10  # still valid then


def test_a_search_sees_the_rows_valid_at_its_own_time_across_their_bounds() -> None:
    # the mask of valid rows is kept between two of the rows' bounds (`_valid`): a
    # search at any other time, before, after or on a bound, must see its own
    rng = np.random.default_rng(3)
    times = [0.5, 1.0, 2.5, 2.5, 4.0, 0.0, 6.5, 3.0, 7.0, 2.999, 1.0, 9.0, -1.0, 5.0]
    for n in (600, APPROX_MIN + 100):
        base = make(n)
        starts = (np.arange(n) % 5).astype(np.float64)  # 0..4
        ends = np.where(np.arange(n) % 7 == 0, math.inf, 3.0 + np.arange(n) % 4)  # 3..6
        active = rng.random(n) < 0.8
        v = replace(base, active=active, valid_from=starts, valid_until=ends)
        for t in times:
            for invalid_too in (False, True):
                valid = (starts <= t) & (t < ends) & (active | invalid_too)
                q = v.matrix[int(rng.integers(n))]
                k = n if n < APPROX_MIN else 10  # the projected path refines a pool
                got = [rid for rid, _ in v.search(q, k, t, invalid_too)]
                assert {int(rid[1:]) for rid in got} <= set(np.flatnonzero(valid)), (n, t)
                assert len(got) == min(k, int(valid.sum())), (n, t, invalid_too)


def test_a_scopes_arrays_are_read_only_once_made() -> None:
    # a new version of a scope is a new value (`caught_up`, `kept`): the masks kept
    # between searches rely on no array changing under them
    v = make(10)
    for array in (v.active, v.valid_from, v.valid_until):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[1]


def test_caught_up_rows_are_found_and_patched_rows_masked_on_both_paths() -> None:
    from remem.store.sqlite.vectors.index import Appended, Patch

    for n in (500, APPROX_MIN + 100):
        v = make(n)
        v.rowids = np.arange(1, n + 1, dtype=np.int64)
        v.search(v.matrix[0], 1, 1.0, False)
        v.search(v.matrix[0], 1, 1.0, False)  # large: projected from here on
        extra = make(3, seed=9)
        appended = Appended(
            ids=("t0", "t1", "t2"), rowids=np.array([n + 5, n + 6, n + 7], np.int64),
            matrix=np.asarray(extra.matrix, np.float32), active=np.ones(3, np.bool_),
            live=np.ones(3, np.bool_), valid_from=np.zeros(3), valid_until=np.full(3, math.inf),
        )  # fmt: skip
        closed = Patch(
            rowids=np.array([8], np.int64), active=np.zeros(1, np.bool_),
            live=np.ones(1, np.bool_), valid_until=np.array([0.5]),
        )  # fmt: skip
        after = v.caught_up(appended, closed)
        assert after.search(appended.matrix[1], 1, 1.0, False)[0][0] == "t1"
        assert "r7" not in [rid for rid, _ in after.search(v.matrix[7], 10, 1.0, True)]
        assert v.search(v.matrix[7], 1, 1.0, False)[0][0] == "r7"  # the old value is unchanged
        merged = after.merged()
        assert merged.search(appended.matrix[2], 1, 1.0, False)[0][0] == "t2"


def test_kept_drops_rows_on_both_paths_and_leaves_the_rest_found() -> None:
    for n in (500, APPROX_MIN + 100):
        v = make(n)
        v.rowids = np.arange(1, n + 1, dtype=np.int64)
        v.search(v.matrix[0], 1, 1.0, False)
        v.search(v.matrix[0], 1, 1.0, False)
        keep = np.ones(n, np.bool_)
        keep[7] = False
        left = v.kept(keep)
        assert len(left) == n - 1 and "r7" not in list(left.ids)
        assert "r7" not in [rid for rid, _ in left.search(v.matrix[7], 10, 1.0, True)]
        assert left.search(v.matrix[8], 1, 1.0, False)[0][0] == "r8"


def test_search_many_is_each_search_in_one_pass_on_both_paths() -> None:
    """Several queries scanned together give exactly what one search each gives:
    the exact path, the projected path, masked rows and a caught-up tail."""
    from remem.store.sqlite.vectors.index import Appended, Patch

    for n in (500, APPROX_MIN + 100):
        v = make(n)
        v.rowids = np.arange(1, n + 1, dtype=np.int64)
        v.search(v.matrix[0], 1, 1.0, False)
        v.search(v.matrix[0], 1, 1.0, False)  # large: projected from here on
        extra = make(3, seed=9)
        v = v.caught_up(
            Appended(
                ids=("t0", "t1", "t2"), rowids=np.array([n + 5, n + 6, n + 7], np.int64),
                matrix=np.asarray(extra.matrix, np.float32), active=np.ones(3, np.bool_),
                live=np.ones(3, np.bool_), valid_from=np.zeros(3),
                valid_until=np.full(3, math.inf),
            ),
            Patch(
                rowids=np.array([8], np.int64), active=np.zeros(1, np.bool_),
                live=np.ones(1, np.bool_), valid_until=np.array([0.5]),
            ),
        )  # fmt: skip
        queries = np.stack([v.matrix[7], v.matrix[3], extra.matrix[1], v.matrix[100]])
        for past in (False, True):
            together = v.search_many(queries, 20, 1.0, past)
            alone = [v.search(q, 20, 1.0, past) for q in queries]
            # the same rows in the same order; scores equal up to float32 rounding
            assert [[r for r, _ in hits] for hits in together] == [
                [r for r, _ in hits] for hits in alone
            ]
            assert np.allclose(
                [s for h in together for _, s in h], [s for h in alone for _, s in h]
            )
            assert together[2][0][0] == "t1"
        assert v.search_many(queries[:0], 5, 1.0, False) == []


def test_top_rows_picks_the_rows_a_full_partition_picks() -> None:
    """The sampled bar (`top_rows`) must never change which rows are refined: the
    same set as partitioning every score, whatever the scores look like."""
    from remem.store.sqlite.vectors.index import top_rows

    rng = np.random.default_rng(3)
    cases = [
        rng.standard_normal(100_000).astype(np.float32),
        np.sort(rng.standard_normal(50_000)).astype(np.float32),  # best rows all at the end
        np.sort(rng.standard_normal(50_000))[::-1].astype(np.float32),  # all at the start
        np.concatenate([np.full(90_000, -np.inf), rng.random(10_000)]).astype(np.float32),
        np.where(rng.random(60_000) < 0.98, -np.inf, rng.random(60_000)).astype(np.float32),
        rng.random(3_000).astype(np.float32),  # too few to sample
    ]
    for scores in cases:
        finite = int(np.isfinite(scores).sum())
        for k in (1, 50, 1000, min(finite, 5000)):
            expected = set(np.argpartition(-scores, k - 1)[:k].tolist())
            got = top_rows(scores, k)
            assert len(got) == k
            assert set(got.tolist()) == expected


def test_the_int8_coarse_pass_refines_the_rows_the_float_pass_would() -> None:
    """Once a large scope's int8 codes are made the coarse pass runs on ONNX Runtime
    (`remem.store.sqlite.vectors.coarse`); the answers are those of the float32 pass it replaced."""
    import dataclasses

    v = make(APPROX_MIN + 5000, dim=128)
    rng = np.random.default_rng(5)
    queries = v.matrix[rng.integers(len(v), size=40)] + 0.2 * rng.standard_normal((40, 128))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    for _ in range(QUANTISE_AT):  # the third search begins the codes, on another thread
        v.search(queries[0], 5, 1.0, False)
    coarse = v.wait_coarse(60)
    assert coarse is not None and coarse.codes.shape == (len(v), 96)
    floats = dataclasses.replace(v)  # the same rows and projection, not yet quantised
    floats.attach_projection(*v.projection())
    floats._coarse8_tried = True  # and never: the float32 pass
    for q in queries:
        assert v.search(q, 20, 1.0, False) == floats.search(q, 20, 1.0, False)
    assert [rid for rid, _ in v.search(queries[3], 20, 1.0, False)][:10] == exact(v, queries[3], 10)


@pytest.mark.parametrize("own_session", [False, True])
def test_concurrent_coarse_passes_merge_and_each_query_gets_its_own_scores(
    own_session: bool,
) -> None:
    """Searches of one scope made at the same time share the int8 coarse pass
    (`remem.store.sqlite.vectors.coarse`, `remem.batching`), through the shared session
    and the codes' own: each query's scores are the bytes it gets alone, and the passes
    did merge."""
    import threading

    from remem.store.sqlite.vectors.coarse import Int8Coarse, prepare

    assert prepare()
    rng = np.random.default_rng(11)
    coarse = Int8Coarse.quantised(rng.standard_normal((30_000, 96)).astype(np.float32))
    if own_session:
        coarse.pack_soon()
        assert coarse.wait_packed(60)
    queries = rng.standard_normal((96, 96)).astype(np.float32)
    queries[::7] *= 1e-3  # queries of another scale quantise on their own
    alone = [coarse.scores(q[None, :]).copy() for q in queries]
    pairs = [coarse.scores(queries[i : i + 2]).copy() for i in range(0, 8, 2)]

    def search(first: int, got: dict[int, np.ndarray]) -> None:
        for i in range(first, len(queries), 8):
            got[i] = coarse.scores(queries[i][None, :])

    for _ in range(5):  # threads that never overlapped: not a failure, again
        got: dict[int, np.ndarray] = {}
        threads = [threading.Thread(target=search, args=(t, got)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(np.array_equal(got[i], alone[i]) for i in range(len(queries)))
        if coarse._batched.batches:
            break
    assert coarse._batched.batches > 0, "eight threads never merged a pass"
    for n, pair in enumerate(pairs):  # two queries in one call: each row its own
        assert np.array_equal(pair[0], alone[2 * n][0])
        assert np.array_equal(pair[1], alone[2 * n + 1][0])


def test_widen_is_numpys_float16_to_float32_conversion_exactly() -> None:
    """The refined rows are widened by ONNX Runtime's Cast
    (`remem.store.sqlite.vectors.coarse.widen`): bit for bit what numpy's conversion gives,
    subnormals and infinities included (a NaN stays a NaN, its quiet bit set)."""
    from remem.store.sqlite.vectors.coarse import prepare, widen

    rng = np.random.default_rng(9)
    rows = rng.standard_normal((1000, 384)).astype(np.float16)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    rows.flat[: len(every)] = every  # all 65,536 float16 values, NaNs among them
    assert prepare()  # the session `widen` uses once made
    wide = widen(rows)
    assert wide.dtype == np.float32 and wide.shape == rows.shape
    numbers = ~np.isnan(rows)
    expected = rows.astype(np.float32)
    assert np.array_equal(wide[numbers].view(np.uint32), expected[numbers].view(np.uint32))
    assert np.isnan(wide[~numbers]).all()
    assert np.array_equal(widen(rows[:0]), np.zeros((0, 384), np.float32))


def test_the_stored_graphs_are_those_onnx_builds() -> None:
    """`remem.store.sqlite.vectors.coarse` keeps its two graphs as bytes (onnx is slow to import):
    they are what `onnx.helper` makes of MatMulInteger and Cast."""
    from onnx import TensorProto, helper

    from remem.store.sqlite.vectors.coarse import CAST_MODEL, MATMUL_INTEGER_MODEL

    def model(graph: object) -> bytes:
        made = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="remem"
        )
        made.ir_version = 8
        return bytes(made.SerializeToString())

    info = helper.make_tensor_value_info
    zero = helper.make_tensor("zero", TensorProto.UINT8, [], [128])
    matmul = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "zero"], ["C"])],
        "coarse",
        [
            info("A", TensorProto.UINT8, ["rows", "dim"]),
            info("B", TensorProto.INT8, ["dim", "queries"]),
        ],
        [info("C", TensorProto.INT32, ["rows", "queries"])],
        initializer=[zero],
    )
    cast = helper.make_graph(
        [helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.FLOAT)],
        "widen",
        [info("X", TensorProto.FLOAT16, ["rows", "dim"])],
        [info("Y", TensorProto.FLOAT, ["rows", "dim"])],
    )
    assert model(matmul) == MATMUL_INTEGER_MODEL
    assert model(cast) == CAST_MODEL


def test_a_scopes_own_session_is_the_graph_onnx_builds_with_its_codes_given() -> None:
    """A scope's own session (`remem.store.sqlite.vectors.coarse.Packed`) is made from
    `PACKED_MODEL` and a second graph field naming the codes as external data: parsed,
    that is what `onnx.helper` makes of MatMulInteger with B an initializer."""
    import onnx
    from onnx import TensorProto, helper

    from remem.store.sqlite.vectors.coarse import PACKED_MODEL, _packed_model

    info = helper.make_tensor_value_info
    zero = helper.make_tensor("zero", TensorProto.UINT8, [], [128])
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "zero"], ["C"])],
        "packed",
        [info("A", TensorProto.UINT8, ["queries", "dim"])],
        [info("C", TensorProto.INT32, ["queries", "rows"])],
        initializer=[zero],
    )
    made = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="remem"
    )
    made.ir_version = 8
    assert bytes(made.SerializeToString()) == PACKED_MODEL
    codes = onnx.TensorProto(name="B", data_type=TensorProto.INT8, dims=[96, 123_457])
    codes.data_location = TensorProto.EXTERNAL
    codes.external_data.add(key="location", value="B")
    made.graph.initializer.append(codes)
    assert onnx.load_from_string(_packed_model(123_457, 96)) == made


def test_a_scopes_own_session_gives_the_shared_sessions_scores() -> None:
    """The same integers for one query or several, masked rows and all, so the same
    rows are refined; a catch-up shares the session, a forget makes its own."""
    from remem.store.sqlite.vectors.coarse import prepare
    from remem.store.sqlite.vectors.index import Appended, Patch

    assert prepare()
    n = APPROX_MIN + 3000
    active = np.ones(n, np.bool_)
    active[::97] = False
    v = replace(make(n, dim=128), active=active, rowids=np.arange(1, n + 1, dtype=np.int64))
    rng = np.random.default_rng(11)
    queries = v.matrix[rng.integers(n, size=6)] + 0.3 * rng.standard_normal((6, 128))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    for _ in range(QUANTISE_AT):
        v.search(queries[0], 5, 1.0, False)
    codes = v.wait_coarse(60)
    assert codes is not None and codes.packed.session is None  # begun from the next search
    projected = queries @ v.projection()[0]
    plain = codes.scores(projected)  # by the shared session
    assert plain.shape == (6, n)
    v.search(queries[0], 5, 1.0, False)
    assert codes.wait_packed(60) and codes.packed.session is not None
    assert np.array_equal(codes.scores(projected), plain)
    assert np.array_equal(codes.scores(projected[:1]), plain[:1])
    floats = replace(v)  # the same rows and projection, never quantised: the float32 pass
    floats.attach_projection(*v.projection())
    floats._coarse8_tried = True
    for past in (False, True):
        assert v.search_many(queries, 20, 1.0, past) == floats.search_many(queries, 20, 1.0, past)
        assert [v.search(q, 20, 1.0, past) for q in queries] == [
            floats.search(q, 20, 1.0, past) for q in queries
        ]

    later = v.caught_up(
        Appended(
            ids=("t0",), rowids=np.array([n + 1], np.int64), matrix=queries[:1],
            active=np.ones(1, np.bool_), live=np.ones(1, np.bool_), valid_from=np.zeros(1),
            valid_until=np.full(1, math.inf),
        ),
        Patch(np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0, np.bool_), np.zeros(0)),
    )  # fmt: skip
    assert later.coarse_codes() is codes  # the same rows: the same session
    assert later.search(queries[0], 1, 1.0, False)[0][0] == "t0"
    keep = np.ones(n + 1, np.bool_)
    keep[5] = False
    left = later.kept(keep)
    fewer = left.coarse_codes()
    assert fewer is not None and fewer.packed.session is None  # not the dropped row's
    for _ in range(QUANTISE_AT + 1):
        left.search(queries[1], 5, 1.0, False)
    assert fewer.wait_packed(60)
    assert np.array_equal(fewer.scores(projected), np.delete(plain, 5, axis=1))
