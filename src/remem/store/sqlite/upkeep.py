"""What the SQLite store keeps beside its rows as they are written: FTS5 rows of events and
records, record vectors (float16 blobs with their status and validity, searched in
memory), the scope versions its caches are keyed on, and the events around others
(`remem.store.flows.events.EventUpkeep`, `remem.store.flows.records.RecordUpkeep`);
and what it keeps while the file is unchanged: decoded records (`HeldRecords`) and
each phrase's share of BM25 (`PhraseShares`).

Every word of an FTS5 row is prefixed by its scope's token (`scope_token`), so a
search matches one scope's rows only. The events around others are read one chunk
of 50 events at a time (one UNION part per event and side, in statements of a few
sizes).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.model import Event, Record
from remem.store.flows.backend import CHUNK, Row, Tx, chunks
from remem.store.flows.records import RECORDS_HELD, Reader, Vector
from remem.store.sqlite import sql as q
from remem.store.sqlite.backend import SQLiteBackend
from remem.store.sqlite.sql import scope_token, scoped_text
from remem.store.values import StatusChange, Write
from remem.store.windows import newest_union

SHARES_HELD = 500_000  # phrase rows kept (16 bytes each), over every phrase and table
ROWS_HELD = 20_000  # rows kept of what the best were joined to (`PhraseShares.joined`)
# the events a statement of `near_rows` reads the turns around: each count its own text
NEAR_PARTS = (1, 2, 4, 8, 16, 32, 50)
# searches after a write that ask FTS5 the OR-query rather than read phrases not kept
# (`PhraseShares.rank`): a recall makes two or three, so a recall after each write reads none
QUIET_SEARCHES = 4
# one phrase's newest matches and its BM25 in each (`PhraseShares.rank`)
PHRASE_SHARES = """
SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH :match
ORDER BY rowid DESC LIMIT :window
"""


class SQLiteUpkeep:
    """SQLite's own upkeep of events and records, over its `backend`."""

    def __init__(self, backend: SQLiteBackend) -> None:
        self.backend = backend

    def index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        """FTS5 rows of just-inserted events."""
        db.executemany(q.INSERT_EVENT_FTS, [fts_row(key, e.tenant, e.actor, e.text)
                                            for key, e in added])  # fmt: skip

    def before_write(self, write: Write) -> None:
        """Nothing before a write."""

    def after_write(self, write: Write) -> None:
        """Nothing after a write."""

    def index_records(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Record]]) -> None:
        """FTS5 rows of just-inserted records."""
        db.executemany(q.INSERT_RECORD_FTS, [fts_row(key, r.tenant, r.actor, r.text)
                                             for key, r in added])  # fmt: skip

    def store_vectors(
        self, db: Tx, model: str, vectors: Sequence[tuple[Any, Record, Vector]]
    ) -> None:
        """Vector rows of just-inserted records: float16, with status and validity."""
        db.executemany(q.INSERT_VECTOR, [
            {"key": key, "id": rec.id, "tenant": rec.tenant, "actor": rec.actor,
             "model": model, "status": rec.status.value,
             "valid_from": rec.valid_from.timestamp(),
             "valid_until": rec.valid_until.timestamp() if rec.valid_until else None,
             "vec": np.asarray(vec, np.float16).tobytes()}
            for key, rec, vec in vectors
        ])  # fmt: skip

    def vector_closed(self, db: Tx, key: Any, change: StatusChange) -> None:
        """A closed record's vector row takes its status and end of validity."""
        until = change.valid_until.timestamp() if change.valid_until else None
        db.execute(q.CLOSE_VECTOR, {"status": change.status.value, "valid_until": until,
                                    "key": key})  # fmt: skip

    def scope_changed(self, db: Tx, tenant: str, actor: str) -> None:
        """Move the scope's version on (the in-memory vectors and vector files follow it)."""
        db.execute(q.BUMP_SCOPE, {"tenant": tenant, "actor": actor})

    def near_rows(self, tenant: str, event_ids: Sequence[str], reach: int) -> list[Row]:
        """The rows around these events, one chunk of 50 events to a statement of
        `NEAR_PARTS` parts (a statement of its own for each count, re-prepared as often
        as the connection's cache drops it, cost 2.8 ms for 40 events against 1.2 for
        running it)."""
        rows: list[Row] = []
        for chunk in chunks(list(event_ids), NEAR_PARTS[-1]):  # one UNION part per event and side
            ((sql, bound),) = self.backend.lists(q.EVENT_PLACES, {"tenant": tenant}, chunk)
            places = self.backend.rows(sql, bound)
            if places:
                parts = next(n for n in NEAR_PARTS if n >= len(places))
                params = q.events_near_params(tenant, reach, places, parts)
                rows.extend(self.backend.rows(q.events_near(parts), params))
        return rows


