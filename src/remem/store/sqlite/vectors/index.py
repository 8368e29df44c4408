"""Exact-then-refined vector search over one scope, in memory (the SQLite backend's).

A scope's vectors are held as one float32 matrix. Scanning it is bound by
memory bandwidth: 100,000 x 384 floats is 150 MB read per query, about 15 ms
on the development machine. Above `APPROX_MIN` rows the scan therefore runs
on a 96-dimensional PCA projection of the matrix (a quarter of the bytes),
keeps the best `REFINE` rows, and scores those exactly. The projection is
built at the scope's second search, so a one-shot process (a cold `remem
recall`) pays for an exact scan instead of the projection. On LoCoMo turns tiled
to 100,000 rows this found 99.99% of the exact top 50 in about 4 ms. The
coarse pass scores int8 codes of the projection (`remem.store.sqlite.vectors.coarse`) from a
scope's third search, or from its first when they were read from the scope's
file (`attach_codes`), and from the third on begins the codes' own ONNX Runtime
session, which scores them in a third of the time (the same integers). At
100,000 rows a search with that session costs about 1.1 ms of CPU: scoring the
codes 0.45, picking the best `REFINE` 0.19 (`top_rows`), gathering and widening
them 0.2, scoring them exactly 0.12, the rest (the hits' ids among it) 0.1.

A scope that changed is caught up, not reloaded (`ScopeVectors.caught_up`):
the rows added since are kept as a float32 tail beside the matrix (scored
exactly, they are few) and the status and validity arrays are patched, so
the matrix, often a read-only map of the scope's file, is shared unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import isfinite
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.blas import one_blas_thread
from remem.store.sqlite.vectors.coarse import Int8Coarse, prepare, widen

APPROX_MIN = 20_000
PROJECTED_DIM = 96
REFINE = 1000
PCA_SAMPLE = 20_000
QUANTISE_AT = (
    3  # the search of a scope that begins its int8 codes (`remem.store.sqlite.vectors.coarse`)
)

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Appended:
    """Vector rows added to a scope since its vectors were read, oldest first."""

    ids: tuple[str, ...]
    rowids: npt.NDArray[np.int64]
    matrix: F32  # (m, dim), unit rows
    active: npt.NDArray[np.bool_]
    live: npt.NDArray[np.bool_]
    valid_from: npt.NDArray[np.float64]
    valid_until: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Patch:
    """The status and validity now of rows already held, by database row."""

    rowids: npt.NDArray[np.int64]
    active: npt.NDArray[np.bool_]
    live: npt.NDArray[np.bool_]
    valid_until: npt.NDArray[np.float64]


@dataclass
class ScopeVectors:
    """One scope's vectors with their status and validity, searchable in memory.

    `ids` is a tuple of strings, or (from a vector file) an array of UTF-8
    bytes; `matrix` is float32, or float16 when a projection is attached (only
    the refined rows are then widened). Rows `len(ids):` are the `tail` (rows
    added since the matrix was made, float32, ids `tail_ids`); the status and
    validity arrays and `rowids` (the database row of each, ascending) cover
    matrix and tail. `active` rows are recalled; `live` ones (active or
    invalid) are searched with `include_invalid`; the rest (proposed, deleted)
    are held only so that a later change of their status is a patch.
    """

    ids: Sequence[str] | npt.NDArray[np.bytes_]
    matrix: npt.NDArray[np.float32] | npt.NDArray[np.float16]  # (n, dim), unit rows
    active: npt.NDArray[np.bool_]
    valid_from: npt.NDArray[np.float64]  # epoch seconds
    valid_until: npt.NDArray[np.float64]  # epoch seconds, +inf while open
    model: str
    live: npt.NDArray[np.bool_] | None = None  # None: every row
    rowids: npt.NDArray[np.int64] | None = None  # None: not known (not patchable)
    tail_ids: tuple[str, ...] = ()
    tail: F32 | None = None
    _basis: F32 | None = field(default=None, repr=False)
    _projected: F32 | None = field(default=None, repr=False)
    _coarse8: Int8Coarse | None = field(default=None, repr=False)
    _coarse8_tried: bool = field(default=False, repr=False)
    _quantiser: threading.Thread | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _searches: int = field(default=0, repr=False)
    # (include_invalid, from, until, mask, count): `_valid`'s mask for times in [from, until)
    _span: tuple[bool, float, float, npt.NDArray[np.bool_], int] | None = field(
        default=None, init=False, repr=False
    )

    _excluded_of: tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        # a new version of the scope is a new value: what `_valid` keeps relies on it
        for array in (self.active, self.valid_from, self.valid_until, self.live):
            if array is not None:
                array.flags.writeable = False

    def __len__(self) -> int:
        return len(self.ids) + len(self.tail_ids)

    def search(
        self, query: F32, limit: int, at: float, include_invalid: bool
    ) -> list[tuple[str, float]]:
        """The `limit` rows most similar to `query` among those valid at `at`."""
        return self.search_many(query[None, :], limit, at, include_invalid)[0]

    def search_many(
        self, queries: F32, limit: int, at: float, include_invalid: bool
    ) -> list[list[tuple[str, float]]]:
        """`search` for each row of `queries`, in one pass over the matrix: scanning
        is bound by memory bandwidth, so m queries cost about as much as one."""
        m = len(queries)
        mask, n = self._valid(at, include_invalid)
        if n == 0 or limit <= 0 or m == 0:
            return [[] for _ in range(m)]
        self._searches += 1
        base = len(self.ids)
        projection = None
        if self._basis is not None and self._projected is not None:
            projection = (self._basis, self._projected)  # persisted with the scope's file
        elif base >= APPROX_MIN and self._searches > 1:
            projection = self._projection()  # BLAS on every core: a one-off gemm
        out: list[list[tuple[str, float]]] = []
        with one_blas_thread():
            tail_rows = np.flatnonzero(mask[base:])
            if projection is not None:
                basis, projected = projection
                in_base = n - len(tail_rows)
                # int8 once made, begun at the scope's third search (a one-shot CLI
                # recall searches it once or twice), where ONNX Runtime is installed;
                # codes read from the scope's file (`attach_codes`) from the first
                coarse8 = self._int8(projected) if self._searches >= QUANTISE_AT else None
                if coarse8 is None:
                    coarse8 = self._coarse8
                if coarse8 is not None and not prepare():
                    coarse8 = None  # codes from a file, no runtime to score them here
                coarse_all: npt.NDArray[Any]
                excluded = self._excluded(mask, base)
                if coarse8 is not None:
                    if self._searches >= QUANTISE_AT:
                        coarse8.pack_soon()  # its own session, made on a thread
                    coarse_all = coarse8.scores(queries @ basis)  # m x rows, int32
                    if len(excluded):
                        coarse_all[:, excluded] = -np.iinfo(np.int32).max  # negatable
                else:
                    coarse_all = (projected @ (queries @ basis).T).T  # m x rows
                    if len(excluded):
                        coarse_all[:, excluded] = -np.inf
                pool = min(REFINE, in_base)
            else:
                # the whole matrix scored where it lies, then the valid rows picked:
                # copying those rows out first cost 3 ms at 10,000 rows, the scan 0.4
                exact = np.flatnonzero(mask[:base])
                exact_scores = _scores(self.matrix, queries)[exact]
            tail_scores = (
                self.tail[tail_rows] @ queries.T
                if len(tail_rows) and self.tail is not None
                else None
            )
            for j in range(m):
                if projection is not None:
                    coarse = coarse_all[j]
                    rows = np.sort(top_rows(coarse, pool)) if pool else tail_rows[:0]
                    # `take` gathers the rows in 0.09 ms where indexing takes 0.14
                    scores = widen(np.take(self.matrix, rows, axis=0)) @ queries[j]
                else:
                    rows, scores = exact, exact_scores[:, j]
                if tail_scores is not None:
                    scores = np.concatenate([scores, tail_scores[:, j]])
                    rows = np.concatenate([rows, tail_rows + base])
                k = min(limit, len(rows))
                if k == 0:
                    out.append([])
                    continue
                best = np.argpartition(-scores, k - 1)[:k]
                best = best[np.argsort(-scores[best])]
                # Python ints and floats in one call each: per element, numpy's scalars
                # cost 0.3 ms a search at 50 hits
                picked, values = rows[best].tolist(), scores[best].tolist()
                out.append(
                    [(self._id(r), s) for r, s in zip(picked, values, strict=True) if isfinite(s)]
                )
        return out

    def _valid(self, at: float, include_invalid: bool) -> tuple[npt.NDArray[np.bool_], int]:
        """The rows searched at `at` (valid then, and active, or live with
        `include_invalid`) as a read-only mask, and their count.

        The mask is the same for every time between two of the rows' validity bounds,
        so it is kept with that span (`_span`) and made again only for a time outside
        it: a recall searches at its own now, past the bounds of most rows, and a new
        version of the scope is a new `ScopeVectors`. At 100,000 rows making it cost
        0.1-0.4 ms a search (three passes and a count)."""
        span = self._span
        if span is not None and span[0] is include_invalid and span[1] <= at < span[2]:
            return span[3], span[4]
        mask = (self.valid_from <= at) & (at < self.valid_until)
        mask &= self.active if not include_invalid else self._live()
        mask.flags.writeable = False
        n = int(np.count_nonzero(mask))
        bounds = np.concatenate([self.valid_from, self.valid_until])
        lo = float(bounds[bounds <= at].max(initial=-np.inf))  # the last bound at or before
        hi = float(bounds[bounds > at].min(initial=np.inf))  # and the first after
        self._span = (include_invalid, lo, hi, mask, n)  # one assignment: threads see all
        return mask, n

    def _excluded(self, mask: npt.NDArray[np.bool_], base: int) -> npt.NDArray[np.intp]:
        """The base rows `mask` leaves out, kept with the mask (`_excluded_of`), so a
        search writes only those into its coarse scores, nothing when every row is
        valid. At 100,000 rows negating the mask and assigning through it cost 0.015
        ms with every row valid, 0.28 with 1 % left out, 0.55 with 20 %; through the
        kept rows 0, 0.006 and 0.06."""
        held = self._excluded_of
        if held is not None and held[0] is mask:
            return held[1]
        excluded = np.flatnonzero(~mask[:base])
        self._excluded_of = (mask, excluded)  # one assignment: threads see all
        return excluded

    def _live(self) -> npt.NDArray[np.bool_]:
        return np.ones(len(self), np.bool_) if self.live is None else self.live

    def caught_up(self, appended: Appended, patch: Patch) -> ScopeVectors:
        """These vectors with rows appended and statuses patched, as a new value.

        The matrix and projection are shared (they may be a read-only map);
        the small arrays are copied, so a search running on `self` meanwhile
        is not disturbed. Needs `rowids`; a patched row not held is ignored
        (the caller counted the scope's rows: none is missing).
        """
        assert self.rowids is not None
        active = np.concatenate([self.active, appended.active])
        live = np.concatenate([self._live(), appended.live])
        valid_until = np.concatenate([self.valid_until, appended.valid_until])
        if len(patch.rowids):
            at = np.searchsorted(self.rowids, patch.rowids)
            held = (at < len(self.rowids)) & (
                self.rowids[np.minimum(at, len(self.rowids) - 1)] == patch.rowids
            )
            rows = at[held]
            active[rows], live[rows] = patch.active[held], patch.live[held]
            valid_until[rows] = patch.valid_until[held]
        tail = appended.matrix if self.tail is None else np.vstack([self.tail, appended.matrix])
        out = ScopeVectors(
            ids=self.ids,
            matrix=self.matrix,
            active=active,
            valid_from=np.concatenate([self.valid_from, appended.valid_from]),
            valid_until=valid_until,
            model=self.model,
            live=live,
            rowids=np.concatenate([self.rowids, appended.rowids]),
            tail_ids=self.tail_ids + appended.ids,
            tail=np.ascontiguousarray(tail, np.float32) if len(tail) else None,
        )
        if self._basis is not None and self._projected is not None:
            out.attach_projection(self._basis, self._projected)
            if self._coarse8 is not None:  # the same base rows: the same codes
                out._coarse8, out._coarse8_tried = self._coarse8, True
        return out

    def kept(self, keep: npt.NDArray[np.bool_]) -> ScopeVectors:
        """These vectors without the rows `keep` is False for (deleted from the database).

        Everything is copied, the kept rows only: no dropped row stays
        reachable from the value, whatever the old one was mapped from.
        """
        base = len(self.ids)
        in_base, in_tail = keep[:base], keep[base:]
        ids: Sequence[str] | npt.NDArray[np.bytes_]
        if isinstance(self.ids, np.ndarray):
            ids = self.ids[in_base]
        else:
            ids = tuple(i for i, k in zip(self.ids, in_base, strict=True) if k)
        tail = self.tail[in_tail] if self.tail is not None else None
        out = ScopeVectors(
            ids=ids, matrix=self.matrix[in_base],  # a copy: fancy indexing
            active=self.active[keep], valid_from=self.valid_from[keep],
            valid_until=self.valid_until[keep], model=self.model, live=self._live()[keep],
            rowids=self.rowids[keep] if self.rowids is not None else None,
            tail_ids=tuple(i for i, k in zip(self.tail_ids, in_tail, strict=True) if k),
            tail=tail if tail is not None and len(tail) else None,
        )  # fmt: skip
        if self._basis is not None and self._projected is not None:
            out.attach_projection(self._basis, np.ascontiguousarray(self._projected[in_base]))
            if self._coarse8 is not None:
                out._coarse8, out._coarse8_tried = self._coarse8.kept(in_base), True
        return out

    def merged(self) -> ScopeVectors:
        """One matrix again, the tail folded in (what a rewritten file holds).

        A projection is kept, the tail projected on the same basis: a basis made
        from most of the rows describes a few more as well.
        """
        if not self.tail_ids or self.tail is None:
            return self
        ids: Sequence[str] | npt.NDArray[np.bytes_]
        if isinstance(self.ids, np.ndarray):
            ids = np.concatenate([self.ids, np.array([i.encode() for i in self.tail_ids])])
        else:
            ids = (*self.ids, *self.tail_ids)
        out = ScopeVectors(
            ids=ids, matrix=np.vstack([np.asarray(self.matrix, np.float32), self.tail]),
            active=self.active, valid_from=self.valid_from, valid_until=self.valid_until,
            model=self.model, live=self.live, rowids=self.rowids,
        )  # fmt: skip
        if self._basis is not None and self._projected is not None:
            projected = np.vstack([self._projected, self.tail @ self._basis])
            out.attach_projection(self._basis, np.ascontiguousarray(projected, np.float32))
        return out

    def _id(self, row: int) -> str:
        if row >= len(self.ids):
            return self.tail_ids[row - len(self.ids)]
        ident = self.ids[row]
        return ident.decode() if isinstance(ident, bytes) else str(ident)

    def projection(self) -> tuple[F32, F32] | None:
        """The PCA basis and projected matrix (built now if needed), or None below APPROX_MIN."""
        if len(self.ids) < APPROX_MIN:
            return None
        return self._projection()

    def attach_projection(self, basis: F32, projected: F32) -> None:
        """Use a projection made earlier (read from the scope's file) from the first search."""
        with self._lock:
            self._basis, self._projected = basis, projected
            self._coarse8, self._coarse8_tried = None, False  # made from these when needed

    def attach_codes(self, codes: Int8Coarse) -> None:
        """Use int8 codes of the attached projection made earlier (read from the scope's
        file) from the first search; they must be the codes of these very rows."""
        with self._lock:
            if self._projected is None or codes.codes.shape != self._projected.shape:
                raise ValueError("int8 codes of other rows than the projection's")
            self._coarse8, self._coarse8_tried = codes, True

    def coarse_codes(self) -> Int8Coarse | None:
        """The int8 codes of the base rows held now (made or attached), if any."""
        return self._coarse8

    def _int8(self, projected: F32) -> Int8Coarse | None:
        """The projection quantised for the coarse pass, once made (None until then, or
        without the runtime): the first call starts making it on a thread of its own."""
        with self._lock:
            if not self._coarse8_tried:
                self._coarse8_tried = True
                self._quantiser = threading.Thread(
                    target=self._quantise, args=(projected,), name="remem-coarse", daemon=True
                )
                self._quantiser.start()
            return self._coarse8

    def _quantise(self, projected: F32) -> None:
        made = Int8Coarse.of(projected)
        with self._lock:
            if self._projected is projected:  # not replaced meanwhile
                self._coarse8 = made

    def wait_coarse(self, timeout: float | None = None) -> Int8Coarse | None:
        """Wait for the int8 codes being made (if any are), and return them."""
        thread = self._quantiser
        if thread is not None:
            thread.join(timeout)
        return self._coarse8

    def _projection(self) -> tuple[F32, F32]:
        with self._lock:
            if self._basis is None or self._projected is None:
                m = np.asarray(self.matrix, np.float32)
                rng = np.random.default_rng(0)
                sample = m if len(m) <= PCA_SAMPLE else m[rng.choice(len(m), PCA_SAMPLE, False)]
                centred = sample - sample.mean(axis=0)
                # eigenvectors of the covariance: cheaper than an SVD of the sample
                _, vecs = np.linalg.eigh(centred.T @ centred)
                self._basis = np.ascontiguousarray(vecs[:, ::-1][:, :PROJECTED_DIM], np.float32)
                self._projected = np.ascontiguousarray(m @ self._basis)
            return self._basis, self._projected


def _scores(matrix: npt.NDArray[Any], queries: F32) -> F32:
    """Every row's cosine to each query, (rows, queries): a matrix-vector product for one."""
    m: F32 = np.asarray(matrix, np.float32)  # float32 already below APPROX_MIN: no copy
    out: F32 = (m @ queries[0])[:, None] if len(queries) == 1 else m @ queries.T
    return out


def top_rows(scores: F32, k: int) -> npt.NDArray[np.intp]:
    """The rows of the `k` highest scores (in no order), as `np.argpartition` finds them.

    A full partition of 100,000 scores costs 1 ms. Every row scoring at least the
    k-th best is found instead among those at or above a bar set from an evenly
    spaced sample, low enough that about four times `k` pass it; the partition of
    those few picks the same rows. When fewer than `k` pass (an unlucky sample),
    the whole array is partitioned.
    """
    n = len(scores)
    if k >= n:
        return np.arange(n)
    if n >= 16 * k and n >= 4096:
        step = max(1, n // 4096)
        sample = scores[::step]
        rank = min(len(sample) - 1, (4 * k * len(sample)) // n)
        bar = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
        passed = np.flatnonzero(scores >= bar)
        if len(passed) >= k:
            return passed[np.argpartition(-scores[passed], k - 1)[:k]]
    return np.argpartition(-scores, k - 1)[:k]
