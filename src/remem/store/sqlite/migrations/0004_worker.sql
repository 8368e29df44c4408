-- remem schema 4: the extraction worker. A failed attempt waits (exponential
-- backoff) before it is taken again; every language-model call is logged with
-- its tokens and time, never its prompt, its answer or a key.

ALTER TABLE jobs ADD COLUMN run_after TEXT;                -- NULL: ready now
CREATE INDEX jobs_tenant ON jobs (tenant, status, id);

CREATE TABLE llm_calls (
    id                 INTEGER PRIMARY KEY,
    tenant             TEXT NOT NULL,
    job_id             INTEGER,
    strategy           TEXT NOT NULL,
    model              TEXT NOT NULL,
    prompt_version     TEXT NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    seconds            REAL NOT NULL,
    ok                 INTEGER NOT NULL,
    error              TEXT,
    created_at         TEXT NOT NULL
);
CREATE INDEX llm_calls_tenant ON llm_calls (tenant, id);
