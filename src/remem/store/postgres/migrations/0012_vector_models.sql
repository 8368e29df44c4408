-- remem PostgreSQL schema 12: the embedding models whose vectors each tenant holds
-- (issue 36; SQLite's schema 8). A vector is only ever searched by the model that made
-- it (by name); this table lets a memory see in one read whether the store holds
-- vectors of another model, or of its name with another dimension or weights
-- (fingerprint), before it mixes them (`remem.memory.embedder`). Written beside every
-- vector write; filled here from the vectors already stored, every tenant's.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

CREATE TABLE vector_models (
    tenant      text NOT NULL,
    model       text NOT NULL,
    dim         integer NOT NULL,
    fingerprint text,
    PRIMARY KEY (tenant, model)
);
ALTER TABLE vector_models ENABLE ROW LEVEL SECURITY;
ALTER TABLE vector_models FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON vector_models USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');

SELECT set_config('remem.all_tenants', 'on', true);
INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(vector_dims(vec)) FROM record_vectors GROUP BY tenant, model
ON CONFLICT DO NOTHING;
INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(vector_dims(vec)) FROM event_vectors GROUP BY tenant, model
ON CONFLICT DO NOTHING;
INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(vector_dims(vec)) FROM document_chunks
WHERE model IS NOT NULL AND vec IS NOT NULL GROUP BY tenant, model
ON CONFLICT DO NOTHING;
