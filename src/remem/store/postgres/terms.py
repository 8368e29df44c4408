"""Word search on PostgreSQL through each term's newest matches, kept while their scope
stands (`TermWindows`).

`remem.store.postgres.sql.search_records` ranks by ts_rank the `LEXICAL_WINDOW`
newest records holding any of a query's terms: it reads each term's newest matches
from `record_terms`, sums them per record, keeps the window, sorts it by score and
walks it until `limit` records pass the search's condition (in the scope, active or
invalid). A query of two common words reads 2,000 term rows: the costliest statement
of a recall at 100,000 records (docs/decisions/service-speed.md has the runs).

What a term's window holds changes only when its scope's records do, and every such
write moves the scope's version (`scope_versions`) in its own transaction, in any
process (what `remem.store.postgres.upkeep.HeldRecords` relies on too). So this keeps,
per (tenant, actor, term), the seq, id and ts_rank of the term's `window` newest
matches, beside the version they were read at; and, per scope and filter, which
records passed the search's condition at a version. A search reads its query's terms
and the scope's version in one short statement, then only what is not kept at that
version: the missing terms' windows in one statement, the condition of candidates not
yet known in another, each with the scope's version in the same snapshot. The window,
the scores and the order follow from the terms' windows (`remem.store.windows`) as
they do in SQL: the same records in the same order, each score the float4 sum of its
terms' ranks over the number of terms, added here in the terms' order (in SQL, in the
order rows reach the sum: the last bit of a sum of three or more may differ).

Reading a term's window costs more than the statement, so the first `QUIET_SEARCHES`
searches of a scope at a version are the statement itself, sent in the round trip of
the short one: where a write comes before every recall, a search costs one small
statement more than before and reads no window. A version that moves between those
statements (a write committed between them) sends the search to the SQL statement too.

What is kept is ids and numbers, never text: at most `TERM_ROWS_HELD` term rows over
every window, the oldest term dropped first, and `IDS_HELD` conditions over every
scope, the oldest scope dropped first. An erasure drops the erased scope's at once
(`drop_scope`); every `LINGER_SECONDS` everything goes (`remem.linger`), so an erased
scope in another process lingers no longer than that.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from remem.linger import Sweep
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.text import words
from remem.store.values import Hit, Scope
from remem.store.windows import newest_union

TERM_ROWS_HELD = 200_000  # term rows kept (about 80 bytes each), over every window
IDS_HELD = 100_000  # records whose condition is kept, over every scope and filter
CHECKED_MIN = 32  # candidates whose condition one statement reads, at least
# searches of a scope at one version that are sent to SQL (with the short statement, in
# one round trip) before windows are read and kept: a recall makes one or two, so
# where every recall follows a write, none reads a window (`TermWindows.search`)
QUIET_SEARCHES = 4
SCOPES_SEEN = 10_000  # scopes whose version and searches since are remembered


# The statements, each reading the scope's version in its own snapshot.
_SCOPE_VERSION_OF = f"coalesce(({q.SCOPE_VERSION}), 0)"
# a query's terms, as `remem.store.postgres.sql.search_records` finds them
QUERY_TERMS = f"""
SELECT tsvector_to_array(to_tsvector('{q.TEXT_CONFIG}', %(words)s)) AS terms,
       {_SCOPE_VERSION_OF} AS version
"""
# each of some terms' `window` newest record matches (seq, id, ts_rank; NULL: none)
RECORD_TERM_WINDOWS = f"""
SELECT w.term, t.seqs, t.ids, t.ranks, {_SCOPE_VERSION_OF} AS version
FROM unnest(%(terms)s::text[]) AS w(term), LATERAL (
    SELECT array_agg(n.seq) AS seqs, array_agg(n.record_id) AS ids,
           array_agg(n.weight) AS ranks
    FROM (SELECT seq, record_id, weight FROM record_terms
          WHERE tenant = %(tenant)s AND actor = %(actor)s AND term = w.term
          ORDER BY seq DESC LIMIT %(window)s) AS n
) AS t
"""


def records_in_scope(scope: Scope) -> tuple[str, dict[str, Any]]:
    """Which of some records (`keys`) pass the condition of the search
    (`remem.store.postgres.sql.searched_where`)."""
    where, params = q.searched_where(scope)
    sql = f"""
