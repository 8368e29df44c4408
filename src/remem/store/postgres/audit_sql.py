"""The audit log's statements on PostgreSQL (`remem.store.flows.audit.AuditSQL`)."""

APPEND_AUDIT = """
INSERT INTO audit_log (tenant, at, key_id, action, actor, target, detail)
VALUES (%(tenant)s, %(at)s, %(key_id)s, %(action)s, %(actor)s, %(target)s, %(detail)s)
RETURNING id
"""
LIST_AUDIT = """
SELECT id, at, key_id, action, actor, target, detail FROM audit_log
WHERE tenant = %(tenant)s AND id < %(before)s
  AND (%(actor)s::text IS NULL OR actor = %(actor)s::text)
  AND (%(key_id)s::text IS NULL OR key_id = %(key_id)s::text)
  AND (%(action)s::text IS NULL OR action = %(action)s::text)
ORDER BY id DESC LIMIT %(limit)s
"""
PRUNE_AUDIT = "DELETE FROM audit_log WHERE tenant = %(tenant)s AND at < %(before)s RETURNING id"
