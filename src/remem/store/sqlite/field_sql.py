"""The SQLite statements that read one field's records (`remem.store.flows.records`).

Each reads by an index of the field (schema 13: by status and end of validity, or by
time; schema 14: by the forks of an interval, `remem.store.forks`) and returns at most
`limit` rows, newest first (valid_from, then rowid); see
`remem.store.roles.RecordStore` for what each is for and `by_field` for the rules.
"""

from __future__ import annotations

from typing import Any

from remem.store.forks import BITS
from remem.store.roles import FieldRead, Scope
from remem.store.sqlite.scope import scope_where

# the planner, which may prefer the scope's index by status (every active record of the
# actor, walked newest first), is told: the field's rows alone, by status and end of
# validity, or (a listing) by time, walked newest first to the limit
_BY_STATUS = "INDEXED BY records_field_status"
_BY_TIME = "INDEXED BY records_field_time"
_NEWEST = "ORDER BY valid_from DESC, rowid DESC LIMIT :limit"
# the forks an interval that holds `known` (`k`) or `valid` (`v`) is registered at
# (`remem.store.forks`; schema 14): one seek of the fork's index each
_KNOWN_FORKS = ", ".join(f":k{i}" for i in range(BITS))
_VALID_FORKS = ", ".join(f":v{i}" for i in range(BITS))


def by_field(scope: Scope, read: FieldRead) -> tuple[str, dict[str, Any]]:
    """The statement of one read of a field's records and the scope's parameters (the
    read adds `field`, `limit`, and for `held` `known`, `valid`, `closings`; for
    `current` with events, `{keys}`: their ids).

    - `listed`: active and invalid, newest first, by the index on time.
    - `current`: active ones, by the index on status.
    - `restating`: those and any, active or invalid, whose source names one of `{keys}`
      (event ids), read from the events' links (`record_events`).
    - `held`: those `remem.policy.validity.held` may hold at (`known`, `valid`): written
      by `known`, valid from `valid` or before, and active and not expired at `valid`,
      or invalid with a validity that holds `valid`, or (`closings`: `known` is before
      now) invalid and open at `known` (closed after it: `closed_at`, its first INVALID
      history entry). The active ones are a seek of the index by status; the invalid
      ones seeks of the forks of their intervals (`remem.store.forks`: `k0`... for
      `known`, `v0`... for `valid`), so none reads the field's older history.
    """
    where, params = scope_where(scope)
    own = f"{where} AND field = :field"
    by = _BY_STATUS
    if read == "listed":
        sql = f"SELECT * FROM records {_BY_TIME} WHERE {own} AND status IN ('active', 'invalid') "
        sql += _NEWEST
    elif read == "current":
        sql = f"SELECT * FROM records {by} WHERE {own} AND status = 'active' {_NEWEST}"
    elif read == "restating":
        named, _ = scope_where(scope, "r")  # the event's links first, then their records
        sql = f"""SELECT * FROM (
    SELECT * FROM records {by} WHERE {own} AND status = 'active'
    UNION
    SELECT r.* FROM record_events e CROSS JOIN records r ON r.id = e.record_id
    WHERE e.tenant = :tenant AND e.event_id IN ({{keys}}) AND {named} AND r.field = :field
        AND r.status IN ('active', 'invalid'))
{_NEWEST}"""
    else:
        then = f"{own} AND valid_from <= :valid AND created_at <= :known"
        sql = f"""SELECT * FROM (
    SELECT * FROM records {by} WHERE {then} AND status = 'active'
        AND (valid_until IS NULL OR valid_until > :valid)
    UNION ALL
    SELECT * FROM records INDEXED BY records_field_valid_fork WHERE {then}
        AND valid_fork IN ({_VALID_FORKS}) AND status = 'invalid' AND valid_until > :valid
    UNION ALL
    SELECT * FROM records INDEXED BY records_field_known_fork WHERE :closings AND {then}
        AND known_fork IN ({_KNOWN_FORKS}) AND status = 'invalid'
        AND (valid_until IS NULL OR valid_until <= :valid) AND closed_at > :known)
{_NEWEST}"""
    return sql, params
