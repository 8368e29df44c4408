"""The audit log is append-only in the database, not only in remem's code: a trigger on
each backend refuses an UPDATE of a row, and a DELETE of a row younger than the
shortest retention (`remem.service.audit.KEPT_AT_LEAST_DAYS`), through the store's own
connection; the service's purge of rows past the retention still runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from remem.errors import RememError
from remem.service import audit
from remem.store.open import open_store
from remem.store.values import AuditEntry
from remem.timeutil import utcnow


def _entry(actor: str) -> AuditEntry:
    return AuditEntry("key_1", "read", actor, None, {"surface": "api"})


def test_an_audit_row_cannot_be_changed_or_removed_early(db: str) -> None:
    store = open_store(db)
    try:
        now = utcnow()
        store.audit.append("acme", _entry("alice"), now)
        old = now - timedelta(days=audit.KEPT_AT_LEAST_DAYS + 5)
        store.audit.append("acme", _entry("bob"), old)

        with pytest.raises(RememError, match="append-only"):
            store.backend.write("acme", "UPDATE audit_log SET actor = 'mallory'", {})
        with pytest.raises(RememError, match="append-only"):
            store.backend.write("acme", "DELETE FROM audit_log", {})  # the recent row is refused
        with pytest.raises(RememError, match="append-only"):  # and the purge cannot reach it
            store.audit.prune_audit("acme", now + timedelta(minutes=1))
        if db.startswith("postgresql"):  # SQLite has no TRUNCATE
            with pytest.raises(RememError, match="append-only"):
                store.backend.write("acme", "TRUNCATE audit_log", {})
        assert [r["actor"] for r in store.audit.audit_log("acme")] == ["bob", "alice"]

        # the purge of rows past the retention runs, and takes only them
        assert store.audit.prune_audit("acme", now - timedelta(days=audit.KEPT_AT_LEAST_DAYS)) == 1
        assert [r["actor"] for r in store.audit.audit_log("acme")] == ["alice"]
    finally:
        store.close()


def test_the_retention_setting_cannot_go_below_what_the_database_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REMEM_AUDIT_DAYS", str(audit.KEPT_AT_LEAST_DAYS - 1))
    with pytest.raises(RememError, match=f">= {audit.KEPT_AT_LEAST_DAYS}"):
        audit.retention_days()
    monkeypatch.setenv("REMEM_AUDIT_DAYS", str(audit.KEPT_AT_LEAST_DAYS))
    assert audit.retention_days() == audit.KEPT_AT_LEAST_DAYS


def test_a_purge_the_database_refuses_fails_no_request(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's clock a few minutes ahead of PostgreSQL's (or SQLite's 'now'): at
    the shortest retention its purge reaches rows the trigger still keeps. The purge is
    refused whole; the row being appended, and the request that made it, stand."""
    from remem.policy.scope import Principal

    store = open_store(db)
    try:
        monkeypatch.setenv("REMEM_AUDIT_DAYS", str(audit.KEPT_AT_LEAST_DAYS))
        real = utcnow()
        young = real - timedelta(days=audit.KEPT_AT_LEAST_DAYS) + timedelta(minutes=1)
        store.audit.append("acme", _entry("bob"), young)
        monkeypatch.setattr(audit, "utcnow", lambda: real + timedelta(minutes=5))
        monkeypatch.setattr(audit, "_pruned", {})  # a purge is due
        who = Principal("key_1", "acme", None, "admin")
        audit.note(store.audit, who, "read", "api", actor="alice", records=1)
        assert [r["actor"] for r in store.audit.audit_log("acme")] == ["alice", "bob"]
    finally:
        store.close()
