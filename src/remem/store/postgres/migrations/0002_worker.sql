-- remem PostgreSQL schema 2: the extraction worker (SQLite schema 4). A failed
-- attempt waits (exponential backoff) before it is taken again; every
-- language-model call is logged with its tokens and time, never its prompt,
-- its answer or a key.
-- Statements are split on ';' at line ends: no ';' inside a statement here.

ALTER TABLE jobs ADD COLUMN run_after timestamptz;          -- NULL: ready now
CREATE INDEX jobs_tenant ON jobs (tenant, status, id);

CREATE TABLE llm_calls (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant            text NOT NULL,
    job_id            bigint,
    strategy          text NOT NULL,
    model             text NOT NULL,
    prompt_version    text NOT NULL,
    prompt_tokens     integer NOT NULL,
    completion_tokens integer NOT NULL,
    seconds           double precision NOT NULL,
    ok                boolean NOT NULL,
    error             text,
    created_at        timestamptz NOT NULL
);
CREATE INDEX llm_calls_tenant ON llm_calls (tenant, id);

-- the same row-level security as every other tenant-owned table (see schema 1)
ALTER TABLE llm_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE llm_calls FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON llm_calls USING (tenant = current_setting('remem.tenant', true) OR current_setting('remem.all_tenants', true) = 'on');
