"""How the HTTP service answers errors: `{"error": {"code", "message"}}` with a status.

400 a page cursor the list did not hand out, 401 without a valid key, 403 outside
the key's scope or role, 404 unknown ids,
409 conflicts, 422 malformed JSON or fields (and remem's InvalidInput and
RefusedContent), 503 when the database cannot answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from remem.errors import (
    ConflictError,
    EmbedderError,
    Forbidden,
    InvalidCursor,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    StoreError,
    Unauthorized,
)

log = logging.getLogger("remem.service")

_STATUS: list[tuple[type[RememError], int]] = [
    (InvalidCursor, 400),
    (InvalidInput, 422),
    (RefusedContent, 422),
    (NotFound, 404),
    (ConflictError, 409),
    (StoreError, 503),
    (EmbedderError, 503),  # reached only where no write or recall could go on without it
]


def failure_of(exc: RememError) -> dict[str, Any]:
    """One batch item's failure: its status and the error."""
    return {"status": status_of(exc), "error": {"code": exc.code, "message": str(exc)}}


def status_of(exc: RememError) -> int:
    """The HTTP status of one of remem's errors."""
    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def _error(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _where(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) or "body"


# pydantic's error types said in remem's words; any other type keeps pydantic's message,
# which names no class (the `*_type` ones that do, e.g. "instance of RetrieveIn", are here)
_SAID = {
    "missing": "is required",
    "extra_forbidden": "is not a field this operation takes (check its spelling)",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
    "list_type": "must be a JSON array",
    "dataclass_type": "must be a JSON object",
    "is_instance_of": "has the wrong type",
    "union_tag_invalid": "is not one of the kinds this field takes",
    "string_type": "must be a string",
    "string_unicode": "must be a string of valid Unicode (no lone surrogate escapes)",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
}


def said(err: Mapping[str, Any]) -> str:
    """One of pydantic's validation errors as remem says it: `where: what is wrong`,
    never a class name, a library's URL or the value sent (it may be a secret)."""
    kind = str(err.get("type", ""))
    msg = _SAID.get(kind) or str(err.get("msg", "is invalid")).removeprefix("Value error, ")
    if kind not in _SAID and "instance of" in msg:  # a type check naming a class
        msg = "has the wrong type"
    return f"{_where(err.get('loc', ()))}: {msg}"


def _closest_member(errors: Sequence[Any]) -> list[Any]:
    """For a body that may be one of several models (an event, or a batch of them), only
    the errors of the model it came closest to, without the model's name in their place."""

    def member(err: Any) -> str | None:
        loc = err.get("loc", ())
        name = loc[1] if len(loc) > 1 and loc[0] == "body" else None
        return name if isinstance(name, str) and name[:1].isupper() else None

    names = {member(e) for e in errors}
    if None in names or len(names) < 2:
        return list(errors)
    best = min(names, key=lambda n: sum(member(e) == n for e in errors))
    return [{**e, "loc": ("body", *e["loc"][2:])} for e in errors if member(e) == best]


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error as `{"error": {"code", "message"}}` with its status."""

    async def remem_error(_req: Request, exc: Any) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            log.error("request failed: %s", exc)
        return _error(status, exc.code, str(exc))

    async def validation(_req: Request, exc: Any) -> JSONResponse:
        problems = []
        for err in _closest_member(exc.errors())[:10]:
            if err.get("type") == "json_invalid":
                problems.append(f"malformed JSON: {err.get('ctx', {}).get('error', 'invalid')}")
            else:
                problems.append(said(err))
        return _error(422, "invalid_input", "; ".join(problems) or "invalid request")

    async def http_error(_req: Request, exc: Any) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer when decoding the body itself fails (not UTF-8, too deep)
            return _error(
                422,
                "invalid_input",
                "the body is not JSON this service can read: it must be UTF-8 and nest at "
                "most a few hundred levels",
            )
        codes = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
        return _error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    async def bad_text(_req: Request, exc: Any) -> JSONResponse:
        # a lone surrogate in JSON, or a time outside what a datetime can hold
        if isinstance(exc, UnicodeError):
            message = "a string holds a lone surrogate escape such as \\ud800: send valid text"
        else:
            message = "a time or number is outside the range this service can hold"
        return _error(422, "invalid_input", message)

    app.add_exception_handler(RememError, remem_error)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(UnicodeError, bad_text)
    app.add_exception_handler(OverflowError, bad_text)
