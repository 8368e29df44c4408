-- remem PostgreSQL schema 13: re-embedding a store with another embedder (issue 36,
-- `remem reindex`; SQLite's schema 9). A tenant has at most one reindex pending: the
-- embedder the new index is made by (`reindexes`). Its vectors are kept in tables of
-- their own beside the old ones (a `vector` column of the new model's dimension, untyped
-- as the old ones are) until every vector of another model has one; then one
-- transaction copies them over the old ones and empties these tables
-- (`remem.store.flows.reindex`). Each new vector references the old vector it replaces
-- and goes with it (ON DELETE CASCADE), so an erasure, which deletes the old vector,
-- deletes the new one in the same statement.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE reindexes (
    tenant      text PRIMARY KEY,
    model       text NOT NULL,
    dim         integer NOT NULL,
    fingerprint text,
    started_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE reindex_record_vectors (
    tenant    text NOT NULL,
    record_id text NOT NULL,
    vec       vector NOT NULL,
    PRIMARY KEY (tenant, record_id),
    FOREIGN KEY (tenant, record_id) REFERENCES record_vectors (tenant, record_id) ON DELETE CASCADE
);

CREATE TABLE reindex_event_vectors (
    tenant   text NOT NULL,
    event_id text NOT NULL,
    vec      vector NOT NULL,
    PRIMARY KEY (tenant, event_id),
    FOREIGN KEY (tenant, event_id) REFERENCES event_vectors (tenant, event_id) ON DELETE CASCADE
);

CREATE TABLE reindex_chunk_vectors (
    tenant   text NOT NULL,
    chunk_id text NOT NULL,
    vec      vector NOT NULL,
    PRIMARY KEY (tenant, chunk_id),
    FOREIGN KEY (tenant, chunk_id) REFERENCES document_chunks (tenant, id) ON DELETE CASCADE
);

ALTER TABLE reindexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE reindexes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON reindexes USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE reindex_record_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE reindex_record_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON reindex_record_vectors USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE reindex_event_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE reindex_event_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON reindex_event_vectors USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE reindex_chunk_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE reindex_chunk_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON reindex_chunk_vectors USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on')
