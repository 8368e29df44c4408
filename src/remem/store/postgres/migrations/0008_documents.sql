-- remem PostgreSQL schema 8: documents (SQLite schema 7), the fourth kind of state.
-- A document is a source record; its chunks are derived from it along its
-- structure and indexed like records: words as (tenant, actor, term, seq) rows
-- under a btree (schema 4's machinery; `actor` holds the chunk's scope key,
-- 'tenant', 'actor:<name>' or 'namespace:<name>'), vectors in an untyped
-- `vector` column searched exactly within the scopes a principal may read.
-- A removed document leaves a content-free tombstone (kind 'document').
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE documents (
    tenant       text NOT NULL,
    id           text NOT NULL,
    scope_key    text NOT NULL,
    source_key   text NOT NULL,
    title        text NOT NULL,
    source_uri   text,
    format       text NOT NULL,
    content_hash text NOT NULL,
    version      integer NOT NULL,
    version_id   text NOT NULL,
    history      jsonb NOT NULL DEFAULT '[]',
    sensitivity  text NOT NULL,
    flags        jsonb NOT NULL DEFAULT '[]',
    chars        integer NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE UNIQUE INDEX documents_source ON documents (tenant, scope_key, source_key);

CREATE TABLE document_chunks (
    tenant       text NOT NULL,
    id           text NOT NULL,
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    document_id  text NOT NULL,
    scope_key    text NOT NULL,
    ordinal      integer NOT NULL,
    position     jsonb NOT NULL,
    span_start   integer NOT NULL,
    span_end     integer NOT NULL,
    text         text NOT NULL,
    chunk_hash   text NOT NULL,
    flags        jsonb NOT NULL DEFAULT '[]',
    model        text,
    vec          vector,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, document_id) REFERENCES documents (tenant, id) ON DELETE CASCADE
);
CREATE INDEX document_chunks_document ON document_chunks (tenant, document_id, ordinal);
CREATE INDEX document_chunks_scope ON document_chunks (tenant, scope_key, model);

CREATE TABLE document_chunk_terms (
    tenant   text NOT NULL,
    actor    text NOT NULL,      -- the chunk's scope key
    term     text NOT NULL,
    seq      bigint NOT NULL,
    chunk_id text NOT NULL,
    weight   real NOT NULL,
    PRIMARY KEY (tenant, actor, term, seq) INCLUDE (chunk_id, weight),
    FOREIGN KEY (tenant, chunk_id) REFERENCES document_chunks (tenant, id) ON DELETE CASCADE
);
CREATE INDEX document_chunk_terms_chunk ON document_chunk_terms (tenant, chunk_id);

ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON documents USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE document_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE document_chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON document_chunks USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE document_chunk_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE document_chunk_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON document_chunk_terms USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on')
