"""The audit log: who read, exported, erased or decided what, written once for every backend.

`AuditTrail` is the audit role of both stores (`Store.audit`), composed over their
backend. The service appends a row per read of an actor's memory, export, erasure,
review decision and key change (`remem.service.audit`); nothing of remem updates a row,
and rows leave only by age (`prune_audit`, the retention setting). A row holds ids and
counts only: the key, the action, whose memory, an id (a record, a deletion job, a key,
a session) and a small JSON detail (the surface, counts) — never memory content, nor a
query.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from remem.store.flows.backend import Backend
from remem.store.values import AuditEntry


class AuditSQL(Protocol):
    """The named statements of the audit log; named parameters as listed."""

    APPEND_AUDIT: str  # tenant, at, key_id, action, actor, target, detail
    LIST_AUDIT: str  # tenant, actor, key_id, action (each NULL: any), before (id), limit
    PRUNE_AUDIT: str  # tenant, before (a time): rows older go


class AuditTrail:
    """The audit log of a store (`remem.store.roles.AuditLog`), written once over its
    `backend` and its dialect's statements (`sql`)."""

    def __init__(self, backend: Backend, sql: AuditSQL) -> None:
        self.backend, self.sql = backend, sql

    def append(self, tenant: str, entry: AuditEntry, now: datetime) -> None:
        """Append one row to the tenant's audit log."""
        params = {
            "tenant": tenant,
            "at": self.backend.at(now),
            "key_id": entry.key_id,
            "action": entry.action,
            "actor": entry.actor,
            "target": entry.target,
            "detail": self.backend.json_param(dict(entry.detail)),
        }
        self.backend.write(tenant, self.sql.APPEND_AUDIT, params)

    def audit_log(
        self,
        tenant: str,
        *,
        actor: str | None = None,
        key_id: str | None = None,
        action: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """The tenant's audit rows, newest first, narrowed by whichever of `actor`,
        `key_id` and `action` is given, below row id `before` (a page's last id)."""
        params = {
            "tenant": tenant,
            "actor": actor,
            "key_id": key_id,
            "action": action,
            "before": before if before is not None else 2**62,
            "limit": limit,
        }
        return [
            {
                "id": int(r["id"]),
                "at": self.backend.time(r["at"]).isoformat(timespec="seconds"),
                "key_id": r["key_id"],
                "action": r["action"],
                "actor": r["actor"],
                "target": r["target"],
                "detail": self.backend.json_value(r["detail"]),
            }
            for r in self.backend.read(tenant, self.sql.LIST_AUDIT, params)
        ]

    def prune_audit(self, tenant: str, before: datetime) -> int:
        """Remove the tenant's audit rows older than `before`; how many went."""
        params = {"tenant": tenant, "before": self.backend.at(before)}
        return len(self.backend.write(tenant, self.sql.PRUNE_AUDIT, params))
