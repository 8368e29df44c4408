"""Administration: a subject's erasure and export, and the tenant's API keys."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import json
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from remem.errors import NotFound
from remem.policy import scope
from remem.policy.scope import named
from remem.service import keys as keyring
from remem.service.routes.deps import Svc, Who, refuses_body
from remem.service.schemas import KeyIn

router = APIRouter()


@router.post("/v1/subjects/{actor_id}/forget", tags=["subjects"], dependencies=[refuses_body()])
def forget_subject(actor_id: str, who: Who, svc: Svc) -> dict[str, Any]:
    """Erase everything of one actor and verify it by reading back (admins)."""
    scope.need_role(who, "admin")
    actor = scope.actor_for(who, actor_id)
    report = svc.memory(who.tenant).forget(actor=actor)
    return {"actor_id": actor, **scope.deletion_report(report)}


@router.get("/v1/subjects/{actor_id}/export", tags=["subjects"])
def export_subject(actor_id: str, who: Who, svc: Svc) -> StreamingResponse:
    """Everything remem holds about one actor, in a portable shape (admins):
    `{"actor_id": ..., "rows": [...]}`, streamed as the rows are read."""
    _, body = subject_export(actor_id, who, svc)
    return StreamingResponse(body, media_type="application/json")


def subject_export(actor_id: str, who: Who, svc: Svc) -> tuple[str, Iterator[bytes]]:
    """The actor an export is of, and its JSON body in pieces of about `CHUNK` bytes,
    written as the rows are read (a page of events at a time, `remem.lifecycle.erasure`),
    never built whole: a subject of any size costs bounded memory. Scope, role and the
    first read are checked here, so what fails before the first byte is an error answer;
    a failure later cuts the body short (invalid JSON, never a partial answer that parses)."""
    scope.need_role(who, "admin")
    actor = scope.actor_for(who, actor_id)
    rows = svc.memory(who.tenant).export(actor=actor)
    first = next(rows, None)
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


@router.get("/v1/keys", tags=["keys"])
def list_keys(who: Who, svc: Svc) -> dict[str, Any]:
    """The tenant's API keys, without secrets (admins)."""
    scope.need_role(who, "admin")
    found = keyring.list_keys(svc.store, who.tenant)
    return {"keys": [k.as_dict() for k in found if who.actor in (None, k.actor)]}


@router.post("/v1/keys", status_code=201, tags=["keys"])
def create_key(body: KeyIn, who: Who, svc: Svc) -> dict[str, Any]:
    """A new key in the caller's tenant; the secret is in this answer only (admins)."""
    scope.need_role(who, "admin")
    actor = body.actor_id if body.actor_id is not None else who.actor
    if actor is not None:
        scope.allow(who, actor)
    key, secret = keyring.create_key(svc.store, tenant=who.tenant, actor=actor, role=body.role)
    return {**key.as_dict(), "key": secret}


@router.delete("/v1/keys/{key_id}", tags=["keys"], dependencies=[refuses_body()])
def revoke_key(key_id: str, who: Who, svc: Svc) -> dict[str, Any]:
    """Revoke a key of the caller's tenant at once (admins)."""
    scope.need_role(who, "admin")
    mine = svc.store.get_key(key_id, who.tenant)
    if mine is None or who.actor not in (None, mine.actor):
        raise NotFound(f"no API key {named(key_id)} in this tenant")
    return keyring.revoke_key(svc.store, key_id, who.tenant).as_dict()
