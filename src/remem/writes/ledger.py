"""The request ledger: a write with a request id runs at most once per actor, on every
surface (the library's and the CLI's self-managed batches, the HTTP batch routes).

A request id belongs to an actor: the item's (create) or its record's (update,
delete); another actor's "r1" is its own. `settle` is the one flow an item
goes through: its actor is resolved inside the principal's scope (the
library and the CLI act as `scope.operator`, a tenant-wide admin; HTTP as
its key), the id is claimed in the database (its primary key makes the claim
exclusive across connections, processes and servers, so no lock in any one
process is needed), the write runs, then its outcome is recorded. A second
claimant waits up to `WAIT_SECONDS` for that outcome, then gets a conflict
("in progress"); a claim whose process died is retaken after
`LEASE_SECONDS`. The same request id again with the same operation and the
same fields returns the first outcome marked `replayed`; with another operation
or other fields (another text, metadata or validity: `digest`), a conflict, so
a new write sent under a used id is refused, never lost. A delete retried after
its record is gone replays its first outcome too, when the principal may see
the actor it was recorded for. Entries written before schema 15 (SQLite) / 19
(PostgreSQL) keep no digest and replay whatever is sent.

`actors_first` is the scope check a batch passes before anything is written:
every create names an actor the principal may act on.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.errors import ConflictError, Forbidden, NotFound, RememError
from remem.ids import new_id
from remem.policy import scope
from remem.policy.scope import Principal
from remem.timeutil import parse_time

if TYPE_CHECKING:
    from remem.store.roles import RequestLedger, Store

LEASE_SECONDS = 60.0  # a claim without an outcome this old is a dead claimant's: retaken
WAIT_SECONDS = 5.0  # how long a second claimant waits for the first one's outcome
_POLL_SECONDS = 0.05

Outcome = dict[str, Any]
Run = Callable[[], tuple[Outcome, bool]]  # an outcome, and whether it is final
Attempt = Callable[[str], tuple[Outcome, bool]]  # the same, given the item's actor


# the fields that make two requests of an operation the same write, on every surface
# (a library or CLI batch item, each HTTP batch route's): a delete's reason only words
# its receipt, a create's strategy only names its writer, so neither is compared
ASKED = {
    "create": ("text", "kind", "field", "value", "valid_until", "sensitivity", "namespace",
               "metadata"),
    "update": ("text", "valid_until"),
    "delete": (),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Ask:
    """One write as the ledger sees it."""

    operation: str  # create, update or delete
    request_id: str | None
    target: str | None = None  # the record an update or delete names
    digest: str | None = None  # what it asks (`digest`): None compares only the operation


def digest(operation: str, item: object) -> str:
    """A SHA-256 of what an item of `operation` asks (`ASKED`, read as its attributes,
    None when it has none), in canonical JSON: times as the instants they name, so
    "2027-01-01" and "2027-01-01T00:00:00Z" are the same request."""
    asked = {}
    for name in ASKED[operation]:
        value = getattr(item, name, None)
        if name == "valid_until" and value is not None:
            value = parse_time(value, name).isoformat()
        asked[name] = value
    canonical = json.dumps(asked, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def actors_first(who: Principal, named: Iterable[str | None], *, what: str = "actor_id") -> None:
    """Refuse a whole batch before any write when one create names an actor outside
    `who`'s scope (InvalidInput for a bad or missing name, Forbidden for another's)."""
    for actor in named:
        scope.actor_for(who, actor, what=what)


def settle(
    store: Store,
    who: Principal,
    ask: Ask,
    resolve: Callable[[], str],
    attempt: Attempt,
    failure: Callable[[RememError], Outcome],
) -> Outcome:
    """One item's outcome: its actor, then its write, once per request id.

    `resolve` names the item's actor within `who`'s scope; its NotFound or
    Forbidden is the item's `failure` (except a record gone by a recorded
    request id: that first outcome, replayed). `attempt` runs the write for
    that actor and says whether its outcome is final (recorded; one that is not
    releases the claim, so a retry runs again). A request id used for another
    operation, or still running after `WAIT_SECONDS`, is the item's failure too.
    """
    rid = ask.request_id
    try:
        try:
            actor = resolve()
        except (NotFound, Forbidden) as exc:
            if rid is not None and ask.target is not None and isinstance(exc, NotFound):
                replayed = replay_gone(store.ledger, who, rid, ask.operation, ask.target)
                if replayed is not None:
                    return replayed
            return failure(exc)
        if rid is None:
            return attempt(actor)[0]
        return once(store.ledger, who.tenant, actor, rid, ask, lambda: attempt(actor))
    except ConflictError as exc:
        return failure(exc)


def once(
    ledger: RequestLedger, tenant: str, actor: str, request_id: str, ask: Ask, run: Run
) -> Outcome:
    """Run one write at most once per (tenant, actor, request id), enforced by the store.

    `run` returns the outcome and whether it is final (recorded; a failure that
    is not final releases the claim, so a retry runs again). A repeat asking the
    same (`ask`'s operation and digest) returns the first outcome with
    `"replayed": True`. ConflictError when the id was used for another operation
    or other fields, or its first claimant is still running after `WAIT_SECONDS`.
    """
    operation = ask.operation
    token = new_id("claim")
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        entry = ledger.claim_request(
            tenant, actor, request_id, operation, ask.target, ask.digest, token, LEASE_SECONDS
        )
        if entry.token == token:
            break
        if entry.operation != operation:
            raise ConflictError(f"request id {request_id!r} was used for a {entry.operation}")
        if None not in (entry.digest, ask.digest) and entry.digest != ask.digest:
            raise ConflictError(
                f"request id {request_id!r} was used for a {operation} with other fields; "
                "a request id names one write: send a new id for a new one"
            )
        if entry.outcome is not None:
            return {**entry.outcome, "replayed": True}
        if time.monotonic() >= deadline:
            raise ConflictError(f"request id {request_id!r} is in progress; retry it later")
        time.sleep(_POLL_SECONDS)
    try:
        outcome, final = run()
    except BaseException:
        ledger.release_request(tenant, actor, request_id, token)
        raise
    if final:
        ledger.finish_request(tenant, actor, request_id, token, outcome)
    else:
        ledger.release_request(tenant, actor, request_id, token)
    return outcome


def replay_gone(
    ledger: RequestLedger, who: Principal, request_id: str, operation: str, target: str
) -> Outcome | None:
    """The first outcome of a request id whose record is gone (a delete retried after it
    succeeded), if `who` may act on the actor it was recorded for; None when there is none."""
    entry = ledger.request_for_target(who.tenant, request_id, target)
    if entry is None or entry.outcome is None or not who.allows(entry.actor):
        return None
    if entry.operation != operation:
        raise ConflictError(f"request id {request_id!r} was used for a {entry.operation}")
    return {**entry.outcome, "replayed": True}
