"""The roles of a store that govern memory rather than hold it: erasure, the audit log,
API keys and the listing of actors (`remem.store.roles.Store` has each as an attribute;
re-exported by `remem.store.roles`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from remem.store.values import (
    ActorSummary,
    ApiKey,
    Asked,
    AuditEntry,
    ForgetReport,
    Tombstone,
)

Key = tuple[datetime, str]  # a keyset page's position: a time and an id


class Erasure(Protocol):
    """Deletion: erase, tombstone, verify by reading, and the log of deletion jobs."""

    def forget_record(
        self,
        tenant: str,
        record_id: str,
        now: datetime,
        actor: str | None = None,
        events: Sequence[str] = (),
    ) -> ForgetReport:
        """Erase a record, its indexes and history text, and the text of the events it
        came from; a summary's events are the range it covers and stay. Tombstone, verify.
        A record no longer stored is verified by its `actor` and `events` (those its
        deletion job noted), after what they key is erased again; unverified without."""
        ...

    def forget_actor(self, tenant: str, actor: str, now: datetime) -> ForgetReport:
        """Erase every record, event, job, index entry and thread state of one actor, and
        leave (or move to `now`) the actor's tombstone; verify by reading."""
        ...

    def is_tombstoned(self, tenant: str, actor: str, event_ids: Sequence[str]) -> bool:
        """Whether work from these events would recreate what was erased: one of them was
        a forgotten record's source, or the actor was erased and one of them is no longer
        stored (it arrived before the erasure, which deleted it). Events stored after an
        actor's erasure are a fresh start and are not covered."""
        ...

    def erased_at(self, tenant: str, actor: str) -> datetime | None:
        """When the actor was last erased (its tombstone's time), or None."""
        ...

    def tombstones(self) -> list[Tombstone]:
        """Every tenant's tombstones, oldest first (`remem.lifecycle.restore`)."""
        ...

    def restore_tombstones(self, tenant: str, marks: Sequence[Tombstone]) -> int:
        """Put back `tenant`'s tombstones and empty the events they name; how many."""
        ...

    def scrub_files(self, vacuum: bool = False) -> dict[str, int]:
        """After erasures, make them reach the storage files where the backend can;
        return what is left over (all 0 when done). `vacuum` asks PostgreSQL to VACUUM
        the tables an erasure touches; SQLite always merges and checkpoints."""
        ...

    def record_deletion(
        self,
        tenant: str,
        target: str,
        key: str,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int = 1,
    ) -> int:
        """Log a deletion job (target 'record' or 'actor') with its outcome; return its id."""
        ...

    def start_deletion(
        self, tenant: str, target: str, key: str, now: datetime, actor: str | None = None,
        asked: Asked | None = None, events: Sequence[str] = (),
    ) -> int:  # fmt: skip
        """Log a deletion job as running, before it erases anything (whose data, who asked
        and why, the events whose text goes with a record); return its id."""
        ...

    def finish_deletion(
        self,
        tenant: str,
        job_id: int,
        report: ForgetReport | None,
        error: str | None,
        now: datetime,
        attempts: int,
    ) -> None:
        """End a deletion job `start_deletion` logged, with its outcome."""
        ...

    def interrupted(self, before: datetime) -> list[str]:
        """The tenants (of every tenant) with a deletion job still running that started at
        or before `before`: left by a process that died midway (`remem.lifecycle.erasure.
        finish_every_interrupted`)."""
        ...

    def settle_scope(self, tenant: str, actor: str) -> None:
        """Drop what the backend derives from a scope's rows outside them (after an erasure
        whose process died before reading it back)."""
        ...

    def deletions(
        self, tenant: str, limit: int = 100, before: int | None = None
    ) -> list[dict[str, Any]]: ...

    def deletion(self, tenant: str, job_id: int) -> dict[str, Any] | None: ...


def tombstoned(erasure: Erasure, tenant: str, actor: str, event_ids: Sequence[str]) -> set[str]:
    """Those of `event_ids` a tombstone covers (`Erasure.is_tombstoned`): one read for
    them all, and one each only when any is, which is rare."""
    if not event_ids or not erasure.is_tombstoned(tenant, actor, event_ids):
        return set()
    return {e for e in event_ids if erasure.is_tombstoned(tenant, actor, [e])}


class AuditLog(Protocol):
    """The append-only audit log (`remem.store.flows.audit`): ids and counts, no content."""

    def append(self, tenant: str, entry: AuditEntry, now: datetime) -> None:
        """Append one row to the tenant's audit log."""
        ...

    def audit_log(
        self, tenant: str, *, actor: str | None = None, key_id: str | None = None,
        action: str | None = None, before: int | None = None, limit: int = 100,
    ) -> list[dict[str, Any]]: ...  # fmt: skip

    def prune_audit(self, tenant: str, before: datetime) -> int: ...


class KeyStore(Protocol):
    """API keys: the principals of the HTTP service and the MCP server (`remem.service.keys`)."""

    def add_key(self, key: ApiKey, key_hash: str) -> None:
        """Store a new key under the hash of its secret (the secret itself is never stored)."""
        ...

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The unrevoked key whose secret hashes to `key_hash`, in any tenant.

        This is how a request's tenant is found, so it is the one key read that
        cannot be bound to a tenant beforehand.
        """
        ...

    def list_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant), oldest first, revoked ones included."""
        ...

    def keys_page(
        self, tenant: str, actor: str | None, after: Key | None, limit: int
    ) -> list[ApiKey]:
        """A keyset page of keys (one actor's, when given): by (created_at, id), after `after`."""
        ...

    def get_key(self, key_id: str, tenant: str | None = None) -> ApiKey | None:
        """One key by id, or None (also for a key of another tenant than `tenant`)."""
        ...

    def revoke_key(self, key_id: str, now: datetime, tenant: str | None = None) -> ApiKey | None:
        """Mark a key revoked at `now` (a revoked key keeps its first time); return it as
        it now is, or None when there is no such key (in `tenant`, when given)."""
        ...


class ActorListing(Protocol):
    """The tenant's actors with their counts (`remem.store.flows.actors`)."""

    def summaries(
        self, tenant: str, *, only: str | None = None, contains: str = "", limit: int = 200
    ) -> list[ActorSummary]:
        """Actors (only `only`) whose name contains `contains`, most recently active first."""
        ...
