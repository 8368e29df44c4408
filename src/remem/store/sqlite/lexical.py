"""BM25 of an OR-query from its phrases' BM25, each kept while the file is unchanged.

FTS5's `bm25()` of a row is minus the sum, phrase by phrase in the query's order, of
each phrase's share: its IDF (from the table's row count and the rows holding the
phrase), its count in the row and the row's length against the average. A share
depends on nothing else in the query, and the BM25 of a one-phrase query is minus
that share alone, so the sum of the shares read from one-phrase queries, added in
the query's order, is the very double FTS5 gives the OR-query (x + 0.0 is x: a
phrase absent from a row adds nothing either way). The costly part of `bm25()` is
its lookup of each row's length (a statement run per row, about 1.3 us at 100,000
records); the shares of a phrase are read once and kept while nothing is written to
the file: no change on this connection (`total_changes`) and no commit by another
(`PRAGMA data_version`), both read in the read transaction that reads what is
missing, so what is kept and what is read are of one snapshot. Any write moves every
share (the IDF and the average length are the table's), so everything kept goes.

Ranking reads the `window` newest matches of the OR-query (`LEXICAL_WINDOW`), and
the newest `window` matches of a phrase hold every row of those that holds the
phrase: a phrase keeps its `window` newest rows, and the floor and the BM25 of the
OR-query follow from what its phrases keep. Ties are broken as SQLite's ORDER BY
... LIMIT breaks them: in the order the full-text scan met the rows (rowid, oldest
first). What is kept is rowids and numbers, and the id, scope and status of the
rows the best were joined to, never text: at most `SHARES_HELD` rows over all
phrases, the oldest phrase dropped first.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.store.sqlite.sql import DATA_VERSION

SHARES_HELD = 500_000  # phrase rows kept (16 bytes each), over every phrase and table
ROWS_HELD = 20_000  # rows kept of what the best were joined to (`PhraseShares.joined`)
PHRASE_SHARES = """
SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH :match
ORDER BY rowid DESC LIMIT :window
"""


@dataclass(frozen=True, slots=True)
class _Shares:
    """A phrase's newest rows (rowid, descending) and its share of BM25 in each."""

    rowids: npt.NDArray[np.int64]
    shares: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Ranked:
    """The best rows of an OR-query: rowids, best first, and their BM25 (FTS5's `rank`,
    negative: lower is better)."""

    rowids: list[int]
    ranks: list[float]


class PhraseShares:
    """The BM25 shares of the phrases this connection's recalls asked for, while the file
    is unchanged. Not thread-safe: the caller holds the connection's lock."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str, int], _Shares] = {}
        self._rows = 0
        self._joined: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._seen: tuple[int, int] = (-1, -1)

    def clear(self) -> None:
        """Forget everything kept."""
        self._held.clear()
        self._rows = 0
        self._joined.clear()

    def joined(
        self, db: sqlite3.Connection, by_key: str, rowids: Sequence[int]
    ) -> dict[int, tuple[Any, ...]]:
        """The rows `by_key` reads for some of the rowids `rank` just gave (a statement of
        a JSON list `keys` returning the rowid first; a rowid it does not find is left
        out), as tuples; those read since the last write kept (at most `ROWS_HELD`, the
        oldest dropped first). In the read transaction of that `rank`."""
        out = {k: r for k in rowids if (r := self._joined.get((by_key, k))) is not None}
        missing = [k for k in rowids if k not in out]
        if missing:
            for r in db.execute(by_key, {"keys": json.dumps(missing)}).fetchall():
                out[r[0]] = self._joined[(by_key, r[0])] = tuple(r)
            while len(self._joined) > ROWS_HELD:
                self._joined.pop(next(iter(self._joined)))
        return out

    def rank(
        self,
        db: sqlite3.Connection,
        table: str,
        phrases: Sequence[str],
        window: int,
        limit: int,
    ) -> Ranked | None:
        """The `limit` best of the `window` newest rows matching any of `phrases` (each a
        quoted FTS5 phrase), as `bm25(table)` of their OR-query ranks them.

        The phrases not kept are read, each up to `window` rows, until `window` rows
        were read: the rest would cost more than the OR-query itself (BM25 of up to
        `window` rows), so None then, and the caller asks FTS5 the OR-query. The
        phrases read are kept, for the next query that has them. A cold query thus
        costs at most about twice the OR-query, and a phrase ever read nothing more
        until the next write.

        The caller holds the connection's lock and has begun a read transaction of its
        own (never a write: what it wrote and then rolled back would stay kept).
        """
        seen = (db.total_changes, int(db.execute(DATA_VERSION).fetchone()[0]))
        if seen != self._seen:
            self.clear()
            self._seen = seen
        found = {p: h for p in phrases if (h := self._held.get((table, p, window))) is not None}
        sql, read = PHRASE_SHARES.format(table=table), 0
        for phrase in dict.fromkeys(p for p in phrases if p not in found):
            if read >= window:
                return None
            rows = db.execute(sql, {"match": phrase, "window": window}).fetchall()
            read += len(rows)
            rowids = np.array([r[0] for r in rows], np.int64)
            shares = -np.array([r[1] for r in rows], np.float64)  # bm25() is minus the share
            found[phrase] = _Shares(rowids, shares)
            self._keep((table, phrase, window), found[phrase])
        return _combine([found[p] for p in phrases], window, limit)

    def _keep(self, key: tuple[str, str, int], shares: _Shares) -> None:
        self._held[key] = shares
        self._rows += len(shares.rowids)
        while self._rows > SHARES_HELD and len(self._held) > 1:
            oldest = next(iter(self._held))
            self._rows -= len(self._held.pop(oldest).rowids)


def _combine(lists: Sequence[_Shares], window: int, limit: int) -> Ranked:
    """The OR-query's floor and ranking from its phrases' newest rows and shares."""
    every = np.sort(np.concatenate([s.rowids for s in lists]))
    first = np.ones(len(every), np.bool_)
    first[1:] = every[1:] != every[:-1]
    every = every[first]  # each rowid once, ascending
    floor = int(every[-window]) if len(every) >= window else 0
    rows = every[every >= floor]
    score = np.zeros(len(rows), np.float64)
    for s in lists:  # in the query's order, as FTS5 adds them
        inside = s.rowids >= floor
        score[np.searchsorted(rows, s.rowids[inside])] += s.shares[inside]
    rank = -score
    best = np.lexsort((rows, rank))[:limit]  # by rank, ties oldest first
    return Ranked(rows[best].tolist(), rank[best].tolist())
