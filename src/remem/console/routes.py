"""The console's routers, mounted in the service's app with what they share."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from remem.console import (
    admin_pages,
    ask,
    audit_pages,
    browse,
    keys_pages,
    memory_pages,
    record_actions,
    retention,
    review,
    signin,
)
from remem.console.sessions import Sessions
from remem.console.web import (
    HEADERS,
    PREFIX,
    SignInNeeded,
    StaleForm,
    back,
    refuse_stale_form,
)

STATIC = {"console.css": "text/css; charset=utf-8"}

static = APIRouter(include_in_schema=False)


@static.get(PREFIX + "/static/{name}")
def asset(name: str) -> Response:
    """One of the console's own static files (only those named in `STATIC`)."""
    media = STATIC.get(name)
    if media is None:
        return Response("not found", status_code=404, media_type="text/plain")
    body = resources.files("remem.console").joinpath("static", name).read_bytes()
    return Response(body, media_type=media, headers={**HEADERS, "Cache-Control": "max-age=300"})


def mount(app: FastAPI) -> None:
    """Add the console's pages to `app`, with its session store and sign-in redirect."""
    app.state.console_sessions = Sessions()

    async def sign_in(_req: Request, _exc: Exception) -> Response:
        return back("/login")

    async def stale_form(request: Request, _exc: Exception) -> Response:
        return refuse_stale_form(request)

    app.add_exception_handler(SignInNeeded, sign_in)
    app.add_exception_handler(StaleForm, stale_form)
    for router in (static, signin.router, memory_pages.router, browse.router, ask.router):
        app.include_router(router)
    app.include_router(review.router)
    app.include_router(record_actions.router)
    app.include_router(admin_pages.router)
    app.include_router(audit_pages.router)
    app.include_router(retention.router)
    app.include_router(keys_pages.router)
