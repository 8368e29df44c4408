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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from remem.errors import ConflictError, InvalidInput, RememError
from remem.timeutil import TimeText

if TYPE_CHECKING:
    from remem.memory import Memory

MAX_ITEMS = 10_000


class RecordItem(BaseModel):
    """One item of a self-managed batch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: Literal["create", "update", "delete"] = "create"
    request_id: str | None = Field(default=None, min_length=1, max_length=200)
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


def write_records(mem: Memory, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Apply a validated batch item by item; each item's outcome, in order."""
    results = []
    for item in parse_items(rows):
        rid = item.request_id
        seen = mem.store.request_outcome(mem.tenant, rid) if rid else None
        if seen is not None:
            op, _, outcome = seen
            if op != item.op:
                outcome = _failure(ConflictError(f"request id {rid!r} was used for a {op}"))
            else:
                outcome = {**outcome, "replayed": True}
        else:
            outcome, actor = _run(mem, item)
            if rid and actor is not None:
                mem.store.save_request(mem.tenant, rid, item.op, actor, outcome)
        results.append({"request_id": rid, "op": item.op, **outcome})
    return results


def _run(mem: Memory, item: RecordItem) -> tuple[dict[str, Any], str | None]:
    try:
        if item.op == "create":
            assert item.actor is not None and item.text is not None  # checked by the model
            rec = mem.remember(
                actor=item.actor,
                text=item.text,
                kind=item.kind,
                valid_until=item.valid_until,
                field=item.field,
                value=item.value,
                sensitivity=item.sensitivity,
                strategy=item.strategy,
            )
            return {"status": "created", "record_id": rec.id}, rec.actor
        assert item.record_id is not None
        old = mem.get(item.record_id)
        if item.op == "update":
            assert item.text is not None
            new = mem.update(
                item.record_id, text=item.text, valid_until=item.valid_until, by=item.strategy
            )
            return {"status": "updated", "record_id": new.id, "supersedes": old.id}, old.actor
        report = mem.forget(record_id=item.record_id)
        return {"status": "deleted", "record_id": old.id, "verified": report.verified}, old.actor
    except RememError as exc:
        return _failure(exc), None


def _failure(exc: RememError) -> dict[str, Any]:
    return {"status": "error", "error": {"code": exc.code, "message": str(exc)}}
