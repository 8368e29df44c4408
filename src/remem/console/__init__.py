"""The remem console: web pages where a person sees, reviews and erases what remem remembers.

    remem keys create --tenant acme --role admin     # prints a key, once
    remem serve                                      # then open http://127.0.0.1:8080/console

`mount(app)` adds the console to the HTTP service (`remem.service.http`).
Pages are rendered on the server from Jinja templates shipped in the package,
with one stylesheet and no script: nothing is fetched from another origin, and
a strict Content-Security-Policy says so to the browser. Sign-in takes an API
key; what a page shows and does is what that key may (the pages call the same
functions the HTTP routes are, `remem.service.routes`, so scope, roles and
errors are theirs). Every state change is a POST carrying the session's CSRF
token; every stored string is HTML-escaped.

    signin   /console/login, /console/logout
    memory   /console/actors, /console/actors/{actor}, /console/records/{id}
    ask      /console/ask (recall with the explain view)
    review   /console/review (proposed procedures, flagged records)
    browse   /console/actors/{actor}?q= (search), /console/actors/{actor}/transcript
    act      /console/records/{id}/forget, /console/records/{id}/correct
    admin    /console/jobs, /console/erasure (forget, deletion receipts, export)
    audit    /console/audit (the audit log, filtered, exported)
    privacy  /console/retention (what expires in 7/30 days; sensitive records by actor)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI


def mount(app: FastAPI) -> None:
    """Serve the console under `/console` in `app` (the service's FastAPI app)."""
    from remem.console.routes import mount as mount_routes

    mount_routes(app)
