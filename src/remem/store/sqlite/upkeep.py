"""What the SQLite store keeps beside its rows as they are written: FTS5 rows of events and
records, record vectors (float16 blobs with their status and validity, searched in
memory), the scope versions its caches are keyed on, and the events around others
(`remem.store.flows.events.EventUpkeep`, `remem.store.flows.records.RecordUpkeep`);
and the decoded records it keeps while the file is unchanged (`HeldRecords`).

Every word of an FTS5 row is prefixed by its scope's token (`scope_token`), so a
search matches one scope's rows only. The events around others are read one chunk
of 50 events at a time (one UNION part per event and side).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from remem.model import Event, Record
from remem.store.flows.backend import CHUNK, Row, Tx, chunks
from remem.store.flows.records import RECORDS_HELD, Reader, Vector
from remem.store.sqlite import sql as q
from remem.store.sqlite.backend import SQLiteBackend
from remem.store.sqlite.sql import scope_token, scoped_text
from remem.store.values import StatusChange, Write


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
        """The rows around these events, one chunk of 50 events to a statement."""
        rows: list[Row] = []
        for chunk in chunks(list(event_ids), 50):  # one UNION part per event and side
            ((sql, bound),) = self.backend.lists(q.EVENT_PLACES, {"tenant": tenant}, chunk)
            places = self.backend.rows(sql, bound)
            if places:
                params = q.events_near_params(tenant, reach, places)
                rows.extend(self.backend.rows(q.events_near(len(places)), params))
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
