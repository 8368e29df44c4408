-- remem schema 7: documents, the fourth kind of state (knowledge retrieval).
-- A document is a source record; its chunks are derived from it along its
-- structure and indexed like records: words in an FTS5 table whose every word
-- carries its scope's token (`scope_key`: 'tenant', 'actor:<name>' or
-- 'namespace:<name>'), vectors as float16 blobs beside each chunk. A removed
-- document leaves a content-free tombstone (kind 'document') in `tombstones`.
-- Every statement may run again on a file that has the tables (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS documents (
    tenant       TEXT NOT NULL,
    id           TEXT NOT NULL,
    scope_key    TEXT NOT NULL,      -- 'tenant' | 'actor:<name>' | 'namespace:<name>'
    source_key   TEXT NOT NULL,      -- what a document is known by in its scope: its URI or title
    title        TEXT NOT NULL,
    source_uri   TEXT,
    format       TEXT NOT NULL,      -- text | markdown | html | pdf
    content_hash TEXT NOT NULL,      -- sha256 of the normalised text
    version      INTEGER NOT NULL,
    version_id   TEXT NOT NULL,
    history      TEXT NOT NULL DEFAULT '[]',  -- earlier versions: id, hash, time (JSON)
    sensitivity  TEXT NOT NULL,
    flags        TEXT NOT NULL DEFAULT '[]',  -- untrusted-text flags of any chunk (JSON)
    chars        INTEGER NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS documents_source ON documents (tenant, scope_key, source_key);

CREATE TABLE IF NOT EXISTS document_chunks (
    key          INTEGER PRIMARY KEY,          -- the FTS5 rowid
    tenant       TEXT NOT NULL,
    id           TEXT NOT NULL,
    document_id  TEXT NOT NULL,
    scope_key    TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    position     TEXT NOT NULL,                -- {"page": n} or {"headings": [...]} (JSON)
    span_start   INTEGER NOT NULL,             -- char offsets into the normalised text
    span_end     INTEGER NOT NULL,
    text         TEXT NOT NULL,
    chunk_hash   TEXT NOT NULL,
    flags        TEXT NOT NULL DEFAULT '[]',
    model        TEXT,
    vec          BLOB,
    UNIQUE (tenant, id),
    FOREIGN KEY (tenant, document_id) REFERENCES documents (tenant, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS document_chunks_document ON document_chunks (tenant, document_id, ordinal);
CREATE INDEX IF NOT EXISTS document_chunks_scope ON document_chunks (tenant, scope_key, model);

CREATE VIRTUAL TABLE IF NOT EXISTS document_chunks_fts USING fts5 (text, scope, tokenize = 'porter unicode61')
