"""What every route depends on: the service it runs in and the principal of its key."""

# no `from __future__ import annotations`: FastAPI reads `Who` and `Svc` at runtime
import json
from typing import Annotated, Any, Protocol

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from remem.errors import InvalidInput, Unauthorized
from remem.memory.memory import Memory
from remem.model import Record
from remem.policy import scope
from remem.policy.scope import Principal
from remem.service import keys as keyring
from remem.service.audit import REASON_MAX
from remem.service.bodies import TrustedKeys
from remem.store.roles import Store


class Service(Protocol):
    """The running service as the routes see it (`remem.service.http` holds it)."""

    @property
    def store(self) -> Store: ...

    @property
    def warnings(self) -> list[str]: ...

    def memory(self, tenant: str) -> Memory:
        """The tenant's `Memory` on the shared store."""
        ...

    def readiness(self) -> dict[str, Any]:
        """What the readiness probe answers (`remem.service.http`)."""
        ...

    def written(self) -> None:
        """Say that events or jobs were written: extraction has work."""
        ...


async def service(request: Request) -> Service:
    """The service of the app that is answering `request` (async: FastAPI would run a
    plain function in its thread pool, a thread hop per request for an attribute read)."""
    svc: Service = request.app.state.service
    return svc


Svc = Annotated[Service, Depends(service)]

bearer = HTTPBearer(auto_error=False, description="an API key from `remem keys create`")


def principal(
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    svc: Svc,
    request: Request,
) -> Principal:
    """The principal of the request's key; Unauthorized (401) without a valid one.
    Its tenant is left in the request state, for the tenant's request metrics."""
    if creds is None:
        raise Unauthorized("send Authorization: Bearer KEY (create one: remem keys create)")
    who = keyring.verify_key(svc.store.keys, creds.credentials)
    if who is None:
        raise Unauthorized("the API key is unknown or revoked")
    request.state.remem_tenant = who.tenant  # remem.telemetry.http.TENANT_STATE
    trusted: TrustedKeys | None = getattr(request.app.state, "trusted_keys", None)
    if trusted is not None:  # its next bodies take a known key's slot (remem.service.bodies)
        trusted.add(creds.credentials)
    return who


Who = Annotated[Principal, Depends(principal)]


def record(svc: Service, who: Principal, record_id: str, *, write: bool = False) -> Record:
    """A record the key may see (shared procedures are readable by every key of the tenant),
    and with `write` may change (403 for a shared one it may only read)."""
    return scope.visible(
        who, svc.store.records.get_record(who.tenant, record_id), record_id, write=write
    )


def refuses_body(*query: str, fields: tuple[str, ...] = ()) -> Any:
    """A dependency for a write that takes no body: a body (other than none, `{}`, or a
    JSON object of `fields` only), or a query parameter other than `query`, is refused
    (422) instead of ignored. A caller who sends `{"job_id": ...}` to retry one job, or
    filters to forget part of a subject, would otherwise have the whole operation done
    on everything in scope."""

    async def check(request: Request, _who: Who) -> None:  # the key is checked first
        given = await _body_object(request)
        if given is None or set(given) - set(fields):
            takes = f"a JSON object of {', '.join(fields)} at most" if fields else "no body"
            raise InvalidInput(
                f"{request.method} {request.url.path} takes {takes}, and acts on everything "
                "in the key's scope; nothing was done"
            )
        unknown = sorted(set(request.query_params) - set(query))
        if unknown:
            allowed = ", ".join(query) or "none"
            raise InvalidInput(
                f"{request.method} {request.url.path} takes no query parameter "
                f"{', '.join(scope.named(n) for n in unknown)} (it takes: {allowed}); "
                "nothing was done"
            )

    return Depends(check)


async def _body_object(request: Request) -> dict[str, Any] | None:
    """The request's body as a JSON object ({} when empty); None when it is not one."""
    body = (await request.body()).strip()
    if body in (b"", b"{}"):
        return {}
    try:
        given = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return given if isinstance(given, dict) else None


async def _reason(
    request: Request,
    reason: Annotated[
        str | None,
        Query(
            max_length=REASON_MAX,
            description="why: a reason or ticket reference (receipts); better sent in the "
            'JSON body as {"reason": ...}: a query string reaches access logs',
        ),
    ] = None,
) -> str | None:
    """An erasure's reason, from the JSON body's `reason` or from `?reason=` (the older
    form, kept for current callers); both given must agree."""
    given = await _body_object(request) or {}
    said = given.get("reason")
    if said is not None and not isinstance(said, str):
        raise InvalidInput(
            "reason must be a string (a reason or ticket reference); nothing was done"
        )
    if said is not None and reason is not None and said != reason:
        raise InvalidInput(
            "the reason is given twice and differs: send it once, in the JSON body "
            "(a query string reaches access logs); nothing was done"
        )
    return said if said is not None else reason


# an erasure's reason: the JSON body's `reason`, or `?reason=` (see `_reason`)
Reason = Annotated[str | None, Depends(_reason)]

# the JSON body an erasure route may take (its OpenAPI `requestBody`)
REASON_BODY = {
    "requestBody": {
        "required": False,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "reason": {
                            "type": "string",
                            "maxLength": REASON_MAX,
                            "description": "why: a reason or ticket reference (receipts)",
                        }
                    },
                }
            }
        },
    }
}


async def _api() -> str:  # async: a plain function would cost a thread hop per request
    return "api"


# the surface a route answers on: "api" through HTTP (a dependency, not a parameter a
# client sets); the console passes "console", and None for reads it makes for itself
Via = Annotated[str | None, Depends(_api)]
