-- remem PostgreSQL schema 10: an insertion number on checkpoints, tool calls and
-- request ids, as records and events have, so `forget(actor)` can read back only the
-- rows that were there when it began (`remem.store.postgres_erasure.ActorMarkSQL`):
-- one a writer stores meanwhile, a fresh start, has a larger number. A checkpoint
-- saved again keeps its number (it is updated in place), so one the erasure left
-- still counts. Existing rows are numbered as the column is added.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE checkpoints ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE tool_calls ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE api_requests ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
