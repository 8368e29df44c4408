"""Erasure on the PostgreSQL store: what `remem.store.flows.erasure.Erasures` leaves to it.

`PostgresErasure` is PostgreSQL's `ErasureParts`. An erased record's full-text entry
is a column of its row (and its words are rows of their own); a deleted row stays in the
table's files as a dead tuple until VACUUM (`scrub_files(vacuum=True)`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import DictRow

from remem.errors import StoreError
from remem.store.flows.backend import Tx
from remem.store.flows.erasure import DeletionSQL, Found
from remem.store.flows.jobs import LAST_NUMBER
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.postgres.rows import iso, value
from remem.store.postgres.search import SCOPE_DDL_WAIT_S

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed


class DeletionLogSQL:
    """The deletion log's statements beyond `postgres_sql`'s (see `DeletionSQL`)."""

    FINISH_DELETION = """
UPDATE deletions SET status = %(status)s, attempts = %(attempts)s, result = %(result)s,
    last_error = %(error)s, updated_at = %(at)s
WHERE tenant = %(tenant)s AND id = %(id)s
"""
    GET_DELETION = """
SELECT id, target, key, status, attempts, result, last_error, created_at, updated_at, actor,
    requested_by, requester, reason FROM deletions WHERE tenant = %(tenant)s AND id = %(id)s
"""
    INTERRUPTED_DELETIONS = """
SELECT DISTINCT tenant FROM deletions WHERE status = 'running' AND created_at <= %(before)s
ORDER BY tenant
"""


_ACTOR = "tenant = %(tenant)s AND actor = %(actor)s"
# the mark's name of each numbered table of an actor's rows, and the table
_NUMBERED = (("records", "records"), ("events", "events"), ("record_terms", "record_terms"),
             ("event_terms", "event_terms"), ("requests", "api_requests"),
             ("checkpoints", "checkpoints"), ("tool_calls", "tool_calls"))  # fmt: skip


def _at_or_below(table: str, name: str) -> str:
    """How many of the actor's rows of `table` are numbered at or below the mark `name`."""
    return f"SELECT count(*) FROM {table} WHERE {_ACTOR} AND seq <= %({name})s"


class ActorMarkSQL:
    """An actor's rows when an erasure began: their largest `seq` (`_mark_actor`), and the rows at
    or below it (`_verify_actor`). An identity never gives a number twice, so a row
    stored after it began, a fresh start, has a larger one (one numbered before and
    committed after still counts). Vectors have no `seq`: one counts unless the record
    or event it belongs to is such a later row. Checkpoints, tool calls and request ids
    have one since schema 10; a checkpoint saved again keeps its number."""

    MARK = "SELECT " + ", ".join(
        f"(SELECT coalesce(max(seq), 0) FROM {table} WHERE {_ACTOR}) AS {name}"
        for name, table in _NUMBERED
    )
    RECORDS = _at_or_below("records", "records")
    EVENTS = _at_or_below("events", "events")
    VECTORS = """
SELECT count(*) FROM record_vectors v
WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s AND NOT EXISTS (
    SELECT 1 FROM records r WHERE r.tenant = v.tenant AND r.id = v.record_id
        AND r.seq > %(records)s)
"""
    EVENT_VECTORS = """
SELECT count(*) FROM event_vectors v
WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s AND NOT EXISTS (
    SELECT 1 FROM events e WHERE e.tenant = v.tenant AND e.id = v.event_id
        AND e.seq > %(events)s)
"""
    TERMS = (
        _at_or_below("record_terms", "record_terms"),
        _at_or_below("event_terms", "event_terms"),
    )
    REQUESTS = _at_or_below("api_requests", "requests")
    CHECKPOINTS = _at_or_below("checkpoints", "checkpoints")
    TOOL_CALLS = _at_or_below("tool_calls", "tool_calls")


