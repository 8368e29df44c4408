"""Scope: namespaces come from the principal, never from the text of a request."""

from __future__ import annotations

import re

from remem.errors import InvalidInput
from remem.model import Kind

# The subject of a tenant's shared records (procedures, policy). Names checked
# by `check_name` cannot start with "_", so no user can act as it.
SHARED_ACTOR = "_shared"

# matched whole (fullmatch): `$` would also match before a final newline ("alice\n")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:+-]{0,199}")

# client keys (request ids, idempotency keys): printable ASCII without spaces, matched whole
_KEY = re.compile(r"[\x21-\x7e]+")
# namespaces: no spaces, line ends or control characters, matched whole
_NAMESPACE = re.compile(r"[^\s\x00-\x1f\x7f]{1,1000}")

NAMESPACE_BY_KIND: dict[Kind, str] = {
    Kind.SEMANTIC: "facts",
    Kind.PREFERENCE: "preferences",
    Kind.SUMMARY: "summaries",
    Kind.EPISODIC: "episodes",
    Kind.PROCEDURAL: "procedures",
}


def check_name(what: str, value: object) -> str:
    """Validate a tenant, actor or session name; return it unchanged."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInput(
            f"{what} must be 1-200 characters of letters, digits and . _ @ : + - "
            f"starting with a letter or digit; got {value!r}"
        )
    return value


def key_problem(what: str, value: object, limit: int = 200) -> str | None:
    """Why `value` is no usable client key (a request id, an idempotency key), or None
    when it is one: 1-`limit` printable ASCII characters without spaces."""
    if isinstance(value, str) and len(value) <= limit and _KEY.fullmatch(value):
        return None
    return f"{what} must be 1-{limit} printable ASCII characters without spaces; got {value!r}"


def namespace_problem(value: object) -> str | None:
    """Why `value` is no usable namespace text, or None (where it may lie is the caller's)."""
    if isinstance(value, str) and _NAMESPACE.fullmatch(value):
        return None
    return "namespace must be 1-1000 characters without spaces, line ends or control characters"


def valid_request_id(value: str | None) -> str | None:
    """A request id as given (None stays None); ValueError, as pydantic validators raise,
    for one that `key_problem` refuses. Used by every surface's batch model."""
    if value is not None and (problem := key_problem("request_id", value)) is not None:
        raise ValueError(problem)
    return value


def namespace_for(tenant: str, actor: str, kind: Kind) -> str:
    """The namespace a record of `kind` about `actor` lives in."""
    return f"/tenants/{tenant}/actors/{actor}/{NAMESPACE_BY_KIND[kind]}"


def actor_prefix(tenant: str, actor: str) -> str:
    """The namespace prefix that holds everything about one actor."""
    return f"/tenants/{tenant}/actors/{actor}/"
