"""The SQLite store's API keys: the principals of the HTTP service and the MCP server.

A mixin of `SQLiteStore` (as `remem.store.sqlite_search` is). A key row holds
the sha256 of its secret, never the secret (`sqlite_migrations/0003_keys.sql`);
what a key may do, and how its secret is made and hashed, is decided above
the store, in `remem.service.keys`. One file is one trust domain, so the
lookup by hash needs no tenant; the statements that can name one do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from remem.store import sqlite_sql as q
from remem.store.base import ApiKey
from remem.timeutil import to_db


class SQLiteKeys:
    """Key methods of `Store`; `SQLiteStore` supplies the connection."""

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def add_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key under the hash of its secret."""
        with self._tx() as db:
            db.execute(
                q.INSERT_KEY,
                (key.id, key.tenant, key.actor, key.role, key_hash, key.created_at),
            )

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The unrevoked key whose secret hashes to `key_hash`, in any tenant."""
        rows = self._rows(q.KEY_BY_HASH, (key_hash,))
        return _key(rows[0]) if rows else None

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant), oldest first, revoked ones included."""
        if tenant is None:
            return [_key(r) for r in self._rows(q.LIST_KEYS)]
        rows = self._rows(q.LIST_TENANT_KEYS, (tenant,))
        return [_key(r) for r in rows]

    def get_key(self, key_id: str, tenant: str | None = None) -> ApiKey | None:
        """One key by id (of `tenant` when given), or None."""
        if tenant is None:
            rows = self._rows(q.GET_KEY, (key_id,))
        else:
            rows = self._rows(q.GET_TENANT_KEY, (key_id, tenant))
        return _key(rows[0]) if rows else None

    def revoke_key(self, key_id: str, now: datetime, tenant: str | None = None) -> ApiKey | None:
        """Revoke a key at `now` unless it already is; the key as it now is, or None."""
        with self._tx() as db:
            if tenant is None:
                db.execute(q.REVOKE_KEY, (to_db(now), key_id))
            else:
                db.execute(q.REVOKE_TENANT_KEY, (to_db(now), key_id, tenant))
        return self.get_key(key_id, tenant)

    def ping(self) -> None:
        """Return if the database answers (the service's liveness probe)."""
        self._rows(q.PING)


def _key(r: sqlite3.Row) -> ApiKey:
    return ApiKey(r["id"], r["tenant"], r["actor"], r["role"], r["created_at"], r["revoked_at"])
