"""Driving the console through an HTTP client (FastAPI's TestClient, or httpx on a
served app): sign in with a key, read the CSRF token of a page, post a form with it,
read the error a page shows."""

from __future__ import annotations

import re
from html import unescape

import httpx


def csrf(page: httpx.Response) -> str:
    """The CSRF token of a console page's forms."""
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def error(page: httpx.Response) -> str:
    """The error a console page shows (it must show one)."""
    found = re.search(r'id="error" role="alert">([^<]*)<', page.text)
    assert found, page.text
    return unescape(found.group(1))


def sign_in(client: httpx.Client, secret: str) -> None:
    """Sign `client` in with the key `secret` (signing out whoever was signed in)."""
    client.cookies.clear()
    form = client.get("/console/login")
    got = client.post(
        "/console/login", data={"key": secret, "csrf": csrf(form)}, follow_redirects=False
    )
    assert got.status_code == 303, got.text


def post(client: httpx.Client, path: str, **data: str) -> httpx.Response:
    """POST a form from a signed-in page, with the session's CSRF token."""
    token = csrf(client.get("/console/actors"))
    return client.post(path, data={"csrf": token, **data})
