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


def namespace_for(tenant: str, actor: str, kind: Kind) -> str:
    """The namespace a record of `kind` about `actor` lives in."""
    return f"/tenants/{tenant}/actors/{actor}/{NAMESPACE_BY_KIND[kind]}"


def actor_prefix(tenant: str, actor: str) -> str:
    """The namespace prefix that holds everything about one actor."""
    return f"/tenants/{tenant}/actors/{actor}/"