class HeldRecords:
    """Decoded records while the file is unchanged (`remem.store.flows.records.Held`).

    A recall fetches the same candidates again and again (2-3 ms of decoding a
    recall at 100,000 records), so decoded records are kept while the file is
    unchanged: no change on this connection (`total_changes`) and no commit by
    another (`PRAGMA data_version`). Inside a transaction they are read afresh,
    and an erasure drops them all (`records.clear()`, `_drop_scope_vectors`). At
    most `RECORDS_HELD`, the oldest dropped first. Another process's erasure is a
    commit to the file: every record held goes at the next read (each recall reads
    through here at least once).
    """

    def __init__(self, backend: SQLiteBackend) -> None:
        self.backend = backend
        self.records: dict[tuple[str, str], Record] = {}
        self.seen: tuple[int, int] = (-1, -1)

    def get(self, tenant: str, ids: Sequence[str], read: Reader) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out), in the order
        the statement gives them (by id within each chunk of `CHUNK` ids)."""
        db = self.backend.conn
        with self.backend.lock:
            if db.in_transaction:
                return read(tenant, ids)
            seen = (db.total_changes, int(db.execute(q.DATA_VERSION).fetchone()[0]))
            if seen != self.seen:
                self.records.clear()
                self.seen = seen
            held = self.records
            missing = [i for i in dict.fromkeys(ids) if (tenant, i) not in held]
            for rec in read(tenant, missing) if missing else ():
                held[(tenant, rec.id)] = rec
            out = [
                held[(tenant, i)]
                for part in chunks(ids, CHUNK)
                for i in sorted({i for i in part if (tenant, i) in held})
            ]
            while len(held) > RECORDS_HELD:
                held.pop(next(iter(held)))
            return out

    def holds(self, tenant: str, record_id: str) -> bool:
        """Whether a decoded copy of this record is held."""
        with self.backend.lock:
            return (tenant, record_id) in self.records


def fts_row(key: Any, tenant: str, actor: str, text: str) -> dict[str, Any]:
    """An FTS5 row of one event or record: every word prefixed by its scope's token."""
    token = scope_token(tenant, actor)
    return {"key": key, "text": scoped_text(token, text), "scope": token}


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
    """The BM25 shares of the phrases this connection's searches asked for, kept while
    the file is unchanged: the BM25 of an OR-query from its phrases'. Not thread-safe:
    the caller holds the connection's lock.

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
    phrases, the oldest phrase dropped first, and `ROWS_HELD` joined rows. An erasure
    drops them all at once (`SQLiteSearch._drop_scope_vectors`).

    On `remem bench`'s 100,000 records in one scope this took search_records from
    1.35 ms CPU a call to 0.17 once its phrases are kept, with hits, scores and order
    equal to FTS5's bit for bit on 1,200 bench queries and LoCoMo's 999 questions
    (records and events); `docs/decisions/phrase-shares.md` has the runs.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[str, str, int], _Shares] = {}
        self._rows = 0
        self._joined: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._seen: tuple[int, int] = (-1, -1)
        self._searches = 0  # since the last write seen (`rank`)

    def clear(self) -> None:
        """Forget everything kept."""
        self._held.clear()
        self._rows = 0
        self._joined.clear()
        self._searches = 0

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
        phrases read are kept, for the next query that has them: a cold query costs
        at most about twice the OR-query (1.5 times at 100,000 records, 2.2 ms CPU
        against 1.2-1.7), and a phrase once read costs nothing more until the next
        write. Reading only pays when the file stays unchanged for a while, so the
        first `QUIET_SEARCHES` searches after a write read no phrase (None when one
        is missing): where every recall follows a write, each costs what the
        OR-query costs (1.26 ms CPU a search against 1.25 at 100,000 records).

        The caller holds the connection's lock and has begun a read transaction of its
        own (never a write: what it wrote and then rolled back would stay kept).
        """
        seen = (db.total_changes, int(db.execute(q.DATA_VERSION).fetchone()[0]))
        if seen != self._seen:
            self.clear()
            self._seen = seen
        self._searches += 1
        found = {p: h for p in phrases if (h := self._held.get((table, p, window))) is not None}
        sql, read = PHRASE_SHARES.format(table=table), 0
        for phrase in dict.fromkeys(p for p in phrases if p not in found):
            if read >= window or self._searches <= QUIET_SEARCHES:
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
    """The OR-query's floor and ranking from its phrases' newest rows and shares (added
    in the query's order, as FTS5 adds them)."""
    rows, score = newest_union([s.rowids for s in lists], [s.shares for s in lists], window)
    rank = -score
    best = np.lexsort((rows, rank))[:limit]  # by rank, ties oldest first
    return Ranked(rows[best].tolist(), rank[best].tolist())
