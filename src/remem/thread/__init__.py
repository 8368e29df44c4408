"""Thread state: workflow checkpoints and the ledger of idempotent tool calls.

Thread state is kept apart from long-term memory (DESIGN.md section 1): it is
the exact state a workflow resumes from, never recalled as a memory.

    checkpoints.py  the values (Checkpoint, ToolCall, ...) and pure decisions (resume_state)
    base.py         ThreadStore: every flow (save, begin, complete, release, retention), once
    sqlite.py       SQLiteThreadStore: its SQL (sqlite_sql.py) and transactions on a SQLiteStore
    postgres.py     PostgresThreadStore: the same on a PostgresStore (SQL in postgres_sql.py),
                    imported only on PostgreSQL
    api.py          the functions a program calls with a `Memory`
    cli.py          `remem checkpoint ...` and `remem toolcall ...`
"""
