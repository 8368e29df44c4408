-- remem schema 8: the embedding models whose vectors each tenant holds (issue 36).
-- A vector is only ever searched by the model that made it (by name); this table lets a
-- memory see in one read whether the store holds vectors of another model, or of its
-- name with another dimension or weights (fingerprint), before it mixes them
-- (`remem.memory.embedder`). Written beside every vector write; filled here from the
-- vectors already stored (float16 blobs: two bytes a dimension).
CREATE TABLE IF NOT EXISTS vector_models (
    tenant      TEXT NOT NULL,
    model       TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    fingerprint TEXT,              -- the embedder's, where it has one (NULL: none known)
    PRIMARY KEY (tenant, model)
) WITHOUT ROWID;

INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(length(vec)) / 2 FROM record_vectors GROUP BY tenant, model
ON CONFLICT DO NOTHING;

INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(length(vec)) / 2 FROM event_vectors GROUP BY tenant, model
ON CONFLICT DO NOTHING;

INSERT INTO vector_models (tenant, model, dim)
SELECT tenant, model, max(length(vec)) / 2 FROM document_chunks
WHERE model IS NOT NULL AND vec IS NOT NULL GROUP BY tenant, model
ON CONFLICT DO NOTHING;
