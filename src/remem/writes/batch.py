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
delete). Every item goes through the one request ledger (`remem.writes.ledger`), the
flow the CLI and the HTTP batch routes run too, acting as the operator (a
tenant-wide admin): the whole batch is checked first, every create's actor
included, and nothing is written when one item is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from remem.errors import InvalidInput, NotFound, RememError
from remem.lifecycle.erasure import forget
from remem.lifecycle.receipt import REASON_MAX
from remem.memory.deps import Deps
from remem.policy import scope
from remem.policy.fields import valid_field
from remem.policy.metadata import valid_metadata
from remem.policy.scope import Principal, named, valid_request_id
from remem.store.values import Asked, ForgetReport
from remem.timeutil import check_time
from remem.writes import ledger, records
from remem.writes.checks import MAX_VALUE_CHARS, STRATEGY_MAX, valid_value
from remem.writes.request import RememberAsk

MAX_ITEMS = 10_000


# what a create item says, beyond its actor: `remember`'s keywords
REMEMBERED = frozenset(
    {"text", "kind", "valid_until", "field", "value", "sensitivity", "strategy", "metadata"}
)

# a statement's fields as an item carries them: here and in the HTTP create batch's
# `remem.service.schemas.CreateItem`, one set of names, bounds and checks
KindName = Literal["semantic", "preference", "episodic"]
SensitivityName = Literal["normal", "personal", "sensitive"]
FieldName = Annotated[
    Annotated[str, Field(min_length=1, max_length=200)] | None, AfterValidator(valid_field)
]
FieldValue = Annotated[
    Annotated[str, Field(max_length=MAX_VALUE_CHARS)] | None, AfterValidator(valid_value)
]
Until = Annotated[Annotated[str, Field(max_length=64)] | None, BeforeValidator(check_time)]


class WriteItem(BaseModel):
    """One item of a mixed batch (`Memory.write_records`): create needs actor_id (`actor`
    in the library) and text, update record_id and text, delete record_id."""

    # one model for the library, `remem records import` and POST /v1/memories/batch, so
    # that they cannot drift apart; `parse_items` reads the library's names
    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["create", "update", "delete"] = "create"
    request_id: Annotated[str | None, AfterValidator(valid_request_id)] = Field(
        default=None, min_length=1, max_length=200
    )
    actor: str | None = Field(default=None, min_length=1, max_length=200, alias="actor_id")
    record_id: str | None = Field(default=None, min_length=1, max_length=200)
    text: str | None = Field(default=None, min_length=1, max_length=4000)
    kind: KindName = "semantic"
    field: FieldName = None
    value: FieldValue = None
    valid_until: Until = None
    sensitivity: SensitivityName = "normal"
    strategy: str = Field(default="self-managed", min_length=1, max_length=STRATEGY_MAX)
    metadata: Annotated[dict[str, Any] | None, AfterValidator(valid_metadata)] = Field(
        default=None, description="a create's JSON object kept with the record, as in create"
    )
    reason: str | None = Field(
        default=None,
        max_length=REASON_MAX,
        description="why it is erased: a reason or ticket reference, kept for the receipt",
    )

    @model_validator(mode="after")
    def _needs(self, info: ValidationInfo) -> WriteItem:
        actor = (info.context or {}).get("actor", "actor_id")  # the name the caller uses
        if self.op == "create" and (self.actor is None or self.text is None):
            raise ValueError(f"create needs {actor} and text")
        if self.op == "update" and (self.record_id is None or self.text is None):
            raise ValueError("update needs record_id and text")
        if self.op == "delete" and self.record_id is None:
            raise ValueError("delete needs record_id")
        if self.op != "create" and self.metadata is not None:
            raise ValueError("metadata is given on create (an update keeps the record's)")
        if self.op != "delete" and self.reason is not None:
            raise ValueError("reason is for op delete (why a record is erased)")
        return self

    def remembered(self) -> dict[str, Any]:
        """A create's keywords for `remember`, beyond its actor."""
        return self.model_dump(include=set(REMEMBERED))


