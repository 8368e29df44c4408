"""Administration: a subject's erasure and export, the deletion log, and the tenant's
API keys."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from remem.errors import InvalidInput, NotFound
from remem.lifecycle.receipt import receipt
from remem.policy import scope
from remem.policy.scope import named
from remem.service import audit, paging
from remem.service import keys as keyring
from remem.service.answers import (
    KEYED,
    AuditLog,
    Deletion,
    DeletionList,
    DeletionReceipt,
    FreshStart,
    KeyList,
    KeyOut,
    NewKey,
    SubjectExport,
    errors,
)
from remem.service.routes.deps import REASON_BODY, Reason, Svc, Via, Who, refuses_body
from remem.service.routes.erase import erase
from remem.service.schemas import KeyIn
from remem.store.values import ApiKey
from remem.timeutil import parse_time

router = APIRouter()


@router.post(
    "/v1/subjects/{actor_id}/forget",
    tags=["subjects"],
    dependencies=[refuses_body("reason", fields=("reason",))],
    openapi_extra=REASON_BODY,
    operation_id="forget_subject",
    response_model=Deletion,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def forget_subject(
    actor_id: str, who: Who, svc: Svc, reason: Reason = None, via: Via = "api"
) -> dict[str, Any]:
    """Erase everything of one actor and verify it by reading back (admins); `reason`
    (a ticket reference) is kept with the key in the deletion job, for its receipt."""
    scope.need_role(who, "admin")
    actor = scope.actor_for(who, actor_id)
    return {"actor_id": actor, **erase(svc, who, via, reason, actor=actor)}


@router.get(
    "/v1/subjects/{actor_id}/export",
    tags=["subjects"],
    operation_id="export_subject",
    response_class=StreamingResponse,
    responses={200: {"model": SubjectExport}, **errors(*KEYED, 403)},
)
def export_subject(actor_id: str, who: Who, svc: Svc, via: Via = "api") -> StreamingResponse:
    """Everything remem holds about one actor, in a portable shape (admins):
    `{"actor_id": ..., "rows": [...]}`, streamed as the rows are read."""
    _, body = subject_export(actor_id, who, svc, via)
    return StreamingResponse(body, media_type="application/json")


def subject_export(
    actor_id: str, who: Who, svc: Svc, via: str | None = "api"
) -> tuple[str, Iterator[bytes]]:
    """The actor an export is of, and its JSON body in pieces of about `CHUNK` bytes,
    written as the rows are read (a page of events at a time, `remem.lifecycle.erasure`),
    never built whole: a subject of any size costs bounded memory. Scope, role and the
    first read are checked here, so what fails before the first byte is an error answer;
    a failure later cuts the body short (invalid JSON, never a partial answer that parses)."""
    scope.need_role(who, "admin")
    actor = scope.actor_for(who, actor_id)
    rows = svc.memory(who.tenant).export(actor=actor)
    first = next(rows, None)
    audit.note(svc.store.audit, who, "export", via, actor=actor)
    return actor, _json_body(actor, first, rows)


CHUNK = 64 * 1024  # bytes of an export gathered before they are sent


def _json_body(
    actor: str, first: dict[str, Any] | None, rest: Iterator[dict[str, Any]]
) -> Iterator[bytes]:
    head = '{"actor_id":' + _json(actor) + ',"rows":['
    if first is None:
        yield (head + "]}").encode()
        return
    parts = [head, _json(first)]
    size = sum(map(len, parts))
    for row in rest:
        text = _json(row)
        parts += [",", text]
        size += len(text) + 1
        if size >= CHUNK:
            yield "".join(parts).encode()
            parts, size = [], 0
    parts.append("]}")
    yield "".join(parts).encode()


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@router.get(
    "/v1/subjects/{actor_id}/fresh-start",
    tags=["subjects"],
    operation_id="get_fresh_start",
    response_model=FreshStart | None,
    responses=errors(*KEYED, 403),
)
def fresh_start(actor_id: str, who: Who, svc: Svc) -> dict[str, str] | None:
    """If the actor was erased: when, and that events added since start a new memory;
    null for an actor never erased (`Memory.fresh_start`)."""
    return svc.memory(who.tenant).fresh_start(scope.actor_for(who, actor_id))


Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get(
    "/v1/deletions",
    tags=["subjects"],
    operation_id="list_deletions",
    response_model=DeletionList,
    responses=errors(*KEYED, 400, 403),
)
def list_deletions(
    who: Who, svc: Svc, limit: Limit = 100, cursor: paging.Cursor = None
) -> dict[str, Any]:
    """The tenant's deletion jobs, newest first, with what each removed and verified
    (`remem deletions`; a tenant-wide admin key: the log names every erased subject).
    `next_cursor` fetches the next page, read below the last job's number."""
    scope.need_tenant_wide(who)
    scope.need_role(who, "admin")
    after = paging.read("deletions", (who.tenant,), cursor, (paging.NUMBER,))
    before = None if after is None else int(after[0])
    found = svc.store.erasure.deletions(who.tenant, limit + 1, before)
    rows, next_cursor = paging.page(found, limit, lambda d: (d["id"],), "deletions", (who.tenant,))
    return {"deletions": rows, "next_cursor": next_cursor}


