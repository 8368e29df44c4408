"""The WHERE clause of one scope on PostgreSQL, shared by every statement builder."""

from __future__ import annotations

from typing import Any

from remem.store.roles import Scope
from remem.store.rows import json_text
from remem.store.text import like_prefix


def scope_where(scope: Scope, alias: str = "") -> tuple[str, dict[str, Any]]:
    """The WHERE clause of one scope with its named parameters (`tenant`, `actor`,
    `prefix` when a namespace prefix narrows it, LIKE wildcards escaped, and `mk0`,
    `mv0`, ... for each pair of a metadata filter)."""
    a = f"{alias}." if alias else ""
    sql = f"{a}tenant = %(tenant)s AND {a}actor = %(actor)s"
    params: dict[str, Any] = {"tenant": scope.tenant, "actor": scope.actor}
    if scope.namespace_prefix:
        sql += f" AND {a}namespace LIKE %(prefix)s ESCAPE '\\'"
        params["prefix"] = like_prefix(scope.namespace_prefix)
    for i, (key, value) in enumerate(scope.metadata):
        # jsonb equality is `remem.policy.metadata.same`: the same type, an equal value
        # (1 = 1.0, never true or "1"); a missing key is NULL, so no match
        sql += f" AND ({a}metadata::jsonb -> %(mk{i})s) = %(mv{i})s::jsonb"
        params[f"mk{i}"] = key
        params[f"mv{i}"] = json_text(value)
    return sql, params
