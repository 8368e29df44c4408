"""Documents on a store: source records, their chunks, and the chunks' indexes.

The role a store offers as `documents` (`remem.store.roles.DocumentState`). The
flows here are written once over the store's `Backend` (its transactions and
how values travel); a backend's subclass (`remem.store.sqlite.documents`,
`remem.store.postgres.documents`) adds only how chunks enter and leave its word
index and how its vectors are searched. Every read names the tenant and the
scope keys it may see ('tenant', 'actor:<name>', 'namespace:<name>'): the
principal's access domain is a condition of the query, never a filter after it.

A document's write is one transaction: the document row, the chunks that are
new (with their words and vector), the kept chunks moved to their new place,
and the chunks gone. Removal deletes the document, its chunks, their words and
vectors, leaves a content-free tombstone (kind 'document' in `tombstones`), and
reads every one of them back: the report says what was deleted and whether
nothing remains.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.errors import ConflictError
from remem.store.flows.backend import Backend, Row, Tx
from remem.store.flows.vector_fit import vectors_fit
from remem.store.roles import ForgetReport, Hit

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document's source record as stored (its text lives in its chunks)."""

    id: str
    tenant: str
    scope_key: str
    source_key: str
    title: str
    source_uri: str | None
    format: str
    content_hash: str
    version: int
    version_id: str
    history: tuple[dict[str, Any], ...]
    sensitivity: str
    flags: tuple[str, ...]
    chars: int
    created_at: datetime
    updated_at: datetime
    chunks: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The document as JSON: every field (its text lives in its chunks)."""
        kind, _, name = self.scope_key.partition(":")
        return {
            "id": self.id,
            "scope": self.scope_key,
            "scope_kind": kind,
            "scope_name": name or None,
            "title": self.title,
            "source_uri": self.source_uri,
            "format": self.format,
            "content_hash": self.content_hash,
            "version": self.version,
            "version_id": self.version_id,
            "history": list(self.history),
            "sensitivity": self.sensitivity,
            "flags": list(self.flags),
            "chars": self.chars,
            "chunks": self.chunks,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """One chunk of a document: its place in the normalised text and what it says."""

    id: str
    document_id: str
    scope_key: str
    ordinal: int
    position: dict[str, Any]
    start: int
    end: int
    text: str
    chunk_hash: str
    flags: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The chunk as JSON: its place (position, span) and its text."""
        return {
            "id": self.id,
            "document_id": self.document_id,
            "ordinal": self.ordinal,
            "position": self.position,
            "span": [self.start, self.end],
            "text": self.text,
            "chunk_hash": self.chunk_hash,
            "flags": list(self.flags),
        }


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    """One version of a document, applied in one transaction.

    `new` chunks are inserted and indexed (with `vectors`, made by `model`, one
    per chunk or None); `moved` are stored chunks kept as they are but for their
    ordinal, position and span; `dropped` are the ids of chunks no longer in it.
    """

    document: StoredDocument
    new: tuple[StoredChunk, ...] = ()
    vectors: tuple[Vector | None, ...] = ()
    model: str = ""
    moved: tuple[StoredChunk, ...] = ()
    dropped: tuple[str, ...] = ()
    replaces: bool = False  # the document row is stored already (a new version)
    previous_version_id: str | None = None  # the version this one was diffed against


_DOC_COLUMNS = (
    "id, tenant, scope_key, source_key, title, source_uri, format, content_hash, version, "
    "version_id, history, sensitivity, flags, chars, created_at, updated_at"
)
_CHUNK_COLUMNS = (
    "id, document_id, scope_key, ordinal, position, span_start, span_end, text, chunk_hash, flags"
)
_CHUNK_COUNT = "(SELECT count(*) FROM document_chunks c WHERE c.tenant = d.tenant AND " \
    "c.document_id = d.id) AS chunk_count"  # fmt: skip

