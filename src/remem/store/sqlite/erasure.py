"""Erasure on the SQLite store: what `remem.store.flows.erasure.Erasures` leaves to it.

`SQLiteErasure` is SQLite's `ErasureParts`. An erased record leaves the file's rows, its FTS5
entries (and, after `scrub_files`, the merged index segments and the WAL), the
scope's vectors held in memory and in the vector files beside the database.
Lists of keys are bound in chunks (`remem.store.flows.backend.sqlite_lists`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from remem.store.errors import sqlite_translated
from remem.store.flows.backend import Tx
from remem.store.flows.erasure import DeletionSQL, Found
from remem.store.flows.jobs import LAST_NUMBER
from remem.store.sqlite import sql as q
from remem.store.sqlite.backend import SQLiteBackend
from remem.store.sqlite.sql import scope_token
from remem.store.sqlite.vectors.files import VectorFiles

CHECKPOINT_WAIT_MS = 3_000  # how long an erasure's checkpoint waits for other readers

FTS_MAX_LEVELS = 32  # FTS5's own merges never go past 64 levels (FTS5_MAX_LEVEL)
STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the index's structure record
_STRUCTURE = "SELECT block FROM {table}_data WHERE id = " + str(STRUCTURE_ROWID)
_COMMAND = "INSERT INTO {table} ({table}) VALUES ('{command}')"


class DeletionLogSQL:
    """The deletion log's statements beyond `sqlite_sql`'s (see `DeletionSQL`)."""

    FINISH_DELETION = """
UPDATE deletions SET status = :status, attempts = :attempts, result = :result,
    last_error = :error, updated_at = :at
WHERE tenant = :tenant AND id = :id
"""
    GET_DELETION = "SELECT * FROM deletions WHERE tenant = :tenant AND id = :id"
    INTERRUPTED_DELETIONS = """
SELECT DISTINCT tenant FROM deletions WHERE status = 'running' AND created_at <= :before
ORDER BY tenant
"""


class ActorMarkSQL:
    """An actor's rows an erasure left: their largest keys (`_mark_actor`), and the rows at
    or below them (`_actor_left`). A new row's key is above every row's in its table
    (SQLite gives max(rowid) + 1), so a row stored after the erasure is never counted.

    Thread state and request ids have no such key (their tables have no rowid): the mark
    is how many of the actor's checkpoints, tool calls and request ids the erasure left,
    read in its transaction after its deletes, while it holds the write lock; the
    read-back counts at most that many (a later writer can add, never bring one back).
    The vector files are marked by the scope version the erasure moved to: a file read
    from the rows at that version or later (a recall right after the commit) holds none
    of what it erased."""

    MARK = """
SELECT
    (SELECT coalesce(max(rowid), 0) FROM records
        WHERE tenant = :tenant AND actor = :actor) AS records,
    (SELECT coalesce(max(record_rowid), 0) FROM record_vectors
        WHERE tenant = :tenant AND actor = :actor) AS vectors,
    (SELECT coalesce(max(event_seq), 0) FROM event_vectors
        WHERE tenant = :tenant AND actor = :actor) AS event_vectors,
    (SELECT coalesce(max(seq), 0) FROM events WHERE tenant = :tenant AND actor = :actor) AS events,
    (SELECT coalesce(max(rowid), 0) FROM records_fts WHERE records_fts MATCH :match) AS records_fts,
    (SELECT coalesce(max(rowid), 0) FROM events_fts WHERE events_fts MATCH :match) AS events_fts,
    (SELECT count(*) FROM checkpoints WHERE tenant = :tenant AND actor = :actor) AS checkpoints,
    (SELECT count(*) FROM tool_calls WHERE tenant = :tenant AND actor = :actor) AS tool_calls,
    (SELECT count(*) FROM api_requests WHERE tenant = :tenant AND actor = :actor) AS requests,
    (SELECT coalesce(max(version), 0) FROM scope_versions
        WHERE tenant = :tenant AND actor = :actor) AS scope_version
"""
    RECORDS = """
SELECT count(*) FROM records WHERE tenant = :tenant AND actor = :actor AND rowid <= :records
"""
    VECTORS = """
SELECT count(*) FROM record_vectors
WHERE tenant = :tenant AND actor = :actor AND record_rowid <= :vectors
"""
    EVENT_VECTORS = """
