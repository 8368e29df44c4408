"""Signing in with an API key, and out: /console/login, /console/logout."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import math
import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from remem.console.sessions import SESSION_SECONDS, SignInRefused
from remem.console.web import (
    COOKIE,
    LOGIN_COOKIE,
    PREFIX,
    Seat,
    back,
    posted,
    render,
    same_token,
    seat,
    sessions,
)
from remem.service import keys as keyring
from remem.service.routes.deps import Service

router = APIRouter(include_in_schema=False)


def _cookie(response: Response, request: Request, name: str, value: str, age: int) -> None:
    """An HttpOnly, SameSite=Strict cookie for the console's paths (Secure over HTTPS)."""
    response.set_cookie(
        name,
        value,
        max_age=age,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


@router.get(PREFIX)
def home() -> RedirectResponse:
    """The console opens on the Actors page."""
    return back("/actors")


@router.get(PREFIX + "/login")
def login_form(request: Request) -> Response:
    """The sign-in form; its CSRF token travels in a cookie of its own (no session yet)."""
    token = secrets.token_urlsafe(24)
    page = render(request, "login.html", {"title": "Sign in", "login_csrf": token})
    _cookie(page, request, LOGIN_COOKIE, token, 3600)
    return page


@router.post(PREFIX + "/login")
async def login(request: Request) -> Response:
    """Check the key once, then open a session: the cookie holds an opaque token, never
    the key. A sign-in past a cap or a bucket (`remem.console.sessions`) is refused
    with 429 and the form again, saying when to retry; no one else is signed out."""
    form = await request.form()
    key = form.get("key")
    sent = form.get("csrf")
    expected = request.cookies.get(LOGIN_COOKIE, "")
    svc: Service = request.app.state.service
    kept = sessions(request)
    client = request.client.host if request.client is not None else ""
    if not isinstance(sent, str) or not expected or not same_token(sent, expected):
        return _form(request, "the sign-in form expired; reload the page and sign in again")
    if not isinstance(key, str) or not key.strip():
        return _form(
            request, "paste an API key (create one: remem keys create --tenant T --role admin)"
        )
    try:
        kept.admit(client)
        who = await run_in_threadpool(keyring.verify_key, svc.store.keys, key.strip())
        if who is None:
            kept.failed(client)
            return _form(request, "the API key is unknown or revoked")
        kept.signing_in(who.key_id)
        token = kept.open(who.key_id, who.tenant)
    except SignInRefused as refused:
        return _form(request, refused.message, 429, refused.retry_after)
    done = back("/actors")
    _cookie(done, request, COOKIE, token, SESSION_SECONDS)
    done.delete_cookie(LOGIN_COOKIE, path=PREFIX)
    return done


def _form(
    request: Request, error: str, status: int = 401, retry_after: float | None = None
) -> Response:
    """The sign-in form again, with what went wrong and a fresh CSRF token."""
    token = secrets.token_urlsafe(24)
    page = render(
        request,
        "login.html",
        {"title": "Sign in", "login_csrf": token, "error": error},
        status=status,
    )
    if retry_after is not None:
        page.headers["Retry-After"] = str(math.ceil(retry_after))
    _cookie(page, request, LOGIN_COOKIE, token, 3600)
    return page


@router.post(PREFIX + "/logout")
def logout(
    request: Request,
    at: Annotated[Seat, Depends(seat)],
    _fields: Annotated[dict[str, str], Depends(posted)],
) -> Response:
    """End the session: the cookie is cleared and its token forgotten by the server."""
    sessions(request).close(at.token)
    done = back("/login")
    done.delete_cookie(COOKIE, path=PREFIX)
    return done
