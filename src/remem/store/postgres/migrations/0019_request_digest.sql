-- remem PostgreSQL schema 19: the request ledger keeps a digest of what each request
-- asked (SQLite's schema 15). A request id repeated with other fields (another text, say)
-- was answered with the first request's outcome, marked replayed, and the new write was
-- lost without a word; now it is a conflict. Rows written before keep no digest and
-- replay as before. Only a SHA-256 of the fields is kept, never their content.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE api_requests ADD COLUMN digest text;
