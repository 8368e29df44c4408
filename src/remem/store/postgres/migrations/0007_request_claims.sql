-- remem PostgreSQL schema 7: the request-id ledger is keyed by (tenant, actor,
-- request_id) and claimed in the database before the write runs (SQLite
-- schema 5). Keyed by (tenant, request_id) alone, another actor's item with
-- the same request id was answered with the first actor's outcome; and the
-- lock that made a request id run once was per process, so two servers on one
-- database wrote twice. Now a batch item INSERTs its claim first (the primary
-- key makes it exclusive across connections and servers), runs, then records
-- its outcome. A claim whose process died (no outcome, `lease_until` passed)
-- is taken over. `target` is the record an update or delete named, so a
-- delete retried after its record is gone still finds its first outcome.
-- The table stays under the forced row-level security of schema 3 (its policy
-- is unchanged); the backfill below says it spans tenants, as schema 4's does.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE api_requests DROP CONSTRAINT api_requests_pkey;
ALTER TABLE api_requests ADD PRIMARY KEY (tenant, actor, request_id);
ALTER TABLE api_requests ALTER COLUMN outcome DROP NOT NULL;   -- NULL while claimed
ALTER TABLE api_requests ADD COLUMN target text;               -- update, delete: the record named
ALTER TABLE api_requests ADD COLUMN token text;                -- the claimant's; NULL once final
ALTER TABLE api_requests ADD COLUMN lease_until timestamptz;   -- a claim older than this is retaken
DROP INDEX api_requests_actor;
CREATE INDEX api_requests_target ON api_requests (tenant, target) WHERE target IS NOT NULL;

SELECT set_config('remem.all_tenants', 'on', true);
UPDATE api_requests SET target = CASE operation
    WHEN 'update' THEN outcome->>'supersedes'
    WHEN 'delete' THEN outcome->>'record_id'
END;
