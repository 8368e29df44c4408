"""`remem.store.windows.newest_union`: the window and scores of a query of several terms
from each term's newest matches, against the same computed row by row."""

from __future__ import annotations

import numpy as np
import pytest

from remem.store.windows import newest_union


def by_hand(lists: list[dict[int, float]], window: int) -> dict[int, float]:
    """The `window` greatest keys of the union and each one's sum, in plain Python."""
    union = sorted({k for d in lists for k in d}, reverse=True)[:window]
    return {k: sum(d.get(k, 0.0) for d in lists) for k in union}


@pytest.mark.parametrize("seed", range(20))
def test_newest_union_is_the_union_cut_to_its_window(seed: int) -> None:
    rng = np.random.default_rng(seed)
    window = int(rng.integers(1, 40))
    lists = []
    for _ in range(int(rng.integers(1, 5))):
        keys = rng.choice(200, size=int(rng.integers(0, 60)), replace=False)
        # each term holds only its own `window` newest matches, as the stores read them
        keys = np.sort(keys)[::-1][:window]
        lists.append({int(k): float(rng.random()) for k in keys})
    if not any(lists):
        lists.append({1: 0.5})
    keys = [np.array(sorted(d), np.int64) for d in lists]
    shares = [
        np.array([d[int(k)] for k in ks], np.float64) for d, ks in zip(lists, keys, strict=True)
    ]

    rows, score = newest_union(keys, shares, window)

    expected = by_hand(lists, window)
    assert rows.tolist() == sorted(expected)
    assert score.tolist() == pytest.approx([expected[k] for k in sorted(expected)])


def test_scores_keep_the_type_of_the_shares() -> None:
    keys = [np.array([3, 5], np.int64), np.array([5, 9], np.int64)]
    shares = [np.array([0.1, 0.2], np.float32), np.array([0.3, 0.4], np.float32)]

    rows, score = newest_union(keys, shares, window=10)

    assert rows.tolist() == [3, 5, 9]
    assert score.dtype == np.float32
    assert score[1] == np.float32(0.2) + np.float32(0.3)
