"""A scope's vectors read out of SQLite: whole, or only what changed since a stamp.

Reading every vector of a 100,000-record scope through SQLite takes 1-2 s,
so vectors held already (in this process, or mapped from the scope's file,
see `remem.store.sqlite.vectors.files`) are caught up instead (`refresh`):

- rows added since are those after the stamp's newest row (`record_rowid`
  and `event_seq` only grow), read through the scope's index;
- a status change (supersession, invalidation, approval) shows in a digest of
  the scope's records that are not active (their count and two sums of their
  row ids, computed on the covering index `records_scope`, so it costs about
  as many index entries as there are such records); when it moved, those
  rows' ids and statuses are read from the same index and the held rows whose
  status differs are patched, their validity re-read. A validity end moved
  without a status change is not seen (no write does that today);
- a deleted (forgotten) row shows as fewer rows up to the stamp's newest
  than the stamp counted (one count on the scope's index): the row ids left
  are read from that index and the vectors copied without the others (no
  forgotten vector survives in the value; erasure removed the scope's files
  and the copy is written as a new base);
- a database that is not the one the vectors came from shows as another
  newest row (its id and a digest of its bytes), and so does a deletion of
  the stamp's newest row itself: the vectors are then read whole again.

Run inside one read transaction, so the stamp and the rows agree.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from remem.model import Status
from remem.store.flows.backend import sqlite_lists
from remem.store.sqlite.vectors.files import Stamp
from remem.store.sqlite.vectors.index import Appended, Patch, ScopeVectors

Kind = Literal["records", "events"]

VERSION = "SELECT version FROM scope_versions WHERE tenant = :tenant AND actor = :actor"
_NOT_ACTIVE = ", ".join(f"'{s.value}'" for s in Status if s is not Status.ACTIVE)
# a digest of which of the scope's records are not active (see the module docstring)
CLOSED = f"""
SELECT count(*), coalesce(sum(rowid), 0), coalesce(sum((rowid % 65521) * (rowid % 65519)), 0)
FROM records WHERE tenant = :tenant AND actor = :actor AND status IN ({_NOT_ACTIVE})
"""
CLOSED_ROWS = f"""
SELECT rowid, status FROM records
WHERE tenant = :tenant AND actor = :actor AND status IN ({_NOT_ACTIVE})
"""
UNTIL = """
SELECT record_rowid AS seq, status, valid_until FROM record_vectors WHERE record_rowid IN ({keys})
"""
_COLUMNS = {
    "records": "record_rowid AS seq, id, model, status, valid_from, valid_until, vec "
    "FROM record_vectors WHERE tenant = :tenant AND actor = :actor",
    "events": "event_seq AS seq, id, model, 'active' AS status, time AS valid_from, "
    "NULL AS valid_until, vec FROM event_vectors WHERE tenant = :tenant AND actor = :actor",
}
_SEQ = {"records": "record_rowid", "events": "event_seq"}
NEWEST = {k: f"SELECT {c} ORDER BY {_SEQ[k]} DESC LIMIT 1" for k, c in _COLUMNS.items()}
ALL = {k: f"SELECT {c} ORDER BY {_SEQ[k]}" for k, c in _COLUMNS.items()}
# after, at or up to the row `last`
AFTER = {k: f"SELECT {c} AND {_SEQ[k]} > :last ORDER BY {_SEQ[k]}" for k, c in _COLUMNS.items()}
AT = {k: f"SELECT {c} AND {_SEQ[k]} = :last" for k, c in _COLUMNS.items()}
ROWS_UPTO = {
    k: f"SELECT {seq} FROM {k[:-1]}_vectors "
    f"WHERE tenant = :tenant AND actor = :actor AND {seq} <= :last"
    for k, seq in _SEQ.items()
}
COUNT_UPTO = {
    k: f"SELECT count(*) FROM {k[:-1]}_vectors "
    f"WHERE tenant = :tenant AND actor = :actor AND {seq} <= :last"
    for k, seq in _SEQ.items()
}


@dataclass(frozen=True)
class Refreshed:
    """A scope's vectors as the database holds them now, and how they were got."""

    vectors: ScopeVectors | None  # None: the scope has no vectors
    stamp: Stamp | None
    # held: nothing changed; restamped: the scope changed, not its vectors; caught_up:
    # rows added or patched; compacted: rows deleted (and perhaps added or patched),
    # the rest copied; loaded: read whole
    how: Literal["held", "restamped", "caught_up", "compacted", "loaded"]


