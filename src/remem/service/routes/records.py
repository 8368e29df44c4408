"""Memory records: list, read, history, forget one, and the batch writes
(create, update, delete) through the request ledger (`remem.writes.ledger`)."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from remem.errors import ConflictError, InvalidInput, NotFound, RefusedContent
from remem.facts.request import RecordsAsk
from remem.memory import reads
from remem.memory.memory import Memory
from remem.model import Record
from remem.policy import scope
from remem.policy.metadata import json_filter
from remem.policy.scope import Principal
from remem.service import audit, paging
from remem.service.answers import (
    KEYED,
    BatchResult,
    Deletion,
    History,
    RecordList,
    RecordOut,
    WriteBatchResult,
    errors,
)
from remem.service.http_errors import failure_of
from remem.service.onehop import BatchLane
from remem.service.routes.deps import (
    REASON_BODY,
    Reason,
    Service,
    Svc,
    Via,
    Who,
    record,
    refuses_body,
)
from remem.service.routes.erase import erase
from remem.service.schemas import (
    BatchCreateIn,
    BatchDeleteIn,
    BatchUpdateIn,
    BatchWriteIn,
    CreateItem,
    DeleteItem,
    UpdateItem,
)
from remem.writes import ledger
from remem.writes.batch import WriteItem
from remem.writes.request import RememberAsk

router = APIRouter()
# the batch writes, at most `batch_threads` at once in a process (`BatchLane`)
batches = APIRouter(route_class=BatchLane)


@router.get(
    "/v1/memories",
    tags=["memories"],
    operation_id="list_memories",
    response_model=RecordList,
    responses=errors(*KEYED, 400, 403),
)
def list_memories(
    who: Who,
    svc: Svc,
    actor_id: Annotated[str | None, Query(max_length=200)] = None,
    all: Annotated[bool, Query(description="include invalid and proposed records")] = False,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    cursor: paging.Cursor = None,
    as_of: Annotated[
        str | None, Query(max_length=64, description="ISO 8601: known and valid then")
    ] = None,
    field: Annotated[
        str | None, Query(max_length=200, description="only the records about this field")
    ] = None,
    namespace: Annotated[
        str | None, Query(max_length=1000, description="only the records under this namespace")
    ] = None,
    metadata: Annotated[
        str | None,
        Query(
            max_length=4000,
            description="a JSON object: only the records whose metadata has each key with an "
            'equal value, e.g. {"topic":"travel"}',
        ),
    ] = None,
    via: Via = "api",
) -> dict[str, Any]:
    """An actor's records, newest first, `limit` a page (ListMemoryRecords); with `as_of`,
    those known and valid then; `field`, `namespace` and `metadata` narrow them as
    `Memory.records` does. `next_cursor` fetches the next page, read after the last
    record's key (valid_from, id) (`remem.service.paging`)."""
    actor = scope.actor_for(who, actor_id)
    mem = svc.memory(who.tenant)
    wanted = json_filter(metadata)
    query = (who.tenant, actor, all, as_of, field, namespace, metadata)
    after = paging.read("memories", query, cursor, (paging.TIME, paging.TEXT))
    request = RecordsAsk(actor=actor, all=all, limit=limit + 1, as_of=as_of, field=field,
                         namespace=namespace, metadata=wanted)  # fmt: skip
    found = reads.records_page(mem.deps, request, _key(after))
    recs, next_cursor = paging.page(found, limit, _record_key, "memories", query)
    audit.note(svc.store.audit, who, "read", via, actor=actor, records=len(recs))
    return {"records": [r.as_dict() for r in recs], "next_cursor": next_cursor}


def _record_key(r: Record) -> tuple[Any, ...]:
    return (r.valid_from, r.id)


def _key(after: tuple[Any, ...] | None) -> tuple[datetime, str] | None:
    return None if after is None else (after[0], after[1])