SELECT count(*) FROM event_vectors
WHERE tenant = :tenant AND actor = :actor AND event_seq <= :event_vectors
"""
    EVENTS = (
        "SELECT count(*) FROM events WHERE tenant = :tenant AND actor = :actor AND seq <= :events"
    )
    RECORDS_FTS = """
SELECT count(*) FROM records_fts WHERE records_fts MATCH :match AND rowid <= :records_fts
"""
    REQUESTS = "SELECT count(*) FROM api_requests WHERE tenant = :tenant AND actor = :actor"
    EVENTS_FTS = """
SELECT count(*) FROM events_fts WHERE events_fts MATCH :match AND rowid <= :events_fts
"""


class RecordLeftSQL:
    """An erased record's vector and full-text entry, read back (`_record_left`): by its
    id, since a record stored after the erasure's commit takes the erased rowid (SQLite
    gives max(rowid) + 1) with entries of its own; a record whose row the erasure did not
    see (`Found.key` None), by its id and its scope's full-text rows that no record has."""

    VECTOR_AT = "SELECT 1 FROM record_vectors WHERE record_rowid = :key AND id = :record_id"
    VECTOR_IN_SCOPE = """
SELECT 1 FROM record_vectors WHERE tenant = :tenant AND actor = :actor AND id = :record_id
"""
    FULLTEXT_AT = """
SELECT 1 FROM records_fts
WHERE rowid = :key AND NOT EXISTS (SELECT 1 FROM records WHERE rowid = :key)
"""
    FULLTEXT_IN_SCOPE = """
SELECT 1 FROM records_fts
WHERE records_fts MATCH :match
    AND NOT EXISTS (SELECT 1 FROM records r WHERE r.rowid = records_fts.rowid)
"""


class ScopeFiles(Protocol):
    """The vectors SQLite keeps outside its rows (`remem.store.sqlite.search`)."""

    vector_files: VectorFiles | None

    def _drop_scope_vectors(self, tenant: str, actor: str) -> None: ...


