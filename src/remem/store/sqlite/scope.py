"""The WHERE clause of one scope on SQLite, shared by every statement builder."""

from __future__ import annotations

from typing import Any

from remem.policy.metadata import json_type
from remem.store.roles import Scope
from remem.store.text import like_prefix


def scope_where(scope: Scope, alias: str = "") -> tuple[str, dict[str, Any]]:
    """The WHERE clause of one scope with its named parameters (`tenant`, `actor`, and
    `prefix` when a namespace prefix narrows it, LIKE wildcards escaped)."""
    a = f"{alias}." if alias else ""
    sql = f"{a}tenant = :tenant AND {a}actor = :actor"
    params: dict[str, Any] = {"tenant": scope.tenant, "actor": scope.actor}
    if scope.namespace_prefix:
        sql += f" AND {a}namespace LIKE :prefix ESCAPE '\\'"
        params["prefix"] = like_prefix(scope.namespace_prefix)
    for i, (key, value) in enumerate(scope.metadata):
        sql += f" AND {metadata_match(f'{a}metadata', i, value)}"
        params[f"mk{i}"] = key
        if json_type(value) in ("text", "number"):
            params[f"mv{i}"] = value
    return sql, params


def metadata_match(column: str, i: int, value: object) -> str:
    """The condition that a record's metadata (JSON text in `column`) has the key `:mk{i}`
    with a value equal to `:mv{i}` as `remem.policy.metadata.same` says: the same JSON
    type (either kind of number for a number), the same value."""
    each = f"SELECT 1 FROM json_each({column}) WHERE key = :mk{i}"
    kind = json_type(value)  # type: ignore[arg-type]
    if kind == "number":
        return f"EXISTS ({each} AND type IN ('integer', 'real') AND atom = :mv{i})"
    if kind == "text":
        return f"EXISTS ({each} AND type = 'text' AND atom = :mv{i})"
    return f"EXISTS ({each} AND type = '{kind}')"