@router.get(
    "/v1/memories/{record_id}",
    tags=["memories"],
    operation_id="get_memory",
    response_model=RecordOut,
    responses=errors(*KEYED, 404),
)
def get_memory(record_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """One record (GetMemoryRecord); another tenant's or actor's id is 404."""
    found = record(svc, who, record_id)
    audit.note(svc.store.audit, who, "read", via, actor=found.actor, target=record_id, records=1)
    return found.as_dict()


@router.get(
    "/v1/memories/{record_id}/history",
    tags=["memories"],
    operation_id="get_memory_history",
    response_model=History,
    responses=errors(*KEYED, 404),
)
def memory_history(record_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Every change of a record, oldest first (audited: a `read`)."""
    found = record(svc, who, record_id)
    entries = svc.memory(who.tenant).history(record_id)
    audit.note(svc.store.audit, who, "read", via, actor=found.actor, target=record_id, records=1)
    return {"history": [h.as_dict() for h in entries]}


@router.delete(
    "/v1/memories/{record_id}",
    tags=["memories"],
    dependencies=[refuses_body("reason", fields=("reason",))],
    openapi_extra=REASON_BODY,
    operation_id="forget_memory",
    response_model=Deletion,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403, 404),
)
def delete_memory(
    record_id: str, who: Who, svc: Svc, reason: Reason = None, via: Via = "api"
) -> dict[str, Any]:
    """Forget one record everywhere and verify it (DeleteMemoryRecord); a record shared
    by the whole tenant needs an admin key for the whole tenant. `reason` (a ticket
    reference) is kept in the deletion job with the key and the record's actor, for its
    receipt (GET /v1/deletions/{id}/receipt)."""
    owner = record(svc, who, record_id, write=True).actor
    gone = erase(svc, who, via, reason, actor=owner, record_id=record_id)
    return {"record_id": record_id, **gone}


@batches.post(
    "/v1/memories/batch-create",
    tags=["memories"],
    operation_id="create_memories",
    response_model=BatchResult,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def batch_create(body: BatchCreateIn, who: Who, svc: Svc) -> dict[str, Any]:
    """Write explicit records, confirmed at once (BatchCreateMemoryRecords)."""
    ledger.actors_first(who, (item.actor_id for item in body.records))

    def run(item: CreateItem, actor: str) -> dict[str, Any]:
        return _create(svc.memory(who.tenant), item, actor)

    return _batch(svc, who, "create", body.records, lambda i: scope.actor_for(who, i.actor_id), run)


@batches.post(
    "/v1/memories/batch-update",
    tags=["memories"],
    operation_id="update_memories",
    response_model=BatchResult,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def batch_update(body: BatchUpdateIn, who: Who, svc: Svc) -> dict[str, Any]:
    """Correct records: each new text supersedes its record (BatchUpdateMemoryRecords)."""

    def run(item: UpdateItem, actor: str) -> dict[str, Any]:
        new = _supersede(svc.memory(who.tenant), item, who.key_id)
        return {"status": 200, "record_id": new.id, "supersedes": item.record_id}

    return _batch(svc, who, "update", body.records, lambda i: _actor_of(svc, who, i), run)


@batches.post(
    "/v1/memories/batch-delete",
    tags=["memories"],
    operation_id="forget_memories",
    response_model=BatchResult,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def batch_delete(body: BatchDeleteIn, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Forget records everywhere and verify each (BatchDeleteMemoryRecords); each
    erasure's job names the key and the item's `reason`, and is audited."""

    def run(item: DeleteItem, actor: str) -> dict[str, Any]:
        return _erase(svc, who, item.record_id, actor, item.reason, via)

    return _batch(svc, who, "delete", body.records, lambda i: _actor_of(svc, who, i), run)


@batches.post(
    "/v1/memories/batch",
    tags=["memories"],
    operation_id="write_memories",
    response_model=WriteBatchResult,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def batch_write(body: BatchWriteIn, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Create, correct and forget records in one batch, in order (`Memory.write_records`,
    for self-managed strategies): every create's actor is checked before anything is
    written; then each item runs as in the one-operation batches, `strategy` naming
    what wrote a created record."""
    ledger.actors_first(who, (i.actor for i in body.records if i.op == "create"))
    mem = svc.memory(who.tenant)

    def run(item: WriteItem, actor: str) -> dict[str, Any]:
        if item.op == "create":
            return _create(mem, item, actor)
        assert item.record_id is not None
        if item.op == "update":
            assert item.text is not None
            new = mem.update(
                item.record_id, text=item.text, valid_until=item.valid_until, by=who.key_id
            )
            return {"status": 200, "record_id": new.id, "supersedes": item.record_id}
        return _erase(svc, who, item.record_id, actor, item.reason, via)

    def resolve(item: WriteItem) -> str:
        if item.op == "create":
            return scope.actor_for(who, item.actor)
        assert item.record_id is not None
        return record(svc, who, item.record_id, write=True).actor

    results = []
    for item in body.records:
        (one,) = _batch(svc, who, item.op, [item], resolve, run)["results"]
        results.append({**one, "op": item.op})
    ok = sum(1 for r in results if r["status"] < 300)
    return {"results": results, "succeeded": ok, "failed": len(results) - ok}


def _create(mem: Memory, item: CreateItem | WriteItem, actor: str) -> dict[str, Any]:
    """A create of either batch, written by `Memory.ask_remember` as `actor` (a mixed batch's
    item names its strategy, a create batch's may name a namespace)."""
    rec = mem.ask_remember(RememberAsk(actor=actor, **item.remembered()))
    return {"status": 201, "record_id": rec.id}


def _erase(
    svc: Service, who: Principal, record_id: str, actor: str, reason: str | None, via: str | None
) -> dict[str, Any]:
    """Forget one record of a batch as `delete_memory` does: who asked and why go to
    the deletion job, and the erasure to the audit log."""
    gone = erase(svc, who, via, reason, actor=actor, record_id=record_id)
    return {"status": 200, "record_id": record_id, **gone}


def _actor_of(svc: Service, who: Principal, item: UpdateItem | DeleteItem) -> str:
    """The actor of a record named in a batch; a record the key cannot see is 404."""
    return record(svc, who, item.record_id, write=True).actor


def _supersede(mem: Memory, item: UpdateItem, by: str) -> Record:
    """Correct a record through the library: the old one becomes INVALID, linked."""
    return mem.update(item.record_id, text=item.text, valid_until=item.valid_until, by=by)


# -- batches and idempotency ---------------------------------------------------------------------


def _batch(
    svc: Service,
    who: Principal,
    operation: str,
    items: Sequence[Any],
    resolve: Callable[[Any], str],
    run: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """Run each item through the request ledger (`remem.writes.ledger.settle`, the flow the
    library and the CLI run too): an item with a request id runs once per actor, and a
    repeat asking the same returns its first outcome.

    Items fail one by one (an unknown record is a 404 in its result, a request
    id used for another operation or other fields, or still running, a 409); a
    request id is recorded only with a successful outcome.
    """
    results = []
    for item in items:
        target = getattr(item, "record_id", None)
        ask = ledger.Ask(operation, item.request_id, target, ledger.digest(operation, item))
        outcome = ledger.settle(
            svc.store,
            who,
            ask,
            functools.partial(resolve, item),
            functools.partial(_attempt, run, item),
            failure_of,
        )
        results.append(_with_record(svc, who, {"request_id": item.request_id, **outcome}))
    ok = sum(1 for r in results if r["status"] < 300)
    return {"results": results, "succeeded": ok, "failed": len(results) - ok}


def _attempt(
    run: Callable[[Any, str], dict[str, Any]], item: Any, actor: str
) -> tuple[dict[str, Any], bool]:
    """One item's write; a refusal is its result (not final: the request id stays free)."""
    try:
        return run(item, actor), True
    except (InvalidInput, RefusedContent, NotFound, ConflictError) as exc:
        return failure_of(exc), False


def _with_record(svc: Service, who: Principal, result: dict[str, Any]) -> dict[str, Any]:
    """Add the record's current state to a successful create or update."""
    rid = result.get("record_id")
    if rid and result["status"] < 300 and "deleted" not in result:
        rec = svc.store.records.get_record(who.tenant, rid)
        result["record"] = rec.as_dict() if rec is not None else None
    return result
