"""The service's audit trail: who read an actor's memory, exported, erased, decided or
changed keys, and when (`Store.audit`, `remem.store.flows.audit`).

    note(svc, who, "read", "console", actor="alice", records=12)

A row names the key, the action, the surface (api, console, mcp; cli with the OS
user and no key: `by_operator`), whose memory and an id, with counts: never memory
content, a query, a reason or an error message, so an erasure never has to reach
it. Recalls, and the reads an agent makes every turn like them (facts, profiles,
document searches, checkpoint loads), are noted once per key, actor and surface a
minute (`recalled`); a listing of many actors' documents, a row per actor
(`read_many`). Rows are kept `retention_days()` days ($REMEM_AUDIT_DAYS, default
`RETENTION_DAYS`), pruned by the service at most once per `PRUNE_EVERY` seconds per
tenant as it appends.

Erasing an actor leaves its id in the log on purpose: the rows are the proof an
erasure, export or access happened and who asked, which a controller keeps to
show accountability (GDPR Art. 5(2); Art. 17(3)(b) and (e) let it keep what a
legal obligation or a claim needs); they hold no personal data beyond the id.
"""

from __future__ import annotations

import getpass
import logging
import os
import time
from collections.abc import Mapping
from datetime import timedelta

from remem.errors import InvalidInput, RememError
from remem.forksafe import ForkSafeLock
from remem.lifecycle.receipt import REASON_MAX as REASON_MAX  # the limit, re-exported
from remem.policy.scope import Principal
from remem.store.roles import Asked, AuditEntry, AuditLog
from remem.timeutil import utcnow

RETENTION_DAYS = 400  # a year and a bit: the default of $REMEM_AUDIT_DAYS
# the shortest retention allowed: the database refuses to delete a younger row
# (a trigger of sqlite/migrations/0012 and postgres/migrations/0016 holds the same number)
KEPT_AT_LEAST_DAYS = 30
PRUNE_EVERY = 3600.0  # seconds between two prunings of one tenant's log
ACTIONS = (
    "read",
    "recall",
    "search",
    "transcript",
    "export",
    "erase",
    "document_remove",
    "approve",
    "reject",
    "key_create",
    "key_revoke",
)

RECALL_KEYS = 10_000  # (tenant, key, actor, surface) remembered for `recalled` at most
OWNERS_NOTED = 100  # the actors of one listing noted a row each at most (`read_many`)

log = logging.getLogger(__name__)

_pruned: dict[str, float] = {}
_recalled: dict[tuple[str, str, str, str], str] = {}
_lock = ForkSafeLock()


def retention_days() -> int:
    """The days an audit row is kept: $REMEM_AUDIT_DAYS (a whole number of days, at
    least `KEPT_AT_LEAST_DAYS`), or `RETENTION_DAYS`."""
    raw = os.environ.get("REMEM_AUDIT_DAYS", "").strip()
    if not raw:
        return RETENTION_DAYS
    if not (raw.isascii() and raw.isdigit()) or int(raw) < KEPT_AT_LEAST_DAYS:
        raise InvalidInput(
            f"REMEM_AUDIT_DAYS must be a whole number of days >= {KEPT_AT_LEAST_DAYS} (the "
            f"database keeps every audit row at least that long), not {raw!r}"
        )
    return int(raw)


def note(
    trail: AuditLog,
    who: Principal,
    action: str,
    via: str | None,
    *,
    actor: str | None = None,
    target: str | None = None,
    **counts: int | bool,
) -> None:
    """Append one row to `who`'s tenant's audit log (nothing when `via` is None: a read
    the service makes for itself), and prune rows past the retention now and then."""
    if via is None:
        return
    detail: dict[str, str | int | bool] = {"surface": via, **counts}
    if who.name is not None:
        detail["key_name"] = who.name
    _append(trail, who.tenant, AuditEntry(who.key_id, action, actor, target, detail))


