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

from remem.thread.api import (
    begin_tool_call,
    checkpoint_list,
    checkpoint_load,
    checkpoint_save,
    complete_tool_call,
    expire_thread_state,
    release_tool_call,
    tool_call_status,
    tool_calls,
)
from remem.thread.checkpoints import (
    Begun,
    CallStatus,
    Checkpoint,
    CheckpointConflict,
    CheckpointState,
    ExpiryReport,
    Held,
    ResumeState,
    ToolCall,
    resume_state,
    retention_hold,
)
from remem.thread.sqlite import SQLiteThreadStore

__all__ = [
    "Begun",
    "CallStatus",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointState",
    "ExpiryReport",
    "Held",
    "ResumeState",
    "SQLiteThreadStore",
    "ToolCall",
    "begin_tool_call",
    "checkpoint_list",
    "checkpoint_load",
    "checkpoint_save",
    "complete_tool_call",
    "expire_thread_state",
    "release_tool_call",
    "resume_state",
    "retention_hold",
    "tool_call_status",
    "tool_calls",
]
