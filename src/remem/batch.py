"""Self-managed strategies: the application extracts on its own and writes records
in batches of create / update / delete, with the same validation as every other
write path and a request id per item, so a batch retried after a timeout does
not write twice (a repeated request id returns its first outcome).

    mem.write_records([
        {"op": "create", "request_id": "r1", "actor": "alice", "text": "Alice is vegetarian"},
        {"op": "update", "request_id": "r2", "record_id": "rec_...", "text": "..."},
        {"op": "delete", "request_id": "r3", "record_id": "rec_..."},
    ])

`remem records import FILE.jsonl` reads the same items, one JSON object per line.

A request id belongs to an actor: the item's (create) or its record's (update,
delete). `once` is the one flow every surface runs it through (the library, the
CLI and the HTTP batch routes): the id is claimed in the database first (its
primary key makes the claim exclusive across connections, processes and
servers), the write runs, then its outcome is recorded. A second claimant
waits up to `WAIT_SECONDS` for that outcome, then gets a conflict ("in
progress"); a claim whose process died is retaken after `LEASE_SECONDS`. The
same request id again with the same operation returns the first outcome marked
`replayed`; with another operation, a conflict. Another actor's request id
"r1" is its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from remem.deps import Deps
from remem.errors import ConflictError, InvalidInput, NotFound, RememError
from remem.ids import new_id
from remem.lifecycle.erasure import forget
from remem.policy.scope import check_name, valid_request_id
from remem.timeutil import TimeText
from remem.writes import records

if TYPE_CHECKING:
    from remem.store.base import Store

MAX_ITEMS = 10_000
LEASE_SECONDS = 60.0  # a claim without an outcome this old is a dead claimant's: retaken
WAIT_SECONDS = 5.0  # how long a second claimant waits for the first one's outcome
_POLL_SECONDS = 0.05

Run = Callable[[], tuple[dict[str, Any], bool]]  # an outcome, and whether it is final


class RecordItem(BaseModel):
    """One item of a self-managed batch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["create", "update", "delete"] = "create"
    request_id: Annotated[str | None, AfterValidator(valid_request_id)] = Field(
        default=None, min_length=1, max_length=200
    )
    actor: str | None = Field(default=None, min_length=1, max_length=200)
    record_id: str | None = Field(default=None, min_length=1, max_length=200)
    text: str | None = Field(default=None, min_length=1, max_length=4000)
    kind: Literal["semantic", "preference", "episodic"] = "semantic"
    field: str | None = Field(default=None, min_length=1, max_length=200)
    value: str | None = Field(default=None, max_length=1000)
    valid_until: TimeText = None
    sensitivity: Literal["normal", "personal", "sensitive"] = "normal"
    strategy: str = Field(default="self-managed", min_length=1, max_length=100)

    @model_validator(mode="after")
    def _needs(self) -> RecordItem:
        if self.op == "create" and (self.actor is None or self.text is None):
            raise ValueError("create needs actor and text")
        if self.op == "update" and (self.record_id is None or self.text is None):
            raise ValueError("update needs record_id and text")
        if self.op == "delete" and self.record_id is None:
            raise ValueError("delete needs record_id")
        return self


def parse_items(rows: Iterable[Mapping[str, Any]]) -> list[RecordItem]:
    """Validate a whole batch before anything is written; say which item is wrong."""
    items = []
    for number, row in enumerate(rows, start=1):
        if number > MAX_ITEMS:
            raise InvalidInput(f"a batch holds at most {MAX_ITEMS} items")
        if not isinstance(row, Mapping):
            raise InvalidInput(f"item {number}: expected a JSON object")
        try:
            items.append(RecordItem.model_validate(dict(row)))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            raise InvalidInput(
                f"item {number}: {where + ': ' if where else ''}{msg}; nothing was written"
            ) from None
    return items