def refresh(
    db: sqlite3.Connection,
    kind: Kind,
    key: tuple[str, str],
    held: ScopeVectors | None,
    stamp: Stamp | None,
) -> Refreshed:
    """The scope's vectors now: `held` as they are, caught up, or read whole."""
    who = _who(key)
    rows = db.execute(VERSION, who).fetchall()
    version = int(rows[0][0]) if rows else 0
    newest = db.execute(NEWEST[kind], who).fetchone()
    if newest is None:
        return Refreshed(None, None, "loaded")
    closed = ":".join(map(str, db.execute(CLOSED, who).fetchone())) if kind == "records" else ""
    now = Stamp(version, int(newest["seq"]), str(newest["id"]), _digest(newest["vec"]), -1, closed)
    if held is not None and stamp is not None:
        if stamp.same_state(now):
            return Refreshed(held, stamp, "held")
        caught = _catch_up(db, kind, key, held, stamp, now)
        if caught is not None:
            vectors, restamped, compacted = caught
            if compacted:
                return Refreshed(vectors, restamped, "compacted")
            if vectors is held:
                return Refreshed(vectors, restamped, "restamped")
            return Refreshed(vectors, restamped, "caught_up")
    vectors, count = _load(db, kind, key)
    return Refreshed(vectors, _with_rows(now, count), "loaded")


def _catch_up(
    db: sqlite3.Connection, kind: Kind, key: tuple[str, str], held: ScopeVectors,
    stamp: Stamp, now: Stamp,
) -> tuple[ScopeVectors, Stamp, bool] | None:  # fmt: skip
    """`held` brought to `now` from what changed since `stamp` (`held` itself when nothing
    it holds did), the stamp now and whether rows were dropped; None if it cannot be."""
    given = held
    if held.rowids is None or now.version < stamp.version:
        return None
    if not _newest_intact(db, kind, key, stamp):
        return None
    count = int(db.execute(COUNT_UPTO[kind], _upto(key, stamp)).fetchone()[0])
    if count != stamp.rows:  # rows were deleted (forgotten): drop them, copy the rest
        left = db.execute(ROWS_UPTO[kind], _upto(key, stamp)).fetchall()
        keep = np.isin(held.rowids, np.fromiter((r[0] for r in left), np.int64, len(left)))
        held = held.kept(keep)
        stamp = _with_rows(stamp, count)
    added = db.execute(AFTER[kind], _upto(key, stamp)).fetchall()
    appended = _appended([r for r in added if r["model"] == held.model])
    same = kind == "events" or now.closed == stamp.closed
    patch = _patch_rows([]) if same else _patch(db, key, held)
    restamped = _with_rows(now, stamp.rows + len(added))
    compacted = held is not given
    if not appended.ids and not len(patch.rowids):
        return held, restamped, compacted
    return held.caught_up(appended, patch), restamped, compacted


def extends(db: sqlite3.Connection, kind: Kind, key: tuple[str, str], stamp: Stamp) -> bool:
    """Whether the scope still holds every vector row `stamp` saw (rows may have been
    added and statuses changed since, none deleted), in this database."""
    if not _newest_intact(db, kind, key, stamp):
        return False
    return bool(db.execute(COUNT_UPTO[kind], _upto(key, stamp)).fetchone()[0] == stamp.rows)


