"""The audit log's statements on SQLite (`remem.store.flows.audit.AuditSQL`)."""

APPEND_AUDIT = """
INSERT INTO audit_log (tenant, at, key_id, action, actor, target, detail)
VALUES (:tenant, :at, :key_id, :action, :actor, :target, :detail) RETURNING id
"""
LIST_AUDIT = """
SELECT id, at, key_id, action, actor, target, detail FROM audit_log
WHERE tenant = :tenant AND id < :before
  AND (:actor IS NULL OR actor = :actor)
  AND (:key_id IS NULL OR key_id = :key_id)
  AND (:action IS NULL OR action = :action)
ORDER BY id DESC LIMIT :limit
"""
PRUNE_AUDIT = "DELETE FROM audit_log WHERE tenant = :tenant AND at < :before RETURNING id"