def once(
    store: Store,
    tenant: str,
    actor: str,
    request_id: str,
    operation: str,
    target: str | None,
    run: Run,
) -> dict[str, Any]:
    """Run one write at most once per (tenant, actor, request id), enforced by the store.

    `run` returns the outcome and whether it is final (recorded; a failure that
    is not final releases the claim, so a retry runs again). A repeat with the
    same operation returns the first outcome with `"replayed": True`.
    ConflictError when the id was used for another operation, or its first
    claimant is still running after `WAIT_SECONDS`.
    """
    token = new_id("claim")
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        entry = store.claim_request(
            tenant, actor, request_id, operation, target, token, LEASE_SECONDS
        )
        if entry.token == token:
            break
        if entry.operation != operation:
            raise ConflictError(f"request id {request_id!r} was used for a {entry.operation}")
        if entry.outcome is not None:
            return {**entry.outcome, "replayed": True}
        if time.monotonic() >= deadline:
            raise ConflictError(f"request id {request_id!r} is in progress; retry it later")
        time.sleep(_POLL_SECONDS)
    try:
        outcome, final = run()
    except BaseException:
        store.release_request(tenant, actor, request_id, token)
        raise
    if final:
        store.finish_request(tenant, actor, request_id, token, outcome)
    else:
        store.release_request(tenant, actor, request_id, token)
    return outcome


def replay_gone(
    store: Store,
    tenant: str,
    request_id: str,
    operation: str,
    target: str,
    allows: Callable[[str], bool],
) -> dict[str, Any] | None:
    """The first outcome of a request id whose record is gone (a delete retried after it
    succeeded), if `allows` the actor it was recorded for; None when there is none."""
    entry = store.request_for_target(tenant, request_id, target)
    if entry is None or entry.outcome is None or not allows(entry.actor):
        return None
    if entry.operation != operation:
        raise ConflictError(f"request id {request_id!r} was used for a {entry.operation}")
    return {**entry.outcome, "replayed": True}


def write_records(deps: Deps, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Apply a validated batch item by item through the record write paths
    (`remem.writes.records`, `remem.lifecycle.forget`); each item's outcome, in order."""
    results = []
    for item in parse_items(rows):
        try:
            outcome = _item(deps, item)
        except RememError as exc:
            outcome = _failure(exc)
        results.append({"request_id": item.request_id, "op": item.op, **outcome})
    return results


def _item(deps: Deps, item: RecordItem) -> dict[str, Any]:
    """One item, through the ledger when it carries a request id."""
    rid = item.request_id
    if item.op == "create":
        actor, target = check_name("actor", item.actor), None  # before it is claimed
    else:
        assert item.record_id is not None
        target = item.record_id
        try:
            actor = records.get(deps, target).actor
        except NotFound:
            replayed = (
                replay_gone(deps.store, deps.tenant, rid, item.op, target, lambda _a: True)
                if rid
                else None
            )
            if replayed is None:
                raise
            return replayed

    def run() -> tuple[dict[str, Any], bool]:
        outcome = _run(deps, item)
        return outcome, outcome["status"] != "error"

    if rid is None:
        return run()[0]
    return once(deps.store, deps.tenant, actor, rid, item.op, target, run)


def _run(deps: Deps, item: RecordItem) -> dict[str, Any]:
    try:
        if item.op == "create":
            assert item.actor is not None and item.text is not None  # checked by the model
            rec = records.remember(
                deps,
                actor=item.actor,
                text=item.text,
                kind=item.kind,
                valid_until=item.valid_until,
                field=item.field,
                value=item.value,
                sensitivity=item.sensitivity,
                strategy=item.strategy,
            )
            return {"status": "created", "record_id": rec.id}
        assert item.record_id is not None
        old = records.get(deps, item.record_id)
        if item.op == "update":
            assert item.text is not None
            new = records.update(
                deps, item.record_id, text=item.text, valid_until=item.valid_until, by=item.strategy
            )
            return {"status": "updated", "record_id": new.id, "supersedes": old.id}
        report = forget(deps, record_id=item.record_id)
        return {"status": "deleted", "record_id": old.id, "verified": report.verified}
    except RememError as exc:
        return _failure(exc)


def _failure(exc: RememError) -> dict[str, Any]:
    return {"status": "error", "error": {"code": exc.code, "message": str(exc)}}