class SQLiteErasure:
    """What is SQLite's own in an erasure (`remem.store.flows.erasure.ErasureParts`), over
    its `backend` and the vectors kept outside the rows (`files`)."""

    mark_after_erasing = True
    deletion_sql: DeletionSQL = DeletionLogSQL()

    def __init__(self, backend: SQLiteBackend, files: ScopeFiles) -> None:
        self.backend, self.files = backend, files

    def erasing_actor(self) -> AbstractContextManager[object]:
        """Nothing to hold: the erasure's transaction is the file's write lock."""
        return nullcontext()

    def erase_records(self, db: Tx, tenant: str, found: Sequence[Found]) -> dict[str, int]:
        counts = {"records": 0, "vectors": 0, "fulltext": 0}
        rowids = [f.key for f in found]
        for table, sql in (("vectors", q.DELETE_VECTORS), ("fulltext", q.DELETE_RECORDS_FTS),
                           ("records", q.DELETE_RECORDS)):  # fmt: skip
            for statement, params in self.backend.lists(sql, {}, rowids):
                counts[table] += db.execute(statement, params).rowcount
        return counts

    def erase_event_texts(self, db: Tx, tenant: str, event_ids: Sequence[str]) -> None:
        meta = json.dumps({"forgotten": True})
        for event_id in event_ids:
            key = {"tenant": tenant, "event_id": event_id}
            seq = db.execute(q.EVENT_SEQ, key).fetchone()
            if seq is not None:
                for statement, params in self.backend.lists(q.DELETE_EVENTS_FTS, {}, [seq["seq"]]):
                    db.execute(statement, params)
                db.execute(q.DELETE_EVENT_VECTOR, {"seq": seq["seq"]})
                db.execute(q.ERASE_EVENT_TEXT, {**key, "metadata": meta})

    def verify_record(
        self, tenant: str, record_id: str, found: Found, sources: Sequence[str]
    ) -> dict[str, int]:
        self.files._drop_scope_vectors(tenant, found.actor)
        remaining = self._record_left(tenant, found, list(sources))
        if self.files.vector_files is not None:
            held = self.files.vector_files.holding(tenant, found.actor, {record_id, *sources})
            remaining["vector_files"] = held
        return remaining

    def settle_scope(self, tenant: str, actor: str) -> None:
        self.files._drop_scope_vectors(tenant, actor)

    def erase_actor_indexes(self, db: Tx, tenant: str, actor: str) -> None:
        key = {"tenant": tenant, "actor": actor}
        seqs = [r["seq"] for r in db.execute(q.ACTOR_EVENT_SEQS, key).fetchall()]
        for statement, params in self.backend.lists(q.DELETE_EVENTS_FTS, {}, seqs):
            db.execute(statement, params)

    def erase_actor_events(self, db: Tx, tenant: str, actor: str) -> tuple[int, int]:
        return db.execute(q.DELETE_ACTOR_EVENTS, {"tenant": tenant, "actor": actor}).rowcount, 0

    def mark_actor(self, db: Tx, tenant: str, actor: str) -> dict[str, int]:
        match = f"scope:{scope_token(tenant, actor)}"
        row = db.execute(ActorMarkSQL.MARK, {"tenant": tenant, "actor": actor, "match": match})
        return {name: int(n) for name, n in dict(row.fetchone()).items()}

    def verify_actor(self, tenant: str, actor: str, mark: Mapping[str, int]) -> dict[str, int]:
        self.files._drop_scope_vectors(tenant, actor)
        remaining = self._actor_left(tenant, actor, mark)
        if self.files.vector_files is not None:
            held = self.files.vector_files.holding(tenant, actor, before=mark["scope_version"])
            remaining["vector_files"] = held
        return remaining

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """Make finished erasures reach the file: merge the full-text indexes, empty the WAL.

        FTS5 keeps a deleted row's terms in its index segments until they are
        merged, so both indexes are merged into one segment each ('optimize', or
        'rebuild' once repeated merges have stacked up index levels: see
        `scrub_fts`); the pages that held the old segments are
        freed and, under `secure_delete`, zeroed. The WAL holds the pages as they were before
        the erasure until a checkpoint copies the new ones into the file and
        truncates it. A reader in another connection (another process) can
        hold the WAL open: the checkpoint waits up to `CHECKPOINT_WAIT_MS` for
        it, and what it could not copy is returned as `wal_frames` (0 when
        clean). `vacuum` is for PostgreSQL; SQLite needs no VACUUM for this.
        """
        with self.backend.tx() as db:
            for table in ("records_fts", "events_fts"):
                scrub_fts(db, table)
        if self.backend.path == ":memory:":
            return {"wal_frames": 0}
        with self.backend.lock, sqlite_translated():
            self.backend.conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            try:
                busy, frames, copied = self.backend.conn.execute(q.WAL_TRUNCATE).fetchone()
            finally:
                self.backend.conn.execute(f"PRAGMA busy_timeout = {self.backend.busy_ms}")
        return {"wal_frames": max(int(frames) - int(copied), 1) if busy else 0}

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first (numbered below `before`, when given)."""
        below = LAST_NUMBER if before is None else before
        rows = self.backend.rows(
            q.LIST_DELETIONS, {"tenant": tenant, "limit": limit, "before": below}
        )
        return [_deletion(r) for r in rows]

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None:
        """One deletion job of the tenant, or None."""
        rows = self.backend.rows(DeletionLogSQL.GET_DELETION, {"tenant": tenant, "id": job_id})
        return _deletion(rows[0]) if rows else None

    def _record_left(self, tenant: str, found: Found, sources: list[str]) -> dict[str, int]:
        """What of an erased record is left (its vector and full-text entry as
        `RecordLeftSQL` reads them)."""
        key = {"tenant": tenant, "record_id": found.id}
        at = {**key, "key": found.key, "actor": found.actor,
              "match": f"scope:{scope_token(tenant, found.actor)}"}  # fmt: skip
        m, known = RecordLeftSQL, found.key is not None
        vectors = m.VECTOR_AT if known else m.VECTOR_IN_SCOPE
        fulltext = m.FULLTEXT_AT if known else m.FULLTEXT_IN_SCOPE
        return {
            "event_texts": self._count_of(q.EVENTS_WITH_TEXT, tenant, sources),
            "event_vectors": self._count_of(q.EVENT_VECTORS_FOR, tenant, sources),
            "records": len(self.backend.rows(q.GET_RECORD, key)),
            "vectors": len(self.backend.rows(vectors, at)),
            "fulltext": len(self.backend.rows(fulltext, at)),
            "history_text": len(self.backend.rows(q.HISTORY_WITH_TEXT, key)),
        }

    def _count_of(self, sql: str, tenant: str, keys: Sequence[str]) -> int:
        """A count over a list of keys, summed over the bound parts (none: 0)."""
        bound = self.backend.lists(sql, {"tenant": tenant}, keys)
        return sum(int(self.backend.rows(statement, params)[0][0]) for statement, params in bound)

    def _actor_left(self, tenant: str, actor: str, mark: Mapping[str, int]) -> dict[str, int]:
        key = {"tenant": tenant, "actor": actor}
        marked = {**key, **mark, "match": f"scope:{scope_token(tenant, actor)}"}
        m = ActorMarkSQL

        def count(sql: str, params: Any) -> int:
            return int(self.backend.rows(sql, params)[0][0])

        return {  # no rowid: at most what the erasure left (see `ActorMarkSQL`)
            "requests": min(mark["requests"], count(m.REQUESTS, key)),
            "checkpoints": min(mark["checkpoints"], count(q.COUNT_ACTOR_CHECKPOINTS, key)),
            "tool_calls": min(mark["tool_calls"], count(q.COUNT_ACTOR_TOOL_CALLS, key)),
            "records": count(m.RECORDS, marked),
            "vectors": count(m.VECTORS, marked),
            "event_vectors": count(m.EVENT_VECTORS, marked),
            "events": count(m.EVENTS, marked),
            "fulltext": count(m.RECORDS_FTS, marked) + count(m.EVENTS_FTS, marked),
        }


def fts_levels(db: Tx, table: str) -> int:
    """The number of levels in `table`'s index structure; 128 stands for 128 or more
    (and for a record this code cannot read)."""
    row = db.execute(_STRUCTURE.format(table=table)).fetchone()
    block = bytes(row[0]) if row is not None and row[0] is not None else b""
    return block[4] if len(block) > 4 and block[4] < 0x80 else 128


def scrub_fts(db: Tx, table: str) -> str:
    """Merge away `table`'s deleted terms inside the caller's write transaction:
    'optimize', or 'rebuild' past `FTS_MAX_LEVELS` levels. Returns the command run.

    FTS5 keeps a deleted row's terms in its index segments until they are merged.
    'optimize' merges every segment into one; on the SQLite this runs on (3.40.1;
    the level leak was reported upstream in early 2023) it writes that segment one
    level below the deepest level in use and never drops the emptied levels. New
    rows land on level 0 in small segments that are not promoted next to the big
    one, so every 'optimize' after a write adds a level. The structure record
    refuses more than 2,000 levels: after about 2,000 erasures the table cannot
    even be opened ("database disk image is malformed", SQLITE_CORRUPT_VTAB) while
    `PRAGMA integrity_check` passes. One connection reaches it as surely as two;
    several processes only erase faster.

    So the index is merged with 'optimize' while it has at most `FTS_MAX_LEVELS`
    levels, and rebuilt instead ('rebuild': every row re-indexed from the table's
    own content, the structure written afresh with no levels) when it has more.
    Either way no page keeps an erased term (the old pages are freed and, under
    `secure_delete`, zeroed). 'optimize' of 10,000 records took 18 ms of CPU and
    'rebuild' 112 ms, so a rebuild every `FTS_MAX_LEVELS` erasures adds about 4 ms to
    each. The level count is the first varint after the 4-byte cookie of the
    structure record (row 10 of the `_data` table, see fts5_index.c); one byte
    holds any count below 128, and a larger or unreadable count rebuilds.
    """
    command = "rebuild" if fts_levels(db, table) > FTS_MAX_LEVELS else "optimize"
    db.execute(_COMMAND.format(table=table, command=command))
    return command


def _deletion(r: Any) -> dict[str, Any]:
    """A deletion job's row as JSON-ready values."""
    return {
        "id": r["id"],
        "target": r["target"],
        "key": r["key"],
        "status": r["status"],
        "attempts": r["attempts"],
        "result": json.loads(r["result"]),
        "last_error": r["last_error"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "actor": r["actor"],
        "requested_by": r["requested_by"],
        "requester": r["requester"],
        "reason": r["reason"],
    }