@router.get(
    "/v1/deletions/{deletion_id}/receipt",
    tags=["subjects"],
    operation_id="get_deletion_receipt",
    response_model=DeletionReceipt,
    responses=errors(*KEYED, 403, 404),
)
def deletion_receipt(deletion_id: int, who: Who, svc: Svc) -> dict[str, Any]:
    """The receipt of one erasure (admins): whose data, who asked and why, when, what was
    removed and whether it was verified; ids and counts only, never erased content
    (`remem.lifecycle.receipt`). A key for one actor sees its actor's erasures only."""
    scope.need_role(who, "admin")
    job = svc.store.erasure.deletion(who.tenant, deletion_id)
    if job is None or who.actor not in (None, job.get("actor")):
        raise NotFound(f"no deletion job {deletion_id} in this tenant")
    return receipt(who.tenant, job)


@router.get(
    "/v1/keys",
    tags=["keys"],
    operation_id="list_keys",
    response_model=KeyList,
    responses=errors(*KEYED, 400, 403),
)
def list_keys(
    who: Who, svc: Svc, limit: Limit = 1000, cursor: paging.Cursor = None
) -> dict[str, Any]:
    """The tenant's API keys (a key for one actor: that actor's), without secrets, oldest
    first, `limit` a page (admins); `next_cursor` fetches the next page, read after the
    last key's (created_at, id)."""
    scope.need_role(who, "admin")
    query = (who.tenant, who.actor)
    after = paging.read("keys", query, cursor, (paging.TIME, paging.TEXT))
    at = None if after is None else (after[0], after[1])
    found = svc.store.keys.keys_page(who.tenant, who.actor, at, limit + 1)
    # oldest first: the cursor holds the last key handed out, the next page starts after it
    keys, next_cursor = paging.page(found, limit, _key_of, "keys", query)
    return {"keys": [k.as_dict() for k in keys], "next_cursor": next_cursor}


def _key_of(k: ApiKey) -> tuple[Any, ...]:
    return (parse_time(k.created_at), k.id)


@router.post(
    "/v1/keys",
    status_code=201,
    tags=["keys"],
    operation_id="create_key",
    response_model=NewKey,
    responses=errors(*KEYED, 403),
)
def create_key(body: KeyIn, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """A new key in the caller's tenant; the secret is in this answer only (admins)."""
    scope.need_role(who, "admin")
    actor = body.actor_id if body.actor_id is not None else who.actor
    if actor is not None:
        scope.allow(who, actor)
    key, secret = keyring.create_key(
        svc.store.keys, tenant=who.tenant, actor=actor, role=body.role, name=body.name
    )
    audit.note(svc.store.audit, who, "key_create", via, actor=actor, target=key.id)
    return {**key.as_dict(), "key": secret}


@router.delete(
    "/v1/keys/{key_id}",
    tags=["keys"],
    dependencies=[refuses_body()],
    operation_id="revoke_key",
    response_model=KeyOut,
    responses=errors(*KEYED, 403, 404),
)
def revoke_key(key_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Revoke a key of the caller's tenant at once (admins)."""
    scope.need_role(who, "admin")
    mine = svc.store.keys.get_key(key_id, who.tenant)
    if mine is None or who.actor not in (None, mine.actor):
        raise NotFound(f"no API key {named(key_id)} in this tenant")
    revoked = keyring.revoke_key(svc.store.keys, key_id, who.tenant)
    audit.note(svc.store.audit, who, "key_revoke", via, actor=mine.actor, target=key_id)
    return revoked.as_dict()


Filter = Annotated[str | None, Query(min_length=1, max_length=200)]
ActionFilter = Annotated[
    str | None, Query(description=f"one of {', '.join(audit.ACTIONS)}", max_length=20)
]


@router.get(
    "/v1/audit",
    tags=["audit"],
    operation_id="list_audit",
    response_model=AuditLog,
    responses=errors(*KEYED, 400, 403),
)
def list_audit(
    who: Who,
    svc: Svc,
    actor_id: Filter = None,
    key_id: Filter = None,
    action: ActionFilter = None,
    limit: Limit = 100,
    cursor: paging.Cursor = None,
) -> dict[str, Any]:
    """The tenant's audit log, newest first (admins): who read an actor's memory,
    exported, erased, approved, rejected or changed keys, through which surface; ids
    and counts, never content. Filters combine; a key for one actor sees its actor's
    rows only (another actor_id is 403), as in the console. `next_cursor` fetches the
    next page, read below the last row's number."""
    scope.need_role(who, "admin")
    if action is not None and action not in audit.ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(audit.ACTIONS)}; got {named(action)}")
    actor = actor_id if who.actor is None else scope.actor_for(who, actor_id)
    query = (who.tenant, actor, key_id, action)
    after = paging.read("audit", query, cursor, (paging.NUMBER,))
    before = None if after is None else int(after[0])
    found = svc.store.audit.audit_log(
        who.tenant, actor=actor, key_id=key_id, action=action, before=before, limit=limit + 1
    )
    rows, next_cursor = paging.page(found, limit, lambda r: (r["id"],), "audit", query)
    return {"rows": rows, "retention_days": audit.retention_days(), "next_cursor": next_cursor}
