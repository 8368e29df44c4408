-- remem PostgreSQL schema 14: a record's metadata (issue 40; SQLite's schema 10), the
-- application's JSON object kept beside it (`remem.policy.metadata`). Kept as the JSON
-- text remem writes, as event metadata is since schema 11 (jsonb reorders keys and
-- writes numbers out in full); NULL for none. It lives in the record's row only, so
-- erasing the row erases it; filters cast it to jsonb (`remem.store.postgres.scope`).
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE records ADD COLUMN metadata text;
