"""The PostgreSQL store's API keys: the principals of the HTTP service and the MCP server.

A mixin of `PostgresStore` (kept apart so each module reads in one sitting).
A key row holds the sha256 of its secret, never the secret; what a key may do,
and how its secret is made and hashed, is decided above the store, in
`remem.service.keys`.

`api_keys` is a tenant table under forced row-level security like every
other (`postgres_migrations/0006_keys.sql` says why it is not an exception).
A statement that knows its tenant runs bound to it. Three span tenants by
design and say so with `EVERY_TENANT`: the lookup by hash, which is how a
request's tenant is found and so cannot wait for it (at most one row, matched
on the hash of 256 random bits), and the operator's listing and revoking of
keys of every tenant (`remem keys list`, `remem keys revoke`), which name no
tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow

from remem.store import postgres_sql as q
from remem.store.base import ApiKey
from remem.store.postgres_rows import iso
from remem.timeutil import parse_time

EVERY_TENANT = None  # `ALL_TENANTS` of `remem.store.postgres`: a statement spanning tenants

Cursor = psycopg.Cursor[DictRow]


class PostgresKeys:
    """Key methods of `Store`; `PostgresStore` supplies the pool and its transactions."""

    def _tx(self, tenant: str | None) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def _rows(
        self,
        tenant: str | None,
        sql: str,
        params: Sequence[Any] = (),
        settings: Sequence[tuple[str, Sequence[Any]]] = (),
    ) -> list[DictRow]:
        raise NotImplementedError

    def add_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key under the hash of its secret, bound to the key's tenant."""
        params = (key.id, key.tenant, key.actor, key.role, key_hash, parse_time(key.created_at))
        with self._tx(key.tenant) as cur:
            cur.execute(q.INSERT_KEY, params)

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The unrevoked key whose secret hashes to `key_hash`, in any tenant."""
        rows = self._rows(EVERY_TENANT, q.KEY_BY_HASH, (key_hash,))
        return _key(rows[0]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant), oldest first, revoked ones included."""
        if tenant is None:
            rows = self._rows(EVERY_TENANT, q.LIST_KEYS)
        else:
            rows = self._rows(tenant, q.LIST_TENANT_KEYS, (tenant,))
        return [_key(r) for r in rows]

    def get_key(self, key_id: str, tenant: str | None = None) -> ApiKey | None:
        """One key by id (of `tenant` when given), or None."""
        if tenant is None:
            rows = self._rows(EVERY_TENANT, q.GET_KEY, (key_id,))
        else:
            rows = self._rows(tenant, q.GET_TENANT_KEY, (key_id, tenant))
        return _key(rows[0]) if rows else None

    def revoke_key(self, key_id: str, now: datetime, tenant: str | None = None) -> ApiKey | None:
        """Revoke a key at `now` unless it already is; the key as it now is, or None."""
        with self._tx(tenant) as cur:
            if tenant is None:
                cur.execute(q.REVOKE_KEY, (now, key_id))
                cur.execute(q.GET_KEY, (key_id,))
            else:
                cur.execute(q.REVOKE_TENANT_KEY, (now, key_id, tenant))
                cur.execute(q.GET_TENANT_KEY, (key_id, tenant))
            row = cur.fetchone()
        return _key(row) if row is not None else None

    def ping(self) -> None:
        """Return if the database answers (the service's liveness probe)."""
        self._rows(EVERY_TENANT, q.PING)


def _key(r: DictRow) -> ApiKey:
    revoked = r["revoked_at"]
    return ApiKey(
        r["id"],
        r["tenant"],
        r["actor"],
        r["role"],
        iso(r["created_at"]),
        iso(revoked) if revoked is not None else None,
    )