def _newest_intact(db: sqlite3.Connection, kind: Kind, key: tuple[str, str], stamp: Stamp) -> bool:
    last = db.execute(AT[kind], _upto(key, stamp)).fetchone()
    if last is None or str(last["id"]) != stamp.last_id:
        return False  # the stamp's newest row is gone or another: deleted, or another database
    return _digest(last["vec"]) == stamp.last_digest  # the same id, other bytes: another database


def _load(db: sqlite3.Connection, kind: Kind, key: tuple[str, str]) -> tuple[ScopeVectors, int]:
    """Every vector of the scope (those of its first row's model), and how many rows it has."""
    rows = db.execute(ALL[kind], _who(key)).fetchall()
    model = str(rows[0]["model"])
    a = _appended([r for r in rows if r["model"] == model])
    vectors = ScopeVectors(
        ids=a.ids, matrix=a.matrix, active=a.active, valid_from=a.valid_from,
        valid_until=a.valid_until, model=model, live=a.live, rowids=a.rowids,
    )  # fmt: skip
    return vectors, len(rows)


def _appended(rows: list[sqlite3.Row]) -> Appended:
    statuses = [r["status"] for r in rows]
    matrix = np.frombuffer(b"".join(r["vec"] for r in rows), dtype=np.float16)
    dim = len(rows[0]["vec"]) // 2 if rows else 0
    return Appended(
        ids=tuple(str(r["id"]) for r in rows),
        rowids=np.array([r["seq"] for r in rows], np.int64),
        matrix=matrix.reshape(len(rows), dim).astype(np.float32),
        active=np.array([s == "active" for s in statuses], np.bool_),
        live=np.array([s in ("active", "invalid") for s in statuses], np.bool_),
        valid_from=np.array([r["valid_from"] for r in rows], np.float64),
        valid_until=np.array([_until(r["valid_until"]) for r in rows], np.float64),
    )


def _patch(db: sqlite3.Connection, key: tuple[str, str], held: ScopeVectors) -> Patch:
    """The held rows whose status is not what `held` says, as they are now."""
    assert held.rowids is not None
    closed = db.execute(CLOSED_ROWS, _who(key)).fetchall()
    rowids = np.asarray(held.rowids, np.int64)
    active = ~np.isin(rowids, np.array([r[0] for r in closed], np.int64))
    invalid = np.array([r[0] for r in closed if r[1] == Status.INVALID.value], np.int64)
    live = active | np.isin(rowids, invalid)
    was_live = held.live if held.live is not None else np.ones(len(rowids), np.bool_)
    changed = rowids[(active != held.active) | (live != was_live)]
    rows: list[sqlite3.Row] = []
    for sql, params in sqlite_lists(UNTIL, {}, changed.tolist()):
        rows += db.execute(sql, params).fetchall()
    return _patch_rows(rows)


def _who(key: tuple[str, str]) -> dict[str, str]:
    """A scope's (tenant, actor) as the statements name them."""
    return {"tenant": key[0], "actor": key[1]}


def _upto(key: tuple[str, str], stamp: Stamp) -> dict[str, Any]:
    """A scope and the newest row `stamp` saw (`last`), as the statements name them."""
    return {"tenant": key[0], "actor": key[1], "last": stamp.last_rowid}


def _patch_rows(rows: Iterable[sqlite3.Row]) -> Patch:
    found = list(rows)
    return Patch(
        rowids=np.array([r["seq"] for r in found], np.int64),
        active=np.array([r["status"] == "active" for r in found], np.bool_),
        live=np.array([r["status"] in ("active", "invalid") for r in found], np.bool_),
        valid_until=np.array([_until(r["valid_until"]) for r in found], np.float64),
    )


def _until(value: float | None) -> float:
    return math.inf if value is None else float(value)


def _digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:32]


def _with_rows(stamp: Stamp, rows: int) -> Stamp:
    return Stamp(
        stamp.version, stamp.last_rowid, stamp.last_id, stamp.last_digest, rows, stamp.closed
    )
