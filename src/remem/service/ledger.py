"""The service's own rows on an open SQLiteStore: the request-id ledger, job counts.

A batch item that carries a request id is recorded here with its outcome (a
status, a record id, an error; never content), so a client that retries after
a timeout gets the first outcome back instead of a second write.
"""

from __future__ import annotations

import json
from typing import Any

from remem.store.sqlite import SQLiteStore
from remem.timeutil import to_db, utcnow

_LOOKUP = "SELECT operation, actor, outcome FROM api_requests WHERE tenant = ? AND request_id = ?"
_SAVE = """
INSERT OR IGNORE INTO api_requests (tenant, request_id, operation, actor, outcome, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""
_FORGET_ACTOR = "DELETE FROM api_requests WHERE tenant = ? AND actor = ?"
_JOBS = "SELECT status, count(*) FROM jobs WHERE tenant = ? GROUP BY status"


def lookup(
    store: SQLiteStore, tenant: str, request_id: str
) -> tuple[str, str, dict[str, Any]] | None:
    """The (operation, actor, outcome) first recorded for a request id, or None."""
    rows = store._rows(_LOOKUP, (tenant, request_id))
    if not rows:
        return None
    return str(rows[0][0]), str(rows[0][1]), json.loads(rows[0][2])


def save(
    store: SQLiteStore,
    tenant: str,
    request_id: str,
    operation: str,
    actor: str,
    outcome: dict[str, Any],
) -> None:
    """Record the outcome of a request id; a request id already recorded keeps its first."""
    with store._tx() as db:
        db.execute(
            _SAVE,
            (tenant, request_id, operation, actor, json.dumps(outcome), to_db(utcnow())),
        )


def forget_actor(store: SQLiteStore, tenant: str, actor: str) -> int:
    """Drop the ledger rows of a forgotten actor; return how many."""
    with store._tx() as db:
        return int(db.execute(_FORGET_ACTOR, (tenant, actor)).rowcount)


def job_counts(store: SQLiteStore, tenant: str) -> dict[str, int]:
    """The tenant's extraction jobs by status: pending, running, done, failed."""
    counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
    for status, n in store._rows(_JOBS, (tenant,)):
        counts[str(status)] = int(n)
    return counts
