-- remem PostgreSQL schema 11: event metadata is kept as the JSON text remem writes,
-- as thread state has been since schema 5, not as jsonb. jsonb keeps numbers as
-- numeric and writes them out in full: 1e308 came back as a 309-digit integer,
-- so 63 KB of metadata read back as 2.8 MB (issue 33), and it reorders keys.
-- Text reads back as it was sent, on both backends. Rows stored before this
-- migration keep what jsonb made of them (its numbers can no longer be told
-- from integers sent as such).
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE events ALTER COLUMN metadata DROP DEFAULT;
ALTER TABLE events ALTER COLUMN metadata TYPE text USING metadata::text;
ALTER TABLE events ALTER COLUMN metadata SET DEFAULT '{}';
