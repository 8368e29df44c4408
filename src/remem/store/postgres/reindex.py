"""Re-embedding on the PostgreSQL store: the backend's part of
`remem.store.flows.reindex.VectorReindex`.

New vectors go to tables of their own (an untyped `vector` column, as the old ones), and
are copied over the old ones at the switch. The model's HNSW indexes
(`remem.store.postgres.vectors.sql.VectorIndex`, partial to a model and dimension) are
built after the switch, once each and concurrently (writers of every tenant go on):
kept up row by row inside the switch, the index cost about 2 ms a vector and held the
switch's locks that much longer (3,000 records: a 6.7 s switch). Until they are built,
searches of the model scan exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import psycopg
from psycopg import sql as pg_sql

from remem.store.flows.documents import pg_named
from remem.store.flows.reindex import KindSpec, Vector, VectorReindex
from remem.store.postgres import sql as q
from remem.store.postgres.search import HNSW_MAX_DIMS

if TYPE_CHECKING:
    from remem.store.postgres.search import PostgresSearch

log = logging.getLogger("remem.store.postgres.store")


class PostgresReindex(VectorReindex):
    """`VectorReindex` on PostgreSQL."""

    CHANGE_LOCK: ClassVar[str | None] = q.VECTOR_INDEX_CHANGE_LOCK
    SPECS: ClassVar[dict[str, KindSpec]] = {
        "records": KindSpec(
            "record_vectors", "record_id",
            "record_vectors v JOIN records r ON r.tenant = v.tenant AND r.id = v.record_id",
            "reindex_record_vectors", "record_id",
        ),
        "events": KindSpec(
            "event_vectors", "event_id",
            "event_vectors v JOIN events e ON e.tenant = v.tenant AND e.id = v.event_id",
            "reindex_event_vectors", "event_id",
        ),
        "chunks": KindSpec(
            "document_chunks", "id", "document_chunks v", "reindex_chunk_vectors", "chunk_id",
            where=" AND v.vec IS NOT NULL",
        ),
    }  # fmt: skip
    FIRST_KEY = ""  # ids are text; every id sorts after ''
    ACTOR_LEFT = """
SELECT (SELECT count(*) FROM reindex_record_vectors n
        JOIN record_vectors v ON v.tenant = n.tenant AND v.record_id = n.record_id
        WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s)
     + (SELECT count(*) FROM reindex_event_vectors n
        JOIN event_vectors v ON v.tenant = n.tenant AND v.event_id = n.event_id
        WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s) AS n
"""
    s: PostgresSearch

    def _sql(self, sql: str) -> str:
        return sql if "%(" in sql else pg_named(sql)

    def _vec_param(self, vec: Vector) -> object:
        return np.asarray(vec, np.float32)

    def _switched(self, tenant: str, actors: Sequence[str], model: str, dim: int) -> None:
        for table in ("record_vectors", "event_vectors"):
            ix = q.VectorIndex(table, model, dim)
            if dim <= HNSW_MAX_DIMS and not self.s._index_exists(ix):
                self._build_concurrently(ix)

    def _build_concurrently(self, ix: q.VectorIndex) -> None:
        """CREATE INDEX CONCURRENTLY for the model's index: writers of every tenant go on
        while it is built (a plain build locks them out). A failed build leaves an invalid
        index, dropped here, so that a later write builds it (`_ensure_index`)."""
        drop = pg_sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(pg_sql.Identifier(ix.name))
        try:
            with self.s.backend.pool.connection() as conn:  # autocommit: outside a transaction
                try:
                    conn.execute(q.create_vector_index(ix, concurrently=True))
                except psycopg.Error as exc:
                    log.warning("no HNSW index for %s after its reindex: %s", ix.model, exc)
                    conn.execute(drop)
                    return
        except psycopg.Error as exc:  # the drop: the next build finds it invalid
            log.warning("an invalid HNSW index for %s is left: %s", ix.model, exc)
            return
        self.s._indexes[ix] = None