class ScopeIndexes(Protocol):
    """The HNSW indexes of scopes (`remem.store.postgres.search`)."""

    def _drop_scope_indexes(self, db: Cursor, tenant: str, actor: str) -> None: ...

    def _scope_ddl(
        self, wait_s: float
    ) -> AbstractContextManager[psycopg.Connection[DictRow] | None]: ...


class HeldScopes(Protocol):
    """What the store keeps of a scope's rows beside them: decoded records
    (`remem.store.postgres.upkeep.HeldRecords`), term windows
    (`remem.store.postgres.terms.TermWindows`)."""

    def drop_scope(self, tenant: str, actor: str) -> None: ...


class PostgresErasure:
    """What is PostgreSQL's own in an erasure (`remem.store.flows.erasure.ErasureParts`),
    over its `backend`, the scopes' HNSW `indexes` (the row-level-security wall binds
    each transaction to the tenant) and what this process keeps of a scope's rows (`held`:
    decoded records and term windows; an erased scope's are dropped before the erasure
    reads back)."""

    mark_after_erasing = False
    deletion_sql: DeletionSQL = DeletionLogSQL()

    def __init__(
        self, backend: PostgresBackend, indexes: ScopeIndexes, held: Sequence[HeldScopes]
    ) -> None:
        self.backend, self.indexes, self.held = backend, indexes, tuple(held)

    def _drop_held(self, tenant: str, actor: str) -> None:
        for kept in self.held:
            kept.drop_scope(tenant, actor)

    @contextmanager
    def erasing_actor(self) -> Iterator[object]:
        """The lock on scope indexes (`PostgresSearch._scope_ddl`): a scope index being
        built concurrently, which may be the actor's, is finished first, so the erasure's
        transaction drops every index that names the actor, and a build after it finds
        the actor's vectors gone."""
        with self.indexes._scope_ddl(SCOPE_DDL_WAIT_S) as held:
            if held is None:
                raise StoreError(
                    "a scope's vector index is still being built after "
                    f"{SCOPE_DDL_WAIT_S:.0f} s; nothing was erased, retry"
                )
            yield held

    def settle_scope(self, tenant: str, actor: str) -> None:
        """Drop what this process keeps of the scope's rows: PostgreSQL keeps no other
        copy of them outside the database."""
        self._drop_held(tenant, actor)

    def erase_records(self, db: Tx, tenant: str, found: Sequence[Found]) -> dict[str, int]:
        return _delete_records(db, tenant, [f.key for f in found])

    def erase_event_texts(self, db: Tx, tenant: str, event_ids: Sequence[str]) -> None:
        # the event's tsvector is generated from its text, so it empties with it
        for sql in (q.ERASE_EVENT_TEXT, q.DELETE_EVENT_TERMS, q.DELETE_EVENT_VECTORS):
            db.execute(sql, {"tenant": tenant, "keys": list(event_ids)})

    def verify_record(
        self, tenant: str, record_id: str, found: Found, sources: Sequence[str]
    ) -> dict[str, int]:
        self._drop_held(tenant, found.actor)
        return self._record_left(tenant, record_id, list(sources))

    def erase_actor_indexes(self, db: Tx, tenant: str, actor: str) -> None:
        for sql in q.DELETE_ACTOR_TERMS:  # at once, rather than cascading row by row
            db.execute(sql, {"tenant": tenant, "actor": actor})
        assert isinstance(db, psycopg.Cursor)
        self.indexes._drop_scope_indexes(db, tenant, actor)  # their definitions name the actor

    def erase_actor_events(self, db: Tx, tenant: str, actor: str) -> tuple[int, int]:
        deleted = db.execute(q.DELETE_ACTOR_EVENTS, {"tenant": tenant, "actor": actor}).fetchall()
        return len(deleted), sum(1 for r in deleted if r["indexed"])

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """With `vacuum`, VACUUM the tables an erasure touches; see `Store.scrub_files`.

        A deleted row stays in its table's and indexes' files as a dead tuple
        until VACUUM marks its space free for reuse (it does not overwrite the
        bytes at once; new rows do, over time), and in the WAL until the server
        recycles its segments; backups and replicas keep their copies. VACUUM
        reads each whole table, so it is off unless asked for.
        """
        if not vacuum:
            return {}
        try:
            with self.backend.pool.connection() as conn:  # autocommit: VACUUM runs outside a block
                for table in q.ERASED_TABLES:
                    conn.execute(pg_sql.SQL("VACUUM {}").format(pg_sql.Identifier(table)))
        except psycopg.Error as exc:
            raise self.backend.translate(exc) from exc
        return {}

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first (numbered below `before`, when given)."""
        params = {
            "tenant": tenant,
            "limit": limit,
            "before": LAST_NUMBER if before is None else before,
        }
        rows = self.backend.rows(tenant, q.LIST_DELETIONS, params)
        return [_deletion(r) for r in rows]

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None:
        """One deletion job of the tenant, or None."""
        params = {"tenant": tenant, "id": job_id}
        rows = self.backend.rows(tenant, DeletionLogSQL.GET_DELETION, params)
        return _deletion(rows[0]) if rows else None

    def _record_left(self, tenant: str, record_id: str, sources: list[str]) -> dict[str, int]:
        with self.backend.tx(tenant) as cur:
            key = {"tenant": tenant, "record_id": record_id, "keys": sources}

            def count(sql: str) -> int:
                return int(value(cur.execute(sql, key).fetchall()))

            records = count(q.COUNT_RECORD)
            terms = count(q.COUNT_RECORD_TERMS)
            return {
                "event_texts": count(q.EVENTS_WITH_TEXT),
                "event_vectors": count(q.COUNT_EVENT_VECTORS),
                "records": records,
                "vectors": count(q.COUNT_RECORD_VECTORS),
                # the tsvector is a column of the record's row; its words are rows too
                "fulltext": records + terms + count(q.COUNT_EVENT_TERMS),
                "history_text": count(q.HISTORY_WITH_TEXT),
            }

    def mark_actor(self, db: Tx, tenant: str, actor: str) -> dict[str, int]:
        row = db.execute(ActorMarkSQL.MARK, {"tenant": tenant, "actor": actor}).fetchone()
        return {name: int(n) for name, n in dict(row).items()}

    def verify_actor(self, tenant: str, actor: str, mark: Mapping[str, int]) -> dict[str, int]:
        self._drop_held(tenant, actor)
        m = ActorMarkSQL
        with self.backend.tx(tenant) as cur:

            def count(sql: str) -> int:
                named = {"tenant": tenant, "actor": actor, **mark}
                return int(value(cur.execute(sql, named).fetchall()))

            records = count(m.RECORDS)
            events = count(m.EVENTS)
            return {
                "records": records,
                "vectors": count(m.VECTORS),
                "event_vectors": count(m.EVENT_VECTORS),
                "events": events,
                # tsvectors are columns of those rows; their words are rows too
                "fulltext": records + events + sum(count(c) for c in m.TERMS),
                "requests": count(m.REQUESTS),
                "checkpoints": count(m.CHECKPOINTS),
                "tool_calls": count(m.TOOL_CALLS),
            }


def _delete_records(cur: Tx, tenant: str, ids: list[str]) -> dict[str, int]:
    key = {"tenant": tenant, "keys": ids}
    vectors = cur.execute(q.DELETE_VECTORS, key).rowcount
    deleted = cur.execute(q.DELETE_RECORDS, key).fetchall()
    return {
        "records": len(deleted),
        "vectors": vectors,
        "fulltext": sum(1 for r in deleted if r["indexed"]),
    }


def _deletion(r: Any) -> dict[str, Any]:
    """A deletion job's row as JSON-ready values."""
    return {**r, "created_at": iso(r["created_at"]), "updated_at": iso(r["updated_at"])}
