"""Re-embedding on the SQLite store: the backend's part of
`remem.store.flows.reindex.VectorReindex`.

New vectors are float16 blobs, as the old ones. After the switch the scopes' vector
files (`remem.store.sqlite.vectors.files`) and this process's cached vectors hold the
old model's vectors: they are dropped, and the next search reads the new ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from remem.store.flows.reindex import KindSpec, Vector, VectorReindex

if TYPE_CHECKING:
    from remem.store.sqlite.search import SQLiteSearch


class SQLiteReindex(VectorReindex):
    """`VectorReindex` on one SQLite file."""

    SPECS: ClassVar[dict[str, KindSpec]] = {
        "records": KindSpec(
            "record_vectors", "record_rowid",
            "record_vectors v JOIN records r ON r.rowid = v.record_rowid",
            "reindex_record_vectors", "record_rowid",
        ),
        "events": KindSpec(
            "event_vectors", "event_seq", "event_vectors v JOIN events e ON e.seq = v.event_seq",
            "reindex_event_vectors", "event_seq",
        ),
        "chunks": KindSpec(
            "document_chunks", "key", "document_chunks v", "reindex_chunk_vectors", "key",
            where=" AND v.vec IS NOT NULL",
        ),
    }  # fmt: skip
    FIRST_KEY = 0  # rowids start at 1
    ACTOR_LEFT = """
SELECT (SELECT count(*) FROM reindex_record_vectors n
        JOIN record_vectors v ON v.record_rowid = n.record_rowid
        WHERE v.tenant = :tenant AND v.actor = :actor)
     + (SELECT count(*) FROM reindex_event_vectors n
        JOIN event_vectors v ON v.event_seq = n.event_seq
        WHERE v.tenant = :tenant AND v.actor = :actor) AS n
"""
    s: SQLiteSearch

    def _vec_param(self, vec: Vector) -> object:
        return np.asarray(vec, np.float16).tobytes()

    def _switched(self, tenant: str, actors: Sequence[str], model: str, dim: int) -> None:
        for actor in actors:
            self.s._drop_scope_vectors(tenant, actor)
