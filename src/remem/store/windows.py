"""The newest matches of a query of several terms, from each term's own newest matches.

A word search ranks only the `window` newest rows that match any of its terms. The
`window` newest matches of one term hold every row of those that holds the term, so
the query's window and each row's score follow from what each term's newest `window`
matches are: what `remem.store.sqlite.upkeep.PhraseShares` and
`remem.store.postgres.terms.TermWindows` keep between searches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def newest_union(
    keys: Sequence[npt.NDArray[np.int64]],
    shares: Sequence[npt.NDArray[np.floating]],
    window: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.floating]]:
    """The `window` newest keys (the greatest) of the union of some terms' matches,
    ascending, and each one's score: the sum of its shares, added term by term in the
    order given, in the shares' own type (a term missing from a row adds nothing).
    `keys[i]` are term i's rows, each once; `shares[i]` its share in each."""
    every = np.sort(np.concatenate(keys))
    first = np.ones(len(every), np.bool_)
    first[1:] = every[1:] != every[:-1]
    every = every[first]  # each key once, ascending
    floor = int(every[-window]) if len(every) >= window else np.iinfo(np.int64).min
    rows = every[every >= floor]
    score = np.zeros(len(rows), np.result_type(*shares) if shares else np.float64)
    for k, s in zip(keys, shares, strict=True):
        inside = k >= floor
        score[np.searchsorted(rows, k[inside])] += s[inside]
    return rows, score
