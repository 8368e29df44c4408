-- remem schema 10: a record's metadata (issue 40), the application's JSON object kept
-- beside it (`remem.policy.metadata`): compact JSON text as remem writes it, NULL for
-- none. It lives in the record's row only, so erasing the row erases it; recall and
-- listing filter on its top-level keys with json_each (`remem.store.sqlite.sql`).
ALTER TABLE records ADD COLUMN metadata TEXT;
