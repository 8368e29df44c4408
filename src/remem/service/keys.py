"""API keys: the principals of the HTTP service.

A key is `rk_` and 43 characters of 32 random bytes. Only its sha256 is
stored; the secret is handed out once, by `create_key`. A key names a tenant,
optionally one actor (NULL: every actor of the tenant), and a role:

    agent      events, retrieve, records (read, batch create/update/delete)
    reviewer   an agent that may also approve or reject proposed procedures
    admin      a reviewer that may also forget and export a subject

The tenant's shared records (procedures every actor's recall returns) are
changed only by keys for the whole tenant: `authorize` holds that rule, and
every surface asks it (HTTP, MCP); `Principal`, the roles and that rule live
in `remem.policy.scope` and are re-exported here. An actor's key proposes,
reviews and changes only its own actor's records; only a tenant-wide
reviewer approves or rejects a shared proposal, and only a tenant-wide admin
changes or forgets a shared record. The CLI runs as the operator, with no key: a tenant-wide admin.

The tenant and the actors a request may touch come from its key, never from
its body (DESIGN.md section 4). This module holds secrets, their hashes and
their validation; the rows are kept by the store (`KeyStore.add_key`,
`key_by_hash`, `list_keys`, `get_key`, `revoke_key`), on SQLite or PostgreSQL
alike.
"""

from __future__ import annotations

import hashlib
import secrets

from remem.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from remem.ids import new_id
from remem.policy.dataclasses import refuse_secrets, shown
from remem.policy.scope import ROLES, Principal, authorize, named, refusal, stored_name
from remem.store.roles import ApiKey, KeyStore
from remem.timeutil import to_db, utcnow
from remem.writes.checks import check_strings

__all__ = [
    "KEY_PREFIX",
    "ROLES",
    "ApiKey",
    "Forbidden",
    "Principal",
    "Unauthorized",
    "authorize",
    "create_key",
    "key_name",
    "list_keys",
    "refusal",
    "revoke_key",
    "verify_key",
]

KEY_PREFIX = "rk_"
MAX_SECRET_CHARS = 200  # anything longer is no key of ours; refused before hashing
KEY_NAME_MAX = 100  # the characters of a key's name ("support desk", "ops: alice")


def create_key(
    keys: KeyStore,
    *,
    tenant: str,
    actor: str | None = None,
    role: str = "agent",
    name: str | None = None,
) -> tuple[ApiKey, str]:
    """Create a key (with `name`, whose key it is: see `key_name`); return it and its
    secret, which is never shown again."""
    stored_name("tenant", tenant)
    if actor is not None:
        stored_name("actor", actor)
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {shown(role)}")
    label = key_name(name)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(new_id("key"), tenant, actor, role, str(to_db(utcnow())), None, label)
    keys.add_key(key, _digest(secret))
    return key, secret


def verify_key(keys: KeyStore, secret: str) -> Principal | None:
    """The principal of a valid, unrevoked key; None for anything else."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > MAX_SECRET_CHARS:
        return None
    # found by the sha256 of 256 random bits: how long the lookup takes reveals
    # at most a prefix of a hash, which brings no one closer to a secret
    key = keys.key_by_hash(_digest(secret))
    if key is None:
        return None
    return Principal(key.id, key.tenant, key.actor, key.role, key.name)


def key_name(name: str | None) -> str | None:
    """A key's name as stored: stripped (empty: None), at most `KEY_NAME_MAX` characters,
    one printable line, screened like every stored string (secrets)."""
    label = (name or "").strip() or None
    if label is None:
        return None
    if len(label) > KEY_NAME_MAX:
        raise InvalidInput(f"a key's name is at most {KEY_NAME_MAX} characters; got {len(label)}")
    if not label.isprintable():
        raise InvalidInput("a key's name is one line of printable text (no control characters)")
    check_strings(key_name=label)
    refuse_secrets({"key's name": label})
    return label


def list_keys(keys: KeyStore, tenant: str | None = None) -> list[ApiKey]:
    """Every key (of one tenant), oldest first, revoked ones included."""
    return keys.list_keys(tenant)


def revoke_key(keys: KeyStore, key_id: str, tenant: str | None = None) -> ApiKey:
    """Revoke a key (of `tenant`, when given) at once; revoking a revoked key changes nothing."""
    key = keys.revoke_key(key_id, utcnow(), tenant)
    if key is None:
        where = "" if tenant is None else " in this tenant"
        raise NotFound(f"no API key {named(key_id)}{where}; `remem keys list` shows them")
    return key


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
