"""Documents on the SQLite store: chunk words in FTS5, chunk vectors searched in memory.

The backend's part of `remem.store.flows.documents.DocumentIndex`. Words go into
`document_chunks_fts` exactly as a record's go into `records_fts`: every word
prefixed by its scope's token (`scope_token` of the tenant and the chunk's
scope key, which no actor name can equal), so a search matches one scope's
rows only. Vectors are float16 blobs beside each chunk, searched with the
records' `ScopeVectors` over the scopes a principal may read; they are read
from the database at each search (a corpus is not cached in memory, so a
removal leaves no copy behind).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from remem.store.flows.backend import Tx
from remem.store.flows.documents import DocumentIndex, StoredChunk, Vector
from remem.store.roles import Hit
from remem.store.sqlite.erasure import scrub_fts
from remem.store.sqlite.sql import fts_query, scope_token, scoped_text
from remem.store.sqlite.vectors.index import ScopeVectors

INSERT_CHUNK = """
INSERT INTO document_chunks (tenant, id, document_id, scope_key, ordinal, position, span_start,
                             span_end, text, chunk_hash, flags, model, vec)
VALUES (:tenant, :id, :document_id, :scope_key, :ordinal, :position, :span_start, :span_end,
        :text, :chunk_hash, :flags, :model, :vec)
RETURNING key
"""
INSERT_FTS = "INSERT INTO document_chunks_fts (rowid, text, scope) VALUES (:key, :text, :scope)"
CHUNK_KEYS = "SELECT key FROM document_chunks WHERE tenant = :tenant AND id IN ({keys})"
DELETE_FTS = "DELETE FROM document_chunks_fts WHERE rowid IN ({keys})"
COUNT_FTS = "SELECT count(*) AS n FROM document_chunks_fts WHERE rowid IN ({keys})"
SEARCH = """
SELECT c.id, bm25(document_chunks_fts) AS rank
FROM document_chunks_fts f JOIN document_chunks c ON c.key = f.rowid
WHERE document_chunks_fts MATCH :match AND c.tenant = :tenant AND c.scope_key = :scope_key
ORDER BY rank LIMIT :limit
"""
VECTORS = """
SELECT id, vec FROM document_chunks
WHERE tenant = :tenant AND model = :model AND vec IS NOT NULL AND scope_key IN ({keys})
"""


def doc_token(tenant: str, scope_key: str) -> str:
    """The full-text token of one document scope (no actor's token can equal it: actor
    names hold no spaces)."""
    return scope_token(tenant, f"documents {scope_key}")


class SQLiteDocuments(DocumentIndex):
    """`DocumentIndex` on one SQLite file."""

    dialect = "sqlite"

    def _insert_chunk_sql(self) -> str:
        return INSERT_CHUNK

    def _vec_param(self, vec: Vector | None) -> object:
        return None if vec is None else np.asarray(vec, np.float16).tobytes()

    def _index(self, db: Tx, tenant: str, added: Sequence[tuple[Any, StoredChunk]]) -> None:
        db.executemany(INSERT_FTS, [
            {"key": key, "scope": (token := doc_token(tenant, c.scope_key)),
             "text": scoped_text(token, c.text)}
            for key, c in added
        ])  # fmt: skip

    def _unindex(self, db: Tx, tenant: str, chunk_ids: Sequence[str]) -> list[Any]:
        keys: list[Any] = []
        for sql, bound in self.backend.lists(CHUNK_KEYS, {"tenant": tenant}, chunk_ids):
            keys += [r["key"] for r in db.execute(sql, bound).fetchall()]
        for sql, bound in self.backend.lists(DELETE_FTS, {}, keys):
            db.execute(sql, bound)
        return keys

    def _index_count(self, tenant: str, keys: Sequence[Any]) -> int:
        return sum(int(self.backend.read(tenant, sql, bound)[0]["n"])
                   for sql, bound in self.backend.lists(COUNT_FTS, {}, keys))  # fmt: skip

    def _after_removal(self) -> None:
        with self.backend.transaction(None) as db:
            scrub_fts(db, "document_chunks_fts")

    def lexical(self, tenant: str, scope_keys: Sequence[str], query: str, limit: int) -> list[Hit]:
        """BM25 over each scope's chunks, merged best first."""
        hits: list[Hit] = []
        for key in scope_keys:
            match = fts_query(doc_token(tenant, key), query)
            if match is None or limit <= 0:
                continue
            params = {"match": match, "tenant": tenant, "scope_key": key, "limit": limit}
            hits += [
                Hit(r["id"], -float(r["rank"])) for r in self.backend.read(tenant, SEARCH, params)
            ]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:limit]

    def nearest(
        self, tenant: str, scope_keys: Sequence[str], model: str, query: Vector, limit: int
    ) -> list[tuple[str, float]]:
        """The chunks nearest to `query`, searched as a record scope's vectors are."""
        ids: list[str] = []
        rows: list[Vector] = []
        for sql, bound in self.backend.lists(
            VECTORS, {"tenant": tenant, "model": model}, scope_keys
        ):
            for r in self.backend.read(tenant, sql, bound):
                ids.append(r["id"])
                rows.append(np.frombuffer(r["vec"], dtype=np.float16).astype(np.float32))
        if not ids or limit <= 0:
            return []
        matrix = np.stack(rows)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        n = len(ids)
        vectors = ScopeVectors(
            ids=tuple(ids), matrix=matrix.astype(np.float32), active=np.ones(n, np.bool_),
            valid_from=np.zeros(n), valid_until=np.full(n, np.inf), model=model,
        )  # fmt: skip
        return vectors.search(np.asarray(query, np.float32), limit, 0.0, include_invalid=False)