SQL = {
    # the models whose vectors a tenant holds (`remem.memory.embedder`)
    "note_vector_model": "INSERT INTO vector_models (tenant, model, dim) "
    "VALUES (:tenant, :model, :dim) ON CONFLICT DO NOTHING",
    "insert_doc": f"INSERT INTO documents ({_DOC_COLUMNS}) VALUES (:id, :tenant, :scope_key, "
    ":source_key, :title, :source_uri, :format, :content_hash, :version, :version_id, :history, "
    ":sensitivity, :flags, :chars, :created_at, :updated_at)",
    "update_doc": "UPDATE documents SET title = :title, source_uri = :source_uri, format = "
    ":format, content_hash = :content_hash, version = :version, version_id = :version_id, "
    "history = :history, sensitivity = :sensitivity, flags = :flags, chars = :chars, "
    "updated_at = :updated_at WHERE tenant = :tenant AND id = :id "
    "AND version_id = :previous_version_id",
    "get_doc": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant AND id = :id",
    "find_doc": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant AND scope_key = :scope_key AND source_key = :source_key",
    "list_docs": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant AND scope_key IN ({keys}) ORDER BY updated_at DESC, id LIMIT :limit",
    "list_all_docs": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant ORDER BY updated_at DESC, id LIMIT :limit",
    # a keyset page: after the document at (after_at, after_id) in the order above
    "page_docs": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant AND scope_key IN ({keys}) AND (updated_at < :after_at OR "
    "(updated_at = :after_at AND id > :after_id)) ORDER BY updated_at DESC, id LIMIT :limit",
    "page_all_docs": f"SELECT {_DOC_COLUMNS}, {_CHUNK_COUNT} FROM documents d "
    "WHERE tenant = :tenant AND (updated_at < :after_at OR (updated_at = :after_at AND "
    "id > :after_id)) ORDER BY updated_at DESC, id LIMIT :limit",
    "chunks_of": f"SELECT {_CHUNK_COLUMNS} FROM document_chunks "
    "WHERE tenant = :tenant AND document_id = :document_id ORDER BY ordinal",
    "chunks_by_id": f"SELECT {_CHUNK_COLUMNS} FROM document_chunks "
    "WHERE tenant = :tenant AND id IN ({keys})",
    "docs_by_id": f"SELECT {_DOC_COLUMNS}, 0 AS chunk_count FROM documents d "
    "WHERE tenant = :tenant AND id IN ({keys})",
    "move_chunk": "UPDATE document_chunks SET ordinal = :ordinal, position = :position, "
    "span_start = :span_start, span_end = :span_end WHERE tenant = :tenant AND id = :id",
    "delete_chunks": "DELETE FROM document_chunks WHERE tenant = :tenant AND id IN ({keys})",
    "delete_doc": "DELETE FROM documents WHERE tenant = :tenant AND id = :id",
    "count_doc": "SELECT count(*) AS n FROM documents WHERE tenant = :tenant AND id = :id",
    "count_chunks": "SELECT count(*) AS n, count(vec) AS v FROM document_chunks "
    "WHERE tenant = :tenant AND document_id = :id",
    "chunk_ids": "SELECT id FROM document_chunks WHERE tenant = :tenant AND document_id = :id",
    "tombstone": "INSERT INTO tombstones (tenant, kind, key, created_at) VALUES "
    "(:tenant, 'document', :id, :at) ON CONFLICT (tenant, kind, key) DO UPDATE SET "
    "created_at = excluded.created_at",
    "removed_at": "SELECT created_at FROM tombstones WHERE tenant = :tenant AND "
    "kind = 'document' AND key = :id",
    "scope_docs": "SELECT id FROM documents WHERE tenant = :tenant AND scope_key = :scope_key "
    "ORDER BY created_at, id",
    # chunks written without a vector (an embeddings server down: `remem.memory.backfill`)
    "unembedded_chunks": "SELECT id, text FROM document_chunks WHERE tenant = :tenant "
    "AND id > :after AND vec IS NULL ORDER BY id LIMIT :limit",
    "late_chunk_vector": "UPDATE document_chunks SET model = :model, vec = :vec "
    "WHERE tenant = :tenant AND id = :id AND vec IS NULL",
}


def pg_named(sql: str) -> str:
    """`:name` parameters as PostgreSQL's `%(name)s` (no `::` casts appear in this SQL)."""
    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", sql)


class DocumentIndex(ABC):
    """The documents role of one store; a backend subclass supplies its word and vector
    indexes (`_index`, `_unindex`, `_index_count`, `lexical`, `nearest`)."""

    dialect = ""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # -- the backend's part ----------------------------------------------------------

    def _sql(self, name: str) -> str:
        return SQL[name]

    @abstractmethod
    def _insert_chunk_sql(self) -> str: ...

    @abstractmethod
    def _vec_param(self, vec: Vector | None) -> object: ...

    @abstractmethod
    def _index(self, db: Tx, tenant: str, added: Sequence[tuple[Any, StoredChunk]]) -> None:
        """Put new chunks (each with the key its insert returned) into the word index."""
        ...

    @abstractmethod
    def _unindex(self, db: Tx, tenant: str, chunk_ids: Sequence[str]) -> list[Any]:
        """Take chunks out of the word index before their rows go; return the keys of
        the index entries taken out (SQLite: FTS5 rowids; PostgreSQL: chunk ids)."""
        ...

    @abstractmethod
    def _index_count(self, tenant: str, keys: Sequence[Any]) -> int:
        """How many word-index entries these keys still have (0 after a removal)."""
        ...

    @abstractmethod
    def _after_removal(self) -> None:
        """Make a removal reach the index's storage (SQLite merges its FTS5 segments)."""
        ...

    @abstractmethod
    def lexical(self, tenant: str, scope_keys: Sequence[str], query: str, limit: int) -> list[Hit]:
        """Word search (BM25 / ts_rank) over the chunks of these scopes, best first."""
        ...

    @abstractmethod
    def nearest(
        self, tenant: str, scope_keys: Sequence[str], model: str, query: Vector, limit: int
    ) -> list[tuple[str, float]]:
        """Ids and cosines of the chunks of these scopes (embedded by `model`) nearest
        to `query`, best first."""
        ...

    # -- reads -----------------------------------------------------------------------

    def _read(self, tenant: str, name: str, params: Mapping[str, Any]) -> Sequence[Row]:
        return self.backend.read(tenant, self._sql(name), params)

    def _read_list(
        self, tenant: str, name: str, params: Mapping[str, Any], keys: Sequence[Any]
    ) -> Iterator[Row]:
        if not keys:
            return
        for sql, bound in self.backend.lists(self._sql(name), params, keys):
            yield from self.backend.read(tenant, sql, bound)

    def get(self, tenant: str, document_id: str) -> StoredDocument | None:
        """One document of the tenant, or None."""
        rows = self._read(tenant, "get_doc", {"tenant": tenant, "id": document_id})
        return self._document(rows[0]) if rows else None

    def find(self, tenant: str, scope_key: str, source_key: str) -> StoredDocument | None:
        """The document a scope knows by `source_key` (its URI, or its title), or None."""
        params = {"tenant": tenant, "scope_key": scope_key, "source_key": source_key}
        rows = self._read(tenant, "find_doc", params)
        return self._document(rows[0]) if rows else None

    def listing(
        self,
        tenant: str,
        scope_keys: Sequence[str] | None,
        limit: int,
        after: tuple[datetime, str] | None = None,
    ) -> list[StoredDocument]:
        """The documents of these scopes (None: every scope), most recently changed first
        (then by id), after the one at `after` (its updated_at and id: a keyset page)."""
        params: dict[str, Any] = {"tenant": tenant, "limit": limit}
        if after is not None:
            params |= {"after_at": self.backend.at(after[0]), "after_id": after[1]}
        name = "list" if after is None else "page"
        if scope_keys is None:
            rows = self._read(tenant, f"{name}_all_docs", params)
            return [self._document(r) for r in rows]
        docs = [
            self._document(r) for r in self._read_list(tenant, f"{name}_docs", params, scope_keys)
        ]
        docs.sort(key=lambda d: d.id)  # stable: by id within one updated_at
        docs.sort(key=lambda d: d.updated_at, reverse=True)
        return docs[:limit]

    def chunks(self, tenant: str, document_id: str) -> list[StoredChunk]:
        """A document's chunks in order."""
        rows = self._read(tenant, "chunks_of", {"tenant": tenant, "document_id": document_id})
        return [self._chunk(r) for r in rows]

    def unembedded(self, tenant: str, limit: int, after: str = "") -> list[tuple[str, str]]:
        """Up to `limit` chunks (id, text) written without a vector, by id, after `after`."""
        params = {"tenant": tenant, "limit": limit, "after": after}
        rows = self._read(tenant, "unembedded_chunks", params)
        return [(str(r["id"]), str(r["text"])) for r in rows]

    def add_vectors(self, tenant: str, vectors: Sequence[tuple[str, Vector]], model: str) -> int:
        """Store late vectors (made by `model`) of chunks that still have none; how many."""
        stored = 0
        with self.backend.transaction(tenant) as db:
            dims = {len(v) for _, v in vectors}
            if not vectors or not vectors_fit(db, self.backend.vector_fit_sql, tenant, model, dims):
                return 0  # the index is another model's now: left for its catch-up
            for chunk_id, vec in vectors:
                params = {"tenant": tenant, "id": chunk_id, "model": model,
                          "vec": self._vec_param(vec)}  # fmt: skip
                stored += db.execute(self._sql("late_chunk_vector"), params).rowcount
            for dim in sorted({len(v) for _, v in vectors}) if stored else ():
                db.execute(self._sql("note_vector_model"),
                           {"tenant": tenant, "model": model, "dim": dim})  # fmt: skip
        return stored

    def chunks_by_id(
        self, tenant: str, ids: Sequence[str]
    ) -> list[tuple[StoredChunk, StoredDocument]]:
        """These chunks with their documents (a chunk gone meanwhile is left out)."""
        scope = {"tenant": tenant}
        found = [self._chunk(r) for r in self._read_list(tenant, "chunks_by_id", scope, ids)]
        doc_ids = sorted({c.document_id for c in found})
        docs = {
            r["id"]: self._document(r)
            for r in self._read_list(tenant, "docs_by_id", scope, doc_ids)
        }
        return [(c, docs[c.document_id]) for c in found if c.document_id in docs]

    def scope_documents(self, tenant: str, scope_key: str) -> list[str]:
        """The ids of every document of one scope (an actor's, for export and erasure)."""
        rows = self._read(tenant, "scope_docs", {"tenant": tenant, "scope_key": scope_key})
        return [r["id"] for r in rows]

    def removed_at(self, tenant: str, document_id: str) -> datetime | None:
        """When a removed document was removed (its tombstone), or None."""
        rows = self._read(tenant, "removed_at", {"tenant": tenant, "id": document_id})
        return self.backend.time(rows[0]["created_at"]) if rows else None

    # -- writes ----------------------------------------------------------------------

    def apply(self, write: DocumentWrite) -> None:
        """Store one version of a document in one transaction (see `DocumentWrite`)."""
        doc = write.document
        tenant = doc.tenant
        with self.backend.transaction(tenant) as db:
            if write.replaces:
                # only over the version it was diffed against: a writer that stored
                # another version (or removed the document) meanwhile wins, and this
                # write is refused whole, so no version mixes two writers' chunks
                params = {**self._doc_params(doc), "previous_version_id": write.previous_version_id}
                if db.execute(self._sql("update_doc"), params).rowcount != 1:
                    raise ConflictError(
                        f"document {doc.id} changed while this version was prepared; retry"
                    )
            else:
                db.execute(self._sql("insert_doc"), self._doc_params(doc))
            if write.dropped:
                self._unindex(db, tenant, write.dropped)
                for sql, bound in self.backend.lists(self._sql("delete_chunks"), {"tenant": tenant},
                                                write.dropped):  # fmt: skip
                    db.execute(sql, bound)
            for c in write.moved:
                db.execute(self._sql("move_chunk"), {
                    "tenant": tenant, "id": c.id, "ordinal": c.ordinal,
                    "position": self.backend.json_param(c.position),
                    "span_start": c.start, "span_end": c.end,
                })  # fmt: skip
            if write.new:
                vectors = write.vectors or (None,) * len(write.new)
                dims = {len(v) for v in vectors if v is not None}
                if dims and not vectors_fit(
                    db, self.backend.vector_fit_sql, tenant, write.model, dims
                ):
                    vectors = (None,) * len(write.new)  # left for the catch-up
                rows = [self._chunk_params(tenant, c, v, write.model)
                        for c, v in zip(write.new, vectors, strict=True)]  # fmt: skip
                keys = self.backend.each(db, self._insert_chunk_sql(), rows)
                for dim in sorted({len(v) for v in vectors if v is not None}):
                    db.execute(self._sql("note_vector_model"),
                               {"tenant": tenant, "model": write.model, "dim": dim})  # fmt: skip
                added = [(k["key"] if k is not None else None, c)
                         for k, c in zip(keys, write.new, strict=True)]  # fmt: skip
                self._index(db, tenant, added)

    def forget(self, tenant: str, document_id: str, now: datetime) -> ForgetReport:
        """Remove a document from every index, leave its tombstone, and read it all back."""
        params = {"tenant": tenant, "id": document_id}
        with self.backend.transaction(tenant) as db:
            ids = [r["id"] for r in db.execute(self._sql("chunk_ids"), params).fetchall()]
            counts = db.execute(self._sql("count_chunks"), params).fetchone()
            vectors = int(counts["v"]) if counts is not None else 0
            index_keys = self._unindex(db, tenant, ids)
            for sql, bound in self.backend.lists(
                self._sql("delete_chunks"), {"tenant": tenant}, ids
            ):
                db.execute(sql, bound)
            gone = db.execute(self._sql("delete_doc"), params).rowcount
            db.execute(self._sql("tombstone"), {**params, "at": self.backend.at(now)})
        self._after_removal()
        left_doc = int(self._read(tenant, "count_doc", params)[0]["n"])
        left = self._read(tenant, "count_chunks", params)[0]
        remaining = {
            "documents": left_doc,
            "chunks": int(left["n"]),
            "vectors": int(left["v"]),
            "word_index": self._index_count(tenant, index_keys),
        }
        deleted = {"documents": max(gone, 0), "chunks": len(ids), "vectors": vectors,
                   "word_index": len(index_keys)}  # fmt: skip
        return ForgetReport(deleted, not any(remaining.values()), remaining)

    # -- rows ------------------------------------------------------------------------

    def _doc_params(self, d: StoredDocument) -> dict[str, Any]:
        return {
            "id": d.id, "tenant": d.tenant, "scope_key": d.scope_key,
            "source_key": d.source_key, "title": d.title, "source_uri": d.source_uri,
            "format": d.format, "content_hash": d.content_hash, "version": d.version,
            "version_id": d.version_id, "history": self.backend.json_param(list(d.history)),
            "sensitivity": d.sensitivity, "flags": self.backend.json_param(list(d.flags)),
            "chars": d.chars, "created_at": self.backend.at(d.created_at),
            "updated_at": self.backend.at(d.updated_at),
        }  # fmt: skip

    def _chunk_params(
        self, tenant: str, c: StoredChunk, vec: Vector | None, model: str
    ) -> dict[str, Any]:
        return {
            "tenant": tenant, "id": c.id, "document_id": c.document_id,
            "scope_key": c.scope_key, "ordinal": c.ordinal,
            "position": self.backend.json_param(c.position), "span_start": c.start,
            "span_end": c.end, "text": c.text, "chunk_hash": c.chunk_hash,
            "flags": self.backend.json_param(list(c.flags)),
            "model": model if vec is not None else None, "vec": self._vec_param(vec),
        }  # fmt: skip

    def _document(self, r: Row) -> StoredDocument:
        return StoredDocument(
            id=r["id"],
            tenant=r["tenant"],
            scope_key=r["scope_key"],
            source_key=r["source_key"],
            title=r["title"],
            source_uri=r["source_uri"],
            format=r["format"],
            content_hash=r["content_hash"],
            version=int(r["version"]),
            version_id=r["version_id"],
            history=tuple(self.backend.json_value(r["history"])),
            sensitivity=r["sensitivity"],
            flags=tuple(self.backend.json_value(r["flags"])),
            chars=int(r["chars"]),
            created_at=self.backend.time(r["created_at"]),
            updated_at=self.backend.time(r["updated_at"]),
            chunks=int(r["chunk_count"]),
        )

    def _chunk(self, r: Row) -> StoredChunk:
        return StoredChunk(
            id=r["id"],
            document_id=r["document_id"],
            scope_key=r["scope_key"],
            ordinal=int(r["ordinal"]),
            position=dict(self.backend.json_value(r["position"])),
            start=int(r["span_start"]),
            end=int(r["span_end"]),
            text=r["text"],
            chunk_hash=r["chunk_hash"],
            flags=tuple(self.backend.json_value(r["flags"])),
        )
