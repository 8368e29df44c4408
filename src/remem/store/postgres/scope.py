"""The WHERE clause of one scope on PostgreSQL, shared by every statement builder."""

from __future__ import annotations

from typing import Any

from remem.store.roles import Scope
from remem.store.text import like_prefix


def scope_where(scope: Scope, alias: str = "") -> tuple[str, dict[str, Any]]:
    """The WHERE clause of one scope with its named parameters (`tenant`, `actor`, and
    `prefix` when a namespace prefix narrows it, LIKE wildcards escaped)."""
    a = f"{alias}." if alias else ""
    sql = f"{a}tenant = %(tenant)s AND {a}actor = %(actor)s"
    params: dict[str, Any] = {"tenant": scope.tenant, "actor": scope.actor}
    if scope.namespace_prefix:
        sql += f" AND {a}namespace LIKE %(prefix)s ESCAPE '\\'"
        params["prefix"] = like_prefix(scope.namespace_prefix)
    return sql, params
