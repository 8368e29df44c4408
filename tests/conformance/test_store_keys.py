"""The store contract for API keys: kept by hash, found across tenants, listed, revoked.

What a key allows, and how its secret is made, is `remem.service.keys`; here
only the rows, on every backend.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from remem.store.roles import ApiKey, Store
from remem.timeutil import to_db

NOW = datetime(2026, 6, 1, 9, 30, 15, 123456, tzinfo=UTC)


def key(
    kid: str, tenant: str, minutes: int, actor: str | None = None, role: str = "agent"
) -> ApiKey:
    return ApiKey(kid, tenant, actor, role, str(to_db(NOW + timedelta(minutes=minutes))), None)


def test_a_key_is_found_by_its_hash_in_any_tenant(store: Store) -> None:
    admin, bob = key("key_a", "t1", 0, role="admin"), key("key_b", "t2", 1, actor="bob")
    store.keys.add_key(admin, "a" * 64)
    store.keys.add_key(bob, "b" * 64)
    assert store.keys.key_by_hash("a" * 64) == admin  # times come back exactly as written
    assert store.keys.key_by_hash("b" * 64) == bob
    assert store.keys.key_by_hash("c" * 64) is None
    assert store.keys.key_by_hash("") is None


def test_keys_are_listed_oldest_first_and_per_tenant(store: Store) -> None:
    later, first, other = key("key_1", "t1", 5), key("key_2", "t1", 1), key("key_3", "t2", 3)
    for i, k in enumerate((later, first, other)):
        store.keys.add_key(k, f"{i}" * 64)
    assert store.keys.list_keys() == [first, other, later]
    assert store.keys.list_keys("t1") == [first, later]
    assert store.keys.list_keys("t3") == []
    assert store.keys.get_key("key_3") == other
    assert store.keys.get_key("key_3", "t2") == other
    assert store.keys.get_key("key_3", "t1") is None  # another tenant's key is not there
    assert store.keys.get_key("key_9") is None


def test_a_revoked_key_is_no_longer_found_and_keeps_its_first_revocation(store: Store) -> None:
    k = key("key_r", "t1", 0, actor="alice")
    store.keys.add_key(k, "r" * 64)
    # revoking in another tenant touches nothing
    assert store.keys.revoke_key("key_r", NOW, tenant="t2") is None
    assert store.keys.key_by_hash("r" * 64) == k
    revoked = store.keys.revoke_key("key_r", NOW + timedelta(hours=1), tenant="t1")
    assert revoked == replace(k, revoked_at=to_db(NOW + timedelta(hours=1)))
    assert store.keys.key_by_hash("r" * 64) is None
    assert (
        store.keys.revoke_key("key_r", NOW + timedelta(days=1)) == revoked
    )  # the first time stays
    assert store.keys.list_keys("t1") == [revoked] and store.keys.get_key("key_r") == revoked
    assert store.keys.revoke_key("key_missing", NOW) is None


def test_the_store_answers_a_ping(store: Store) -> None:
    assert store.ping() is None
