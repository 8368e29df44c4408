"""API keys, the principals of the HTTP service and the MCP server: written once.

`ApiKeys` is the keys role of both stores (`Store.keys`), composed over their backend. A
key row holds the sha256 of its secret, never the secret; what a key may do, and how its
secret is made and hashed, is decided above the store, in `remem.service.keys`. A
statement that knows its tenant runs bound to it (on PostgreSQL `api_keys` is a tenant
table under forced row-level security like every other,
`postgres/migrations/0006_keys.sql`). Three span tenants by design (`EVERY_TENANT`): the
lookup by hash, which is how a request's tenant is found and so cannot wait for it (at
most one row, matched on the hash of 256 random bits), and the operator's listing and
revoking of keys of every tenant (`remem keys list`, `remem keys revoke`), which name no
tenant. Times come back in the fixed ISO form (`remem.timeutil.to_db`) on both backends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from remem.store.flows.backend import Backend, Row
from remem.store.roles import ApiKey
from remem.timeutil import parse_time, to_db

FIRST_TIME = datetime(1, 1, 1, tzinfo=UTC)  # before every key: the first page

EVERY_TENANT = None  # a statement spanning tenants by design


class KeySQL(Protocol):
    """The named statements of API keys."""

    INSERT_KEY: str  # id, tenant, actor, role, key_hash, created_at, name
    KEY_BY_HASH: str  # key_hash (unrevoked only)
    LIST_KEYS: str  # (every tenant)
    LIST_TENANT_KEYS: str  # tenant
    PAGE_KEYS: str  # tenant, actor (NULL: any), after_at, after_id, limit
    GET_KEY: str  # key_id
    GET_TENANT_KEY: str  # key_id, tenant
    REVOKE_KEY: str  # at, key_id
    REVOKE_TENANT_KEY: str  # at, key_id, tenant


class ApiKeys:
    """The keys role of a store (`remem.store.roles.KeyStore`), written once over its
    `backend` and its dialect's statements `sql`."""

    def __init__(self, backend: Backend, sql: KeySQL) -> None:
        self.backend, self.sql = backend, sql

    def add_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key under the hash of its secret, bound to the key's tenant."""
        params = {
            "id": key.id,
            "tenant": key.tenant,
            "actor": key.actor,
            "role": key.role,
            "key_hash": key_hash,
            "created_at": self.backend.at(parse_time(key.created_at)),
            "name": key.name,
        }
        with self.backend.transaction(key.tenant) as db:
            db.execute(self.sql.INSERT_KEY, params)

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The unrevoked key whose secret hashes to `key_hash`, in any tenant."""
        rows = self.backend.read(EVERY_TENANT, self.sql.KEY_BY_HASH, {"key_hash": key_hash})
        return self._key(rows[0]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant), oldest first, revoked ones included."""
        q = self.sql
        sql = q.LIST_KEYS if tenant is None else q.LIST_TENANT_KEYS
        return [self._key(r) for r in self.backend.read(tenant, sql, {"tenant": tenant})]

    def keys_page(
        self, tenant: str, actor: str | None, after: tuple[datetime, str] | None, limit: int
    ) -> list[ApiKey]:
        """Up to `limit` of a tenant's keys (of one actor's), oldest first by (created_at,
        id), after `after` (None: from the oldest): a page of a keyset."""
        at, key_id = after if after is not None else (FIRST_TIME, "")
        params = {
            "tenant": tenant,
            "actor": actor,
            "after_at": self.backend.at(at),
            "after_id": key_id,
            "limit": limit,
        }
        return [self._key(r) for r in self.backend.read(tenant, self.sql.PAGE_KEYS, params)]

    def get_key(self, key_id: str, tenant: str | None = None) -> ApiKey | None:
        """One key by id (of `tenant` when given), or None."""
        q = self.sql
        sql = q.GET_KEY if tenant is None else q.GET_TENANT_KEY
        rows = self.backend.read(tenant, sql, {"key_id": key_id, "tenant": tenant})
        return self._key(rows[0]) if rows else None

    def revoke_key(self, key_id: str, now: datetime, tenant: str | None = None) -> ApiKey | None:
        """Revoke a key at `now` unless it already is; the key as it now is, or None."""
        q = self.sql
        params: dict[str, Any] = {"at": self.backend.at(now), "key_id": key_id, "tenant": tenant}
        revoke, get = (
            (q.REVOKE_KEY, q.GET_KEY) if tenant is None else (q.REVOKE_TENANT_KEY, q.GET_TENANT_KEY)
        )
        with self.backend.transaction(tenant) as db:
            db.execute(revoke, params)
            rows = db.execute(get, params).fetchall()
        return self._key(rows[0]) if rows else None

    def _key(self, r: Row) -> ApiKey:
        revoked = r["revoked_at"]
        return ApiKey(
            r["id"],
            r["tenant"],
            r["actor"],
            r["role"],
            str(to_db(self.backend.time(r["created_at"]))),
            str(to_db(self.backend.time(revoked))) if revoked is not None else None,
            r["name"],
        )
