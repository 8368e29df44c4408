"""API keys: the principals of the HTTP service.

A key is `rk_` and 43 characters of 32 random bytes. Only its sha256 is
stored; the secret is handed out once, by `create_key`. A key names a tenant,
optionally one actor (NULL: every actor of the tenant), and a role:

    agent      events, retrieve, records (read, batch create/update/delete)
    reviewer   an agent that may also approve or reject proposed procedures
    admin      a reviewer that may also forget and export a subject

The tenant's shared records (procedures every actor's recall returns) are
changed only by keys for the whole tenant: `authorize` holds that rule, and
every surface asks it (HTTP, MCP). An actor's key proposes, reviews and
changes only its own actor's records; only a tenant-wide reviewer approves or
rejects a shared proposal, and only a tenant-wide admin changes or forgets a
shared record. The CLI runs as the operator, with no key: a tenant-wide admin.

The tenant and the actors a request may touch come from its key, never from
its body (DESIGN.md section 4). This module holds the pure parts (roles,
principals, secrets and their hashes, validation); the rows are kept by the
store (`Store.add_key`, `key_by_hash`, `list_keys`, `get_key`, `revoke_key`),
on SQLite or PostgreSQL alike.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Literal

from remem.errors import InvalidInput, NotFound, RememError
from remem.ids import new_id
from remem.model import Record
from remem.policy.scope import SHARED_ACTOR, check_name
from remem.store.base import ApiKey, Store
from remem.timeutil import to_db, utcnow

__all__ = [
    "KEY_PREFIX",
    "ROLES",
    "ApiKey",
    "Forbidden",
    "Principal",
    "Unauthorized",
    "authorize",
    "create_key",
    "list_keys",
    "revoke_key",
    "verify_key",
]

ROLES = ("agent", "reviewer", "admin")
KEY_PREFIX = "rk_"
MAX_SECRET_CHARS = 200  # anything longer is no key of ours; refused before hashing
_RANK = {role: i for i, role in enumerate(ROLES)}


class Unauthorized(RememError):
    """No API key, or one that is unknown or revoked (HTTP 401)."""

    code = "unauthorized"


class Forbidden(RememError):
    """The key does not allow this actor, namespace or operation (HTTP 403)."""

    code = "forbidden"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: what a verified key allows."""

    key_id: str
    tenant: str
    actor: str | None  # None: every actor of the tenant
    role: str

    def has_role(self, role: str) -> bool:
        """Whether this principal holds `role` or a stronger one."""
        return _RANK[self.role] >= _RANK[role]

    def allows(self, actor: str) -> bool:
        """Whether this principal may act on `actor`'s memory."""
        return self.actor is None or self.actor == actor

    def may_see(self, record: Record | None, *, write: bool = False) -> bool:
        """Whether this principal may read (or, with `write`, change) a record.

        The tenant's shared procedures are readable by every key; only a
        tenant-wide admin may change them (`authorize`).
        """
        if record is None or record.tenant != self.tenant:
            return False
        if not (self.allows(record.actor) or record.actor == SHARED_ACTOR):
            return False
        return not write or refusal(self, "change", record.actor) is None


Action = Literal["propose", "review", "change"]


def refusal(who: Principal, action: Action, actor: str) -> str | None:
    """Why `who` may not `action` a record about `actor` (SHARED_ACTOR: the tenant's
    shared records), or None when it may. Pure: the one rule every surface applies.

    propose  a record for an actor the key allows; a shared one needs a tenant-wide key
    review   approve or reject: a reviewer for an actor it allows; a shared proposal
             needs a tenant-wide reviewer
    change   update or forget one record: one of an actor the key allows; a shared
             record needs a tenant-wide admin
    """
    shared = actor == SHARED_ACTOR
    if action == "review" and not who.has_role("reviewer"):
        return f"reviewing a procedure needs a reviewer key; this key is {who.role}"
    if shared:
        if who.actor is not None:
            what = {"propose": "proposing", "review": "reviewing", "change": "changing"}[action]
            return (
                f"{what} a procedure shared by the whole tenant needs a key for the whole "
                f"tenant; this key is for actor {who.actor!r}"
            )
        if action == "change" and not who.has_role("admin"):
            return (
                "changing or forgetting a record shared by the whole tenant needs an admin "
                f"key; this key is {who.role}"
            )
        return None
    if not who.allows(actor):
        return f"this API key may not act on actor {actor!r}"
    return None


def authorize(who: Principal, action: Action, actor: str) -> None:
    """Raise Forbidden unless `who` may `action` a record about `actor` (see `refusal`)."""
    reason = refusal(who, action, actor)
    if reason is not None:
        raise Forbidden(reason)


def create_key(
    store: Store, *, tenant: str, actor: str | None = None, role: str = "agent"
) -> tuple[ApiKey, str]:
    """Create a key; return it and its secret, which is never shown again."""
    check_name("tenant", tenant)
    if actor is not None:
        check_name("actor", actor)
    if role not in _RANK:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(new_id("key"), tenant, actor, role, str(to_db(utcnow())), None)
    store.add_key(key, _digest(secret))
    return key, secret


def verify_key(store: Store, secret: str) -> Principal | None:
    """The principal of a valid, unrevoked key; None for anything else."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > MAX_SECRET_CHARS:
        return None
    # found by the sha256 of 256 random bits: how long the lookup takes reveals
    # at most a prefix of a hash, which brings no one closer to a secret
    key = store.key_by_hash(_digest(secret))
    if key is None:
        return None
    return Principal(key.id, key.tenant, key.actor, key.role)


def list_keys(store: Store, tenant: str | None = None) -> list[ApiKey]:
    """Every key (of one tenant), oldest first, revoked ones included."""
    return store.list_keys(tenant)


def revoke_key(store: Store, key_id: str, tenant: str | None = None) -> ApiKey:
    """Revoke a key (of `tenant`, when given) at once; revoking a revoked key changes nothing."""
    key = store.revoke_key(key_id, utcnow(), tenant)
    if key is None:
        where = "" if tenant is None else " in this tenant"
        raise NotFound(f"no API key {key_id!r}{where}; `remem keys list` shows them")
    return key


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