def recalled(trail: AuditLog, who: Principal, via: str | None, actor: str) -> None:
    """Note a recall of `actor`'s memory at a bounded cost: one row per key, actor and
    surface per minute (per process), on that minute's first recall; the others add
    nothing. An agent recalls on every turn, and a row per recall would be a committed
    write per turn (on SQLite, longer than the recall itself). The row says the key
    recalled that actor's memory during that minute; it holds no query and no count."""
    if via is None:
        return
    minute = utcnow().strftime("%Y-%m-%dT%H:%M")
    seen = (who.tenant, who.key_id, actor, via)
    with _lock:
        if _recalled.get(seen) == minute:
            return
        if len(_recalled) >= RECALL_KEYS:
            _recalled.clear()
        _recalled[seen] = minute
    note(trail, who, "recall", via, actor=actor)


def read_many(
    trail: AuditLog, who: Principal, via: str | None, owners: Mapping[str, int], noun: str
) -> None:
    """Note a listing that holds several actors' memory (a page of documents): a `read`
    row per actor with its count (`noun`=n), for the first `OWNERS_NOTED` actors by
    name; the actors past those share one row without an actor (`actors`, `noun`), so
    a page of 10,000 documents of 10,000 actors costs 101 rows, not 10,000."""
    if via is None:
        return
    names = sorted(owners)
    rows: list[tuple[str | None, dict[str, str | int | bool]]] = [
        (name, {noun: owners[name]}) for name in names[:OWNERS_NOTED]
    ]
    rest = names[OWNERS_NOTED:]
    if rest:
        rows.append((None, {"actors": len(rest), noun: sum(owners[n] for n in rest)}))
    for actor, counts in rows:
        detail: dict[str, str | int | bool] = {"surface": via, **counts}
        if who.name is not None:
            detail["key_name"] = who.name
        _append(trail, who.tenant, AuditEntry(who.key_id, "read", actor, None, detail))


def by_operator(
    trail: AuditLog,
    tenant: str,
    action: str,
    *,
    actor: str | None = None,
    target: str | None = None,
    **counts: int | bool,
) -> None:
    """Append one row for the operator at the CLI: no key (`key_id` None), the surface
    "cli" and the operating-system user who ran it (`os_user`)."""
    detail: dict[str, str | int | bool] = {"surface": "cli", "user": os_user(), **counts}
    _append(trail, tenant, AuditEntry(None, action, actor, target, detail))


def _append(trail: AuditLog, tenant: str, entry: AuditEntry) -> None:
    assert entry.action in ACTIONS, entry.action
    now = utcnow()
    trail.append(tenant, entry, now)
    with _lock:
        due = time.monotonic() - _pruned.get(tenant, -PRUNE_EVERY) >= PRUNE_EVERY
        if due:
            _pruned[tenant] = time.monotonic()
    if due:  # best effort: a refused purge (this host's clock ahead of the database's, at
        # the shortest retention) fails no request; the next one, `PRUNE_EVERY` later, runs
        try:
            trail.prune_audit(tenant, now - timedelta(days=retention_days()))
        except RememError as exc:
            log.warning("audit log of tenant %r not pruned: %s", tenant, exc)


def os_user() -> str:
    """The operating-system user running this process (its login name, or "uid N" where
    there is none): who asked, for an erasure or a key change made at the CLI."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no $USER and no passwd entry, e.g. a container's uid
        return f"uid {os.getuid()}"


def asked(who: Principal, reason: str | None, via: str | None) -> Asked:
    """Who asks for an erasure through `via` (a surface), and why: the key's id, a name
    for it (the surface and the key's name, else its role and scope) and the reason,
    stripped (None: none given)."""
    given = _reason(reason)
    if who.name is not None:
        return Asked(who.key_id, f"{via}: {who.name}", given)
    whose = "the whole tenant" if who.actor is None else f"actor {who.actor}"
    return Asked(who.key_id, f"{via}: {who.role} key for {whose}", given)


def _reason(reason: str | None) -> str | None:
    given = (reason or "").strip() or None
    if given is not None and len(given) > REASON_MAX:
        raise InvalidInput(f"reason is longer than {REASON_MAX} characters; give a ticket id")
    return given


def cli_asked(reason: str | None) -> Asked:
    """Who asks for an erasure at the CLI, and why: no key, "cli: <os user>"."""
    given = _reason(reason)
    return Asked(None, f"cli: {os_user()}", given)
