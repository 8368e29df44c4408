"""The PostgreSQL backend: the same files as `remem.store.sqlite.store`, and psycopg's own
(`rows`, `scope`, `job_sql`)."""
