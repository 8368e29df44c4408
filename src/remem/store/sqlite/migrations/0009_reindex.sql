-- remem schema 9: re-embedding a store with another embedder (issue 36, `remem reindex`).
-- A tenant has at most one reindex pending: the embedder the new index is made by
-- (`reindexes`). Its vectors are kept beside the old ones, one table per kind of vector,
-- until every vector of another model has one; then one transaction copies them over the
-- old ones and empties these tables (`remem.store.flows.reindex`). Each new vector
-- references the old vector it replaces and goes with it (ON DELETE CASCADE), so an
-- erasure, which deletes the old vector, deletes the new one in the same statement.
CREATE TABLE IF NOT EXISTS reindexes (
    tenant      TEXT PRIMARY KEY,
    model       TEXT NOT NULL,     -- the embedder the new index is made by
    dim         INTEGER NOT NULL,
    fingerprint TEXT,
    started_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS reindex_record_vectors (
    record_rowid INTEGER PRIMARY KEY REFERENCES record_vectors (record_rowid) ON DELETE CASCADE,
    tenant       TEXT NOT NULL,
    vec          BLOB NOT NULL     -- float16, as record_vectors.vec
);
CREATE INDEX IF NOT EXISTS reindex_record_vectors_tenant ON reindex_record_vectors (tenant);

CREATE TABLE IF NOT EXISTS reindex_event_vectors (
    event_seq INTEGER PRIMARY KEY REFERENCES event_vectors (event_seq) ON DELETE CASCADE,
    tenant    TEXT NOT NULL,
    vec       BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS reindex_event_vectors_tenant ON reindex_event_vectors (tenant);

CREATE TABLE IF NOT EXISTS reindex_chunk_vectors (
    key    INTEGER PRIMARY KEY REFERENCES document_chunks (key) ON DELETE CASCADE,
    tenant TEXT NOT NULL,
    vec    BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS reindex_chunk_vectors_tenant ON reindex_chunk_vectors (tenant);
