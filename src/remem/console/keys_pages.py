"""Keys: the tenant's API keys with their names, made and revoked from the console
(admins; POST /v1/keys and DELETE /v1/keys/{id}, audited as they are).

A key for one actor lists and makes keys of that actor only, never stronger than
itself (the API's rules). A new key's secret is shown on the page that answers the
form, once: it is kept nowhere, not even in the console's session.
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime

from fastapi import APIRouter, Request
from fastapi.responses import Response

from remem.console.web import PREFIX, At, Form, Seat, back, page, render, sessions
from remem.errors import InvalidInput
from remem.policy import scope
from remem.service.keys import ROLES, key_name
from remem.service.routes import admin
from remem.service.schemas import KeyIn

router = APIRouter(include_in_schema=False)

LISTED = 500  # the keys one page lists, oldest first


def _page(request: Request, at: Seat, made: dict[str, str] | None = None) -> Response:
    scope.need_role(at.who, "admin")
    found = at.svc.store.keys.keys_page(at.who.tenant, at.who.actor, None, LISTED)
    context = {"title": "Keys", "keys": found, "roles": ROLES, "made": made}
    return render(request, "keys.html", context, at=at)


@router.get(PREFIX + "/keys")
@page("Keys")
def keys(request: Request, at: At) -> Response:
    """The keys of the tenant (of the key's actor), their names, roles and state."""
    return _page(request, at)


@router.post(PREFIX + "/keys")
@page("Keys")
def create(request: Request, at: At, fields: Form) -> Response:
    """Make a key (admins) with an optional name; its secret is on this page only."""
    role = fields.get("role", "agent")
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    body = KeyIn(
        actor_id=fields.get("actor", "").strip() or None,
        role=role,  # type: ignore[arg-type]  # checked above
        name=key_name(fields.get("name")),
    )
    made = admin.create_key(body, at.who, at.svc, via="console")
    return _page(request, at, made={"id": made["id"], "key": made["key"]})


@router.post(PREFIX + "/keys/{key_id}/revoke")
@page("Keys")
def revoke(request: Request, key_id: str, at: At, fields: Form) -> Response:
    """Revoke a key at once (admins); requests with it are refused from now on."""
    done = admin.revoke_key(key_id, at.who, at.svc, via="console")
    sessions(request).note(at.token, f"revoked key {done['id']}")
    return back("/keys")
