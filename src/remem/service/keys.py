"""API keys: the principals of the HTTP service.

A key is `rk_` and 43 characters of 32 random bytes. Only its sha256 is
stored; the secret is handed out once, by `create_key`. A key names a tenant,
optionally one actor (NULL: every actor of the tenant), and a role:

    agent      events, retrieve, records (read, batch create/update/delete)
    reviewer   an agent that may also approve or reject proposed procedures
    admin      a reviewer that may also forget and export a subject

The tenant and the actors a request may touch come from its key, never from
its body (DESIGN.md section 4).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from remem.errors import InvalidInput, NotFound, RememError
from remem.ids import new_id
from remem.model import Record
from remem.policy.scope import SHARED_ACTOR, check_name
from remem.store.sqlite import SQLiteStore
from remem.timeutil import to_db, utcnow

ROLES = ("agent", "reviewer", "admin")
KEY_PREFIX = "rk_"
_RANK = {role: i for i, role in enumerate(ROLES)}

_INSERT = """
INSERT INTO api_keys (id, tenant, actor, role, key_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)
"""
_BY_HASH = "SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"
_LIST = "SELECT * FROM api_keys ORDER BY created_at, id"
_LIST_TENANT = "SELECT * FROM api_keys WHERE tenant = ? ORDER BY created_at, id"
_GET = "SELECT * FROM api_keys WHERE id = ?"
_REVOKE = "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"


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

        The tenant's shared procedures are readable by every key, never writable.
        """
        if record is None or record.tenant != self.tenant:
            return False
        return self.allows(record.actor) or (record.actor == SHARED_ACTOR and not write)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key, without its secret."""

    id: str
    tenant: str
    actor: str | None
    role: str
    created_at: str
    revoked_at: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "actor": self.actor,
            "role": self.role,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def create_key(
    store: SQLiteStore, *, tenant: str, actor: str | None = None, role: str = "agent"
) -> tuple[ApiKey, str]:
    """Create a key; return it and its secret, which is never shown again."""
    check_name("tenant", tenant)
    if actor is not None:
        check_name("actor", actor)
    if role not in _RANK:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(new_id("key"), tenant, actor, role, str(to_db(utcnow())), None)
    with store._tx() as db:
        db.execute(_INSERT, (key.id, tenant, actor, role, _digest(secret), key.created_at))
    return key, secret


def verify_key(store: SQLiteStore, secret: str) -> Principal | None:
    """The principal of a valid, unrevoked key; None for anything else."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
        return None
    digest = _digest(secret)
    rows = store._rows(_BY_HASH, (digest,))
    # the lookup is by a hash of 256 random bits; the compare is constant-time anyway
    if not rows or not hmac.compare_digest(str(rows[0]["key_hash"]), digest):
        return None
    r = rows[0]
    return Principal(r["id"], r["tenant"], r["actor"], r["role"])


def list_keys(store: SQLiteStore, tenant: str | None = None) -> list[ApiKey]:
    """Every key (of one tenant), oldest first, revoked ones included."""
    rows = store._rows(_LIST) if tenant is None else store._rows(_LIST_TENANT, (tenant,))
    return [_key(r) for r in rows]


def revoke_key(store: SQLiteStore, key_id: str) -> ApiKey:
    """Revoke a key at once; revoking a revoked key changes nothing."""
    with store._tx() as db:
        db.execute(_REVOKE, (to_db(utcnow()), key_id))
    rows = store._rows(_GET, (key_id,))
    if not rows:
        raise NotFound(f"no API key {key_id!r}; `remem keys list` shows them")
    return _key(rows[0])


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _key(r: Any) -> ApiKey:
    return ApiKey(r["id"], r["tenant"], r["actor"], r["role"], r["created_at"], r["revoked_at"])
