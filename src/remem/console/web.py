"""What every console page shares: templates, sign-in sessions, CSRF, rendering, errors.

A session is opaque: the cookie holds a random token, the server keeps what it
stands for (the key's id and tenant, a CSRF token, an expiry) in memory, so
signing out ends it and a restart ends every one; `remem.console.sessions`
keeps them, within caps per key, per tenant and in all. The key's secret is
checked once, at sign-in (`remem.service.keys.verify_key`), and never kept or
shown; each request reads the key again, so a revoked key is signed out at once.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ParamSpec

import jinja2
from fastapi import Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from remem.console.sessions import Session, Sessions
from remem.errors import InvalidInput, RememError
from remem.policy.scope import Principal
from remem.service.http_errors import status_of
from remem.service.routes.deps import Service

COOKIE = "remem_console"
LOGIN_COOKIE = "remem_console_login"  # the sign-in form's CSRF token, before a session
PREFIX = "/console"

# the console loads nothing but its own stylesheet: no script, no frame, no other origin
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class SignInNeeded(Exception):
    """No valid session: the page answers with a redirect to the sign-in form."""


class StaleForm(Exception):
    """A POST without the session's CSRF token: refused (403) before anything is done."""

    message = "the form's CSRF token is missing or stale; reload the page and retry"


@dataclass(frozen=True, slots=True)
class Seat:
    """A signed-in request: the key's principal, its session and the running service."""

    who: Principal
    token: str
    session: Session
    svc: Service


def sessions(request: Request) -> Sessions:
    """The console's sessions of the app answering `request`."""
    found: Sessions = request.app.state.console_sessions
    return found


def seat(request: Request) -> Seat:
    """The signed-in principal of the request (a dependency); SignInNeeded otherwise.

    The key is read again on every request: a revoked key ends the session."""
    svc: Service = request.app.state.service
    token = request.cookies.get(COOKIE)
    session = sessions(request).get(token)
    if token is None or session is None:
        raise SignInNeeded
    key = svc.store.keys.get_key(session.key_id, session.tenant)
    if key is None or key.revoked_at is not None:
        sessions(request).close(token)
        raise SignInNeeded
    return Seat(Principal(key.id, key.tenant, key.actor, key.role, key.name), token, session, svc)


async def posted(request: Request) -> dict[str, str]:
    """A POSTed form's fields (a dependency), the CSRF token checked against the session's.

    A form without the right token is refused (StaleForm) before anything is done."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    session = sessions(request).get(request.cookies.get(COOKIE))
    expected = session.csrf if session is not None else None
    if expected is None:
        raise SignInNeeded
    if not same_token(fields.get("csrf", ""), expected):
        raise StaleForm
    return fields


def same_token(sent: str, expected: str) -> bool:
    """Whether a form's token is the one expected, in constant time; compared as bytes,
    as `hmac.compare_digest` refuses a str holding a character outside ASCII (a 500)."""
    return hmac.compare_digest(
        sent.encode(errors="surrogatepass"), expected.encode(errors="surrogatepass")
    )


# what a page's signature takes (FastAPI dependencies): the signed-in seat, a POSTed form
# with its CSRF token checked, and a short query value
At = Annotated[Seat, Depends(seat)]
Form = Annotated[dict[str, str], Depends(posted)]
Short = Annotated[str, Query(max_length=200)]


@functools.cache
def templates() -> jinja2.Environment:
    """The console's templates (loaded on first use), autoescaping every value."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("remem.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["prefix"] = PREFIX
    return env


def render(
    request: Request,
    name: str,
    context: Mapping[str, Any],
    *,
    at: Seat | None = None,
    status: int = 200,
) -> HTMLResponse:
    """A page from template `name`, with the console's headers (CSP) and, signed in,
    the principal, the CSRF token for its forms and the session's waiting notes."""
    page: dict[str, Any] = {"who": None, "csrf": "", "notes": [], "error": None}
    if at is not None:
        page.update(who=at.who, csrf=at.session.csrf, notes=sessions(request).take_notes(at.token))
    page.update(context)
    html = templates().get_template(name).render(page)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def refuse_stale_form(request: Request) -> HTMLResponse:
    """The page a StaleForm is answered with: 403 and what to do."""
    try:
        at: Seat | None = seat(request)
    except SignInNeeded:
        at = None
    context = {"title": "Refused", "error": StaleForm.message, "status": 403}
    return render(request, "error.html", context, at=at, status=403)


def back(to: str) -> RedirectResponse:
    """After a POST: see the result at `to` (303, so a reload does not repeat it)."""
    return RedirectResponse(PREFIX + to, status_code=303, headers=HEADERS)


def message_of(
    exc: RememError | ValidationError, labels: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """The status and message the API answers the same error with; a field is named by
    its form label when `labels` maps the API's name to one."""
    if isinstance(exc, ValidationError):
        problems = []
        for err in exc.errors()[:10]:
            loc = [(labels or {}).get(str(p), str(p)) for p in err.get("loc", ())]
            where = ".".join(loc) or "form"
            said = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(f"{where}: {said}")
        return 422, "; ".join(problems)
    return status_of(exc), str(exc)


P = ParamSpec("P")


def page(template: str) -> Callable[[Callable[P, Response]], Callable[P, Response]]:
    """Answer an error a page raises as the API would (its status and message) on the
    page's own layout (`template`'s error block), instead of a traceback."""

    def wrap(fn: Callable[P, Response]) -> Callable[P, Response]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> Response:
            try:
                return fn(*args, **kwargs)
            except (RememError, ValidationError) as exc:
                request = kwargs["request"]
                at = kwargs.get("at")
                assert isinstance(request, Request)
                status, message = message_of(exc)
                return render(
                    request,
                    "error.html",
                    {"title": template, "error": message, "status": status},
                    at=at if isinstance(at, Seat) else None,
                    status=status,
                )

        return run

    return wrap


def confirmed(fields: Mapping[str, str], expected: str, what: str) -> None:
    """InvalidInput unless the form's `confirm` field repeats `expected` exactly."""
    if fields.get("confirm", "").strip() != expected:
        raise InvalidInput(f"type {what} {expected!r} in the confirmation box to go ahead")


def text_field(fields: Mapping[str, str], name: str, limit: int = 200) -> str:
    """A form field, stripped; InvalidInput when it is missing or longer than `limit`."""
    value = fields.get(name, "").strip()
    if not value:
        raise InvalidInput(f"{name} is required")
    if len(value) > limit:
        raise InvalidInput(f"{name} is longer than {limit} characters")
    return value
