-- remem PostgreSQL schema 4: word indexes that row-level security lets the planner use.
-- Under forced row-level security the planner uses an index only for a condition
-- whose operator is LEAKPROOF, and the full-text match `@@` is not (only a
-- superuser may mark a function so), so the GIN indexes of schema 1 were never
-- used: every lexical search read the whole scope. Each record's and event's
-- lexemes are now also rows (tenant, actor, term, seq) under a btree, whose
-- `=` on text is leakproof; a search reads the newest matches of each query
-- term there. Each row keeps the term's ts_rank in its document: ts_rank of an
-- OR of terms is the sum of those over the query's terms divided by their
-- number, so a search ranks its matches from the btree alone and reads only the
-- rows it returns. Nearest-vector (HNSW) indexes are made per embedding model
-- by the store when the model first writes, not here: an HNSW index needs a
-- fixed dimension and the vector columns have none.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE record_terms (
    tenant    text NOT NULL,
    actor     text NOT NULL,
    term      text NOT NULL,     -- a lexeme of the record's tsv
    seq       bigint NOT NULL,   -- the record's seq: newest matches first
    record_id text NOT NULL,
    weight    real NOT NULL,     -- ts_rank(tsv, term) of the record
    PRIMARY KEY (tenant, actor, term, seq) INCLUDE (record_id, weight),  -- read without the heap
    FOREIGN KEY (tenant, record_id) REFERENCES records (tenant, id) ON DELETE CASCADE
);
CREATE INDEX record_terms_record ON record_terms (tenant, record_id);

CREATE TABLE event_terms (
    tenant   text NOT NULL,
    actor    text NOT NULL,
    term     text NOT NULL,      -- a lexeme of the event's tsv
    seq      bigint NOT NULL,    -- the event's seq
    event_id text NOT NULL,
    weight   real NOT NULL,      -- ts_rank(tsv, term) of the event
    PRIMARY KEY (tenant, actor, term, seq) INCLUDE (event_id, weight),
    FOREIGN KEY (tenant, event_id) REFERENCES events (tenant, id) ON DELETE CASCADE
);
CREATE INDEX event_terms_event ON event_terms (tenant, event_id);

-- unusable under forced row-level security (see above); they only slowed writes
DROP INDEX records_tsv;
DROP INDEX events_tsv;

ALTER TABLE record_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE record_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON record_terms USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
ALTER TABLE event_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON event_terms USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');

-- ts_rank of one lexeme in a document; the lexeme is quoted as tsquery input
-- (quotes and backslashes doubled) so that none is read as query syntax
CREATE FUNCTION remem_term_rank(doc tsvector, term text) RETURNS real
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT ts_rank(doc, ('''' || replace(replace(term, '\', '\\'), '''', '''''') || '''')::tsquery) $$;

-- the words of what schema 3 already holds, every tenant's (this transaction only)
SELECT set_config('remem.all_tenants', 'on', true);
INSERT INTO record_terms (tenant, actor, term, seq, record_id, weight)
SELECT r.tenant, r.actor, t.term, r.seq, r.id, remem_term_rank(r.tsv, t.term)
FROM records r, unnest(tsvector_to_array(r.tsv)) AS t(term);
INSERT INTO event_terms (tenant, actor, term, seq, event_id, weight)
SELECT e.tenant, e.actor, t.term, e.seq, e.id, remem_term_rank(e.tsv, t.term)
FROM events e, unnest(tsvector_to_array(e.tsv)) AS t(term)