# the library's items name the actor `actor` (the field's name, not its wire alias)
_LIBRARY_NAMES: dict[str, Any] = {"by_alias": False, "by_name": True, "context": {"actor": "actor"}}


def parse_items(rows: Iterable[Mapping[str, Any]]) -> list[WriteItem]:
    """Validate a whole batch before anything is written; say which item is wrong."""
    items = []
    for number, row in enumerate(rows, start=1):
        if number > MAX_ITEMS:
            raise InvalidInput(f"a batch holds at most {MAX_ITEMS} items")
        if not isinstance(row, Mapping):
            raise InvalidInput(f"item {number}: expected a JSON object")
        try:
            items.append(WriteItem.model_validate(dict(row), **_LIBRARY_NAMES))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            raise InvalidInput(
                f"item {number}: {where + ': ' if where else ''}{msg}; nothing was written"
            ) from None
    return items


def write_records(
    deps: Deps,
    rows: Iterable[Mapping[str, Any]],
    *,
    asked: Asked | None = None,
    on_erase: Callable[[str, ForgetReport], None] | None = None,
) -> list[dict[str, Any]]:
    """Apply a validated batch item by item; each item's outcome, in order.

    A delete's deletion job names who `asked` (with the item's `reason`, else
    the asker's), and `on_erase(actor, report)` hears of each erasure done (not
    of a repeated request id's first outcome): the CLI audits them. InvalidInput,
    with nothing written, when an item is malformed or a create names an actor no
    one may act as (`ledger.actors_first`)."""
    items = parse_items(rows)
    who = scope.operator(deps.tenant)
    ledger.actors_first(who, (i.actor for i in items if i.op == "create"), what="actor")
    results = []
    for item in items:
        try:
            outcome = _item(deps, who, item, asked, on_erase)
        except RememError as exc:
            outcome = _failure(exc)
        results.append({"request_id": item.request_id, "op": item.op, **outcome})
    return results


def _item(
    deps: Deps,
    who: Principal,
    item: WriteItem,
    asked: Asked | None,
    on_erase: Callable[[str, ForgetReport], None] | None,
) -> dict[str, Any]:
    """One item through the ledger; its actor (the item's, or its record's) owns its id."""
    target = None if item.op == "create" else item.record_id

    def resolve() -> str:
        if target is None:
            return scope.actor_for(who, item.actor, what="actor")
        owner = records.get(deps, target).actor
        if item.actor is not None and item.actor != owner:  # another actor's record: not its
            raise NotFound(f"no record {named(target)} of actor {named(item.actor)}")
        return owner

    def attempt(_actor: str) -> tuple[dict[str, Any], bool]:
        outcome = _run(deps, item, asked, on_erase)
        return outcome, outcome["status"] != "error"

    ask = ledger.Ask(item.op, item.request_id, target, ledger.digest(item.op, item))
    return ledger.settle(deps.store, who, ask, resolve, attempt, _failure)


def _run(
    deps: Deps,
    item: WriteItem,
    asked: Asked | None,
    on_erase: Callable[[str, ForgetReport], None] | None,
) -> dict[str, Any]:
    try:
        if item.op == "create":
            assert item.actor is not None  # checked by the model
            rec = records.remember(deps, RememberAsk(actor=item.actor, **item.remembered()))
            return {"status": "created", "record_id": rec.id}
        assert item.record_id is not None
        old = records.get(deps, item.record_id)
        if item.op == "update":
            assert item.text is not None
            new = records.update(
                deps, item.record_id, text=item.text, valid_until=item.valid_until, by=item.strategy
            )
            return {"status": "updated", "record_id": new.id, "supersedes": old.id}
        if item.reason:  # a blank reason is none, as over HTTP
            asked = replace(asked or Asked(None, None, None), reason=item.reason)
        report = forget(deps, record_id=item.record_id, asked=asked)
        if on_erase is not None:
            on_erase(old.actor, report)
        return {"status": "deleted", "record_id": old.id, "verified": report.verified}
    except RememError as exc:
        return _failure(exc)


def _failure(exc: RememError) -> dict[str, Any]:
    return {"status": "error", "error": {"code": exc.code, "message": str(exc)}}