SELECT ARRAY(SELECT r.id FROM records r
             WHERE r.tenant = %(tenant)s AND r.id = ANY(%(keys)s::text[]) AND {where}) AS ids,
       {_SCOPE_VERSION_OF} AS version
"""
    return sql, params


class _Window(NamedTuple):
    """A term's newest matches in one scope, read at the scope's `version`."""

    version: int
    seqs: npt.NDArray[np.int64]
    ids: npt.NDArray[np.object_]
    ranks: npt.NDArray[np.float32]


class TermWindows:
    """`search_records` on PostgreSQL from kept term windows (see the module); ranks the
    `window` newest matches, as `remem.store.postgres.sql.search_records` does."""

    def __init__(
        self,
        backend: PostgresBackend,
        *,
        window: int = q.LEXICAL_WINDOW,
        rows_held: int = TERM_ROWS_HELD,
        ids_held: int = IDS_HELD,
    ) -> None:
        self.backend = backend
        self.window, self.rows_held, self.ids_held = window, rows_held, ids_held
        self._windows: dict[tuple[str, str, str], _Window] = {}
        self._rows = 0
        # (tenant, actor, the filter's parameters) -> (version, record id -> passed)
        self._passed: dict[tuple[Any, ...], tuple[int, dict[str, bool]]] = {}
        self._ids = 0
        # (tenant, actor) -> (the scope's version last seen, searches since it moved on)
        self._searches: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()
        self._sweep = Sweep()

    def search(self, scope: Scope, query: str, limit: int) -> list[Hit]:
        """The `limit` best of the scope's `window` newest active or invalid records
        matching any word of `query`, best first, by ts_rank."""
        first = self.first(scope, query, limit)
        if not first:
            return []
        tenant, actor = scope.tenant, scope.actor
        with self._lock:
            seen = self._searches.get((tenant, actor))
        got = self.backend.rows_many(tenant, first)
        terms, version = list(got[0][0]["terms"]), int(got[0][0]["version"])
        with self._lock:
            moved = seen is None or seen[0] != version
            searches = 1 if seen is None or moved else seen[1] + 1
            self._searches.pop((tenant, actor), None)
            self._searches[(tenant, actor)] = (version, searches)
            while len(self._searches) > SCOPES_SEEN:
                self._searches.pop(next(iter(self._searches)))
        if len(first) > 1:  # not quiet: the search itself came back too
            return hits(got[1])
        plain = q.search_records(scope, query, limit, self.window)
        assert plain is not None  # the query has words
        if not terms:
            return []
        windows = None if moved else self._read_windows(scope, terms, version)
        if windows is None:
            return hits(self.backend.rows(tenant, *plain))
        seqs, sums = newest_union([w.seqs for w in windows], [w.ranks for w in windows],
                                  self.window)  # fmt: skip
        scores = sums.astype(np.float64) / len(terms)  # float4 sum / count: a float8
        order = np.lexsort((-seqs, -scores))  # best first, ties newest first
        every_seq = np.concatenate([w.seqs for w in windows])
        every_id = np.concatenate([w.ids for w in windows])
        at = np.argsort(every_seq, kind="stable")
        ids = every_id[at[np.searchsorted(every_seq[at], seqs[order])]].tolist()
        kept = self._in_scope(scope, version, ids, limit)
        if kept is None:
            return hits(self.backend.rows(tenant, *plain))
        ranked = scores[order]
        return [Hit(ids[j], float(ranked[j])) for j in kept]

    def first(self, scope: Scope, query: str, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """The statements a search of `query` sends first, as things stand: the query's
        terms and the scope's version, then the whole search in SQL unless the scope has
        had `QUIET_SEARCHES` at its version (none for a query without words)."""
        found = words(query)
        if not found or limit <= 0:
            return []
        tenant, actor = scope.tenant, scope.actor
        head = (QUERY_TERMS, {"words": " ".join(found), "tenant": tenant, "actor": actor})
        with self._lock:
            seen = self._searches.get((tenant, actor))
        if seen is not None and seen[1] >= QUIET_SEARCHES:
            return [head]
        plain = q.search_records(scope, query, limit, self.window)
        assert plain is not None  # the query has words
        return [head, plain]

    def drop_scope(self, tenant: str, actor: str) -> None:
        """Forget everything kept of one scope (after an erasure)."""
        with self._lock:
            for key in [k for k in self._windows if k[:2] == (tenant, actor)]:
                self._rows -= len(self._windows.pop(key).seqs)
            for key in [k for k in self._passed if k[:2] == (tenant, actor)]:
                self._ids -= len(self._passed.pop(key)[1])

    def held(self, tenant: str, actor: str) -> int:
        """How many term rows of one scope are kept."""
        with self._lock:
            return sum(len(w.seqs) for k, w in self._windows.items() if k[:2] == (tenant, actor))

    def size(self) -> tuple[int, int]:
        """How many term rows, and how many records' conditions, are kept in all."""
        with self._lock:
            return self._rows, self._ids

    def _read_windows(self, scope: Scope, terms: list[str], version: int) -> list[_Window] | None:
        """The terms' windows at `version`, those not kept read in one statement; None if
        the scope's version moved on meanwhile."""
        with self._lock:
            if self._sweep.due():
                self._windows.clear()
                self._passed.clear()
                self._rows = self._ids = 0
            got = {t: w for t in terms
                   if (w := self._windows.get((scope.tenant, scope.actor, t))) is not None
                   and w.version == version}  # fmt: skip
        missing = [t for t in terms if t not in got]
        if not missing:
            return [got[t] for t in terms]
        params = {"tenant": scope.tenant, "actor": scope.actor, "terms": missing,
                  "window": self.window}  # fmt: skip
        rows = self.backend.rows(scope.tenant, RECORD_TERM_WINDOWS, params)
        if any(int(r["version"]) != version for r in rows):
            return None
        read = {
            r["term"]: _Window(
                version,
                np.array(r["seqs"] or (), np.int64),
                np.array(r["ids"] or (), np.object_),
                np.array(r["ranks"] or (), np.float32),
            )
            for r in rows
        }
        with self._lock:
            for term, w in read.items():
                self._keep((scope.tenant, scope.actor, term), w)
        got.update(read)
        return [got[t] for t in terms]

    def _keep(self, key: tuple[str, str, str], window: _Window) -> None:
        """Keep a window (the lock held), dropping the oldest past `rows_held`."""
        old = self._windows.pop(key, None)
        if old is not None:
            self._rows -= len(old.seqs)
        self._windows[key] = window
        self._rows += len(window.seqs)
        while self._rows > self.rows_held and len(self._windows) > 1:
            self._rows -= len(self._windows.pop(next(iter(self._windows))).seqs)

    def _in_scope(self, scope: Scope, version: int, ids: list[str], limit: int) -> list[int] | None:
        """The places in `ids` (best first) of the first `limit` that pass the search's
        condition at `version`, those not known read a stretch at a time; None if the
        scope's version moved on meanwhile."""
        sql, params = records_in_scope(scope)
        key = (scope.tenant, scope.actor, *sorted(params.items()))
        with self._lock:
            kept_version, known = self._passed.get(key, (version, {}))
        known = known if kept_version == version else {}  # never changed once kept
        kept: list[int] = []
        start = 0
        while len(kept) < limit and start < len(ids):
            end = min(len(ids), start + max(2 * (limit - len(kept)), CHECKED_MIN))
            unknown = [i for i in ids[start:end] if i not in known]
            if unknown:
                row = self.backend.rows(scope.tenant, sql, {**params, "keys": unknown})[0]
                if int(row["version"]) != version:
                    return None
                passed = set(row["ids"])
                read = {i: i in passed for i in unknown}
                known = {**known, **read}
                with self._lock:
                    self._note(key, version, read)
            kept.extend(j for j in range(start, end) if known[ids[j]])
            start = end
        return kept[:limit]

    def _note(self, key: tuple[Any, ...], version: int, read: dict[str, bool]) -> None:
        """Keep which records passed (the lock held): past `ids_held`, the oldest scope
        goes first, and a scope alone past it keeps only what was just read."""
        old = self._passed.pop(key, None)
        known = old[1] if old is not None and old[0] == version else {}
        self._ids -= len(old[1]) if old is not None else 0
        known = {**known, **read}
        while self._ids + len(known) > self.ids_held and self._passed:
            self._ids -= len(self._passed.pop(next(iter(self._passed)))[1])
        if len(known) > self.ids_held:
            known = read
        self._passed[key] = (version, known)
        self._ids += len(known)


def hits(rows: list[Any]) -> list[Hit]:
    """The hits of a word search statement (`remem.store.postgres.sql.search_records`,
    `search_events`): an id and a score per row."""
    return [Hit(r["id"], float(r["score"])) for r in rows]
