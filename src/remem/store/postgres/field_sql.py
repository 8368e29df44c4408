"""The PostgreSQL statements that read one field's records (`remem.store.flows.records`).

Each reads by an index of the field (schema 17: by status and end of validity, or by
time) and returns at most `limit` rows, newest first (valid_from, then seq); the rules are
SQLite's (`remem.store.sqlite.field_sql.by_field`).
"""

from __future__ import annotations

from typing import Any

from remem.store.forks import BITS
from remem.store.postgres.scope import scope_where
from remem.store.roles import FieldRead, Scope

COLUMNS = (
    "id, tenant, actor, namespace, kind, text, field, value, source_type, source_event_ids, "
    "strategy, extractor, authority, sensitivity, valid_from, valid_until, created_at, "
    "updated_at, status, supersedes, superseded_by, flags, metadata, seq"
)
_R_COLUMNS = ", ".join(f"r.{c.strip()}" for c in COLUMNS.split(","))
_NEWEST = "ORDER BY valid_from DESC, seq DESC LIMIT %(limit)s"
# the forks an interval that holds `known` (`k`) or `valid` (`v`) is registered at
# (`remem.store.forks`; schema 18): one seek of the fork's index each
_KNOWN_FORKS = ", ".join(f"%(k{i})s" for i in range(BITS))
_VALID_FORKS = ", ".join(f"%(v{i})s" for i in range(BITS))


def by_field(scope: Scope, read: FieldRead) -> tuple[str, dict[str, Any]]:
    """The statement of one read of a field's records and the scope's parameters, as
    SQLite's `by_field` (events: `keys`, an array)."""
    where, params = scope_where(scope)
    own = f"{where} AND field = %(field)s"
    if read == "listed":
        sql = f"SELECT {COLUMNS} FROM records WHERE {own} AND status IN ('active', 'invalid') "
        sql += _NEWEST
    elif read == "current":
        sql = f"SELECT {COLUMNS} FROM records WHERE {own} AND status = 'active' {_NEWEST}"
    elif read == "restating":
        named, _ = scope_where(scope, "r")  # the events' links first, then their records
        sql = f"""SELECT * FROM (
    SELECT {COLUMNS} FROM records WHERE {own} AND status = 'active'
    UNION
    SELECT {_R_COLUMNS} FROM record_events e JOIN records r
        ON r.tenant = e.tenant AND r.id = e.record_id
    WHERE e.tenant = %(tenant)s AND e.event_id = ANY(%(keys)s::text[]) AND {named}
        AND r.field = %(field)s AND r.status IN ('active', 'invalid')) found
{_NEWEST}"""
    else:
        then = f"{own} AND valid_from <= %(valid)s AND created_at <= %(known)s"
        sql = f"""SELECT * FROM (
    SELECT {COLUMNS} FROM records WHERE {then} AND status = 'active'
        AND (valid_until IS NULL OR valid_until > %(valid)s)
    UNION ALL
    SELECT {COLUMNS} FROM records WHERE {then} AND valid_fork IN ({_VALID_FORKS})
        AND status = 'invalid' AND valid_until > %(valid)s
    UNION ALL
    SELECT {COLUMNS} FROM records WHERE %(closings)s::boolean AND {then}
        AND known_fork IN ({_KNOWN_FORKS}) AND status = 'invalid'
        AND (valid_until IS NULL OR valid_until <= %(valid)s) AND closed_at > %(known)s) held
{_NEWEST}"""
    return sql, params
