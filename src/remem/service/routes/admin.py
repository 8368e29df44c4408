"""Administration: a subject's erasure and export, and the tenant's API keys."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Any

from fastapi import APIRouter

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
def export_subject(actor_id: str, who: Who, svc: Svc) -> dict[str, Any]:
    """Everything remem holds about one actor, in a portable shape (admins)."""
    scope.need_role(who, "admin")
    actor = scope.actor_for(who, actor_id)
    return {"actor_id": actor, "rows": list(svc.memory(who.tenant).export(actor=actor))}


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
