"""Documents on the PostgreSQL store: chunk words as term rows, vectors scanned exactly.

The backend's part of `remem.store.flows.documents.DocumentIndex`. A chunk's
words become (tenant, actor, term, seq) rows of `document_chunk_terms` with the
chunk's scope key as the actor, and are ranked by the records' own lexical
query (`postgres_sql._lexical`, the btree that row-level security lets the
planner use). Vectors live in the chunk's untyped `vector` column and are
scanned exactly (`<=>`) within the scopes a principal may read; no HNSW index
is built for chunks yet (a corpus of a few thousand chunks scans in
milliseconds). Every statement runs in a transaction bound to the tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from remem.store.flows.backend import Tx
from remem.store.flows.documents import SQL, DocumentIndex, StoredChunk, Vector, pg_named
from remem.store.postgres import sql as q
from remem.store.roles import Hit

INSERT_CHUNK = """
INSERT INTO document_chunks (tenant, id, document_id, scope_key, ordinal, position, span_start,
                             span_end, text, chunk_hash, flags, model, vec)
VALUES (%(tenant)s, %(id)s, %(document_id)s, %(scope_key)s, %(ordinal)s, %(position)s,
        %(span_start)s, %(span_end)s, %(text)s, %(chunk_hash)s, %(flags)s, %(model)s, %(vec)s)
RETURNING id AS key
"""
INSERT_TERMS = """
INSERT INTO document_chunk_terms (tenant, actor, term, seq, chunk_id, weight)
SELECT c.tenant, c.scope_key, t.term, c.seq, c.id, remem_term_rank(c.tsv, t.term)
FROM document_chunks c, unnest(tsvector_to_array(c.tsv)) AS t(term)
WHERE c.tenant = %(tenant)s AND c.id = ANY(%(keys)s::text[])
"""
DELETE_TERMS = """
DELETE FROM document_chunk_terms WHERE tenant = %(tenant)s AND chunk_id = ANY(%(keys)s::text[])
"""
COUNT_TERMS = """
SELECT count(*) AS n FROM document_chunk_terms
WHERE tenant = %(tenant)s AND chunk_id = ANY(%(keys)s::text[])
"""
NEAREST = """
SELECT id, 1 - (vec <=> %(query)s::vector) AS cosine FROM document_chunks
WHERE tenant = %(tenant)s AND scope_key = ANY(%(keys)s::text[]) AND model = %(model)s
  AND vec IS NOT NULL AND vector_dims(vec) = %(dims)s
ORDER BY vec <=> %(query)s::vector, id LIMIT %(limit)s
"""
_LIST_SQL = {
    name: pg_named(sql).replace("IN ({keys})", "= ANY(%(keys)s::text[])")
    for name, sql in SQL.items()
}


class PostgresDocuments(DocumentIndex):
    """`DocumentIndex` on a PostgreSQL database."""

    dialect = "postgres"

    def _sql(self, name: str) -> str:
        return _LIST_SQL[name]

    def _insert_chunk_sql(self) -> str:
        return INSERT_CHUNK

    def _vec_param(self, vec: Vector | None) -> object:
        return None if vec is None else np.asarray(vec, np.float32)

    def _after_removal(self) -> None:
        """Nothing: a removed chunk's rows are dead tuples until VACUUM
        (`Erasure.scrub_files(vacuum=True)`)."""

    def _index(self, db: Tx, tenant: str, added: Sequence[tuple[Any, StoredChunk]]) -> None:
        for sql, bound in self.backend.lists(
            INSERT_TERMS, {"tenant": tenant}, [c.id for _, c in added]
        ):
            db.execute(sql, bound)

    def _unindex(self, db: Tx, tenant: str, chunk_ids: Sequence[str]) -> list[Any]:
        for sql, bound in self.backend.lists(DELETE_TERMS, {"tenant": tenant}, chunk_ids):
            db.execute(sql, bound)
        return list(chunk_ids)

    def _index_count(self, tenant: str, keys: Sequence[Any]) -> int:
        bound = self.backend.lists(COUNT_TERMS, {"tenant": tenant}, keys)
        return sum(int(self.backend.read(tenant, sql, params)[0]["n"]) for sql, params in bound)

    def lexical(self, tenant: str, scope_keys: Sequence[str], query: str, limit: int) -> list[Hit]:
        """ts_rank over each scope's newest matching chunks (the records' lexical query)."""
        found = q.words(query)
        if not found or limit <= 0:
            return []
        sql = q._lexical(
            "document_chunks", "document_chunk_terms", "chunk_id", "r.tenant = %(tenant)s"
        )
        hits: list[Hit] = []
        for key in scope_keys:  # a scope key stands where a record's actor does
            params = {"words": " ".join(found), "tenant": tenant, "actor": key, "limit": limit}
            hits += [
                Hit(r["id"], float(r["score"])) for r in self.backend.read(tenant, sql, params)
            ]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:limit]

    def nearest(
        self, tenant: str, scope_keys: Sequence[str], model: str, query: Vector, limit: int
    ) -> list[tuple[str, float]]:
        """The chunks nearest to `query`, by an exact scan of these scopes."""
        if not scope_keys or limit <= 0:
            return []
        vec = np.asarray(query, np.float32)
        params = {"tenant": tenant, "keys": list(scope_keys), "model": model, "query": vec,
                  "dims": len(query), "limit": limit}  # fmt: skip
        return [(r["id"], float(r["cosine"])) for r in self.backend.read(tenant, NEAREST, params)]
