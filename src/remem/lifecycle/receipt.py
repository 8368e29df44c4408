"""An erasure's receipt: what a privacy officer hands over, built from its deletion job.

A receipt names the job, whose data it was (the actor, for a record's erasure too),
who asked (the key's id and a name) and why (the reason or ticket reference given),
when it was asked and finished, what was removed (counts by surface) and whether
reading every surface back verified it. It holds ids and counts only: never a
record's or an event's text, nor the error a failed attempt raised (which may quote
a statement); `failed_attempts` says only whether there was one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RECEIPT_VERSION = 1
REASON_MAX = 500  # the characters of an erasure's reason or ticket reference


def receipt(tenant: str, job: Mapping[str, Any]) -> dict[str, Any]:
    """The receipt of one deletion job (a row of `Store.deletions`), JSON-ready."""
    result = job.get("result") or {}
    return {
        "receipt_version": RECEIPT_VERSION,
        "deletion_id": job["id"],
        "tenant": tenant,
        "target": job["target"],
        "target_id": job["key"],
        "actor": job.get("actor"),
        "requested_by": {"key_id": job.get("requested_by"), "name": job.get("requester")},
        "reason": job.get("reason"),
        "requested_at": job["created_at"],
        "finished_at": job.get("updated_at"),
        "status": job["status"],
        "attempts": job["attempts"],
        "failed_attempts": bool(job.get("last_error")),
        "verified": bool(result.get("verified", False)),
        "removed": dict(result.get("deleted", {})),
        "remaining": dict(result.get("remaining", {})),
    }
