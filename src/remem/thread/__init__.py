"""Thread state: workflow checkpoints and the ledger of idempotent tool calls.

Thread state is kept apart from long-term memory (DESIGN.md section 1): it is
the exact state a workflow resumes from, never recalled as a memory.

    checkpoints.py  the values (Checkpoint, ToolCall, ...) and pure decisions (resume_state)
    api.py          the functions a program calls with a `Memory`
    backends.py     which thread state a store's database has

Its SQL lives with the store's: `remem.store.flows.thread` (ThreadStore: every flow,
once), `remem.store.sqlite.thread` and `remem.store.postgres.thread` (each backend's
transactions, with the statements of `thread_sql` beside them). Its commands are
`remem.cli.thread` (`remem checkpoint ...` and `remem toolcall ...`).
"""
