-- remem schema 5: the request-id ledger is keyed by (tenant, actor, request_id)
-- and claimed in the database before the write runs. Keyed by (tenant,
-- request_id) alone, another actor's item with the same request id was
-- answered with the first actor's outcome; and the lock that made a request id
-- run once was per process, so two servers on one database wrote twice. Now a
-- batch item INSERTs its claim first (the primary key makes it exclusive
-- across connections and processes), runs, then records its outcome. A claim
-- whose process died (no outcome, `lease_until` passed) is taken over.
-- `target` is the record an update or delete named, so a delete retried after
-- its record is gone still finds its first outcome. Rows keep ids and
-- statuses, never content. Old rows keep their outcome as final.

CREATE TABLE api_requests_keyed (
    tenant      TEXT NOT NULL,
    actor       TEXT NOT NULL,                          -- the item's, or its record's, actor
    request_id  TEXT NOT NULL,
    operation   TEXT NOT NULL,                          -- create | update | delete
    target      TEXT,                                   -- update, delete: the record named
    outcome     TEXT,                                   -- JSON object; NULL while claimed
    token       TEXT,                                   -- the claimant's; NULL once final
    lease_until TEXT,                                   -- a claim older than this is retaken
    created_at  TEXT NOT NULL,
    PRIMARY KEY (tenant, actor, request_id)
) WITHOUT ROWID;

INSERT INTO api_requests_keyed (tenant, actor, request_id, operation, target, outcome, created_at)
SELECT tenant, actor, request_id, operation,
       CASE operation
           WHEN 'update' THEN json_extract(outcome, '$.supersedes')
           WHEN 'delete' THEN json_extract(outcome, '$.record_id')
       END,
       outcome, created_at
FROM api_requests;

DROP TABLE api_requests;
ALTER TABLE api_requests_keyed RENAME TO api_requests;
CREATE INDEX api_requests_target ON api_requests (tenant, target) WHERE target IS NOT NULL;
