"""Hot routes served in one thread hop (`OneHop`, a FastAPI route class).

FastAPI runs each plain dependency of a route on its thread pool, then the plain
endpoint, each a hop: for `POST /v1/memories/retrieve` the key lookup (`deps.principal`,
a database read) was one hop and the recall another, and solving the dependencies cost
the event loop more than both hops. At concurrency 8 through `remem serve --workers 2`
the event loop held the interpreter lock for 47 % of its samples (py-spy --gil), of which
dependency solving and the hops were half (docs/service-speed.md).

A route of this class keeps its declaration (signature, OpenAPI, response model) and is
served thus: on the event loop, the bearer credentials are read from the header and the
body is read (`BodyLimit` has already bounded it); then one hop runs, in order, the key
lookup (401 for no valid key, whatever the body holds, as before), the body's JSON and
its validation against the endpoint's body model (422 with FastAPI's error locations,
`remem.service.http_errors`), and the endpoint. The endpoint must be a plain function
taking the body (a model, or a union of models), `deps.Who`, `deps.Svc` and optionally
`deps.Via`, and return a `Response` (its answer already serialized, so no hop is spent
validating it against the response model): the class refuses, when the route is
declared, any other shape.

A route class may name a lane (`lane`: an attribute of `app.state` holding an
`anyio.CapacityLimiter`): its hops then run at most that many at once and wait in
arrival order (`RecallHop`, for recalls; its size:
`remem.service.lane.default_recall_threads`); without one, on the thread pool every
other route uses.
"""

from __future__ import annotations

import email.message
import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any, get_args, get_type_hints

import anyio.to_thread
from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.responses import Response

from remem.service.routes import deps

__all__ = ["OneHop", "RecallHop"]

# the parameters an endpoint of this class takes, beside its body model: name -> the
# dependency FastAPI would have solved for it
_SOLVED = {"who": deps.principal, "svc": deps.service, "via": deps._api}


class OneHop(APIRoute):
    """A route whose key lookup, body validation and work run in one thread hop."""

    lane: str | None = None  # the app.state attribute of this class's limiter, if any

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.body_type = TypeAdapter(_body_type(endpoint, self.dependant))

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint = self.endpoint
        takes_via = "via" in inspect.signature(endpoint).parameters

        async def handle(request: Request) -> Response:
            creds = await deps.bearer(request)  # the header only: no input or output
            raw = await request.body()
            svc = await deps.service(request)
            limiter = getattr(request.app.state, self.lane, None) if self.lane else None

            def serve() -> Response:
                who = deps.principal(creds, svc, request)  # 401 before anything else
                body = self._body(request, raw)
                extra = {"via": "api"} if takes_via else {}
                answer: Response = endpoint(body, who, svc, **extra)
                return answer

            return await anyio.to_thread.run_sync(serve, limiter=limiter)

        return handle

    def _body(self, request: Request, raw: bytes) -> Any:
        """The body as the endpoint's type, validated as FastAPI validates a JSON body
        (errors located under "body"); RequestValidationError (422) otherwise."""
        if not raw:
            raise RequestValidationError(
                [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
            )
        given: Any = raw  # not JSON by its content type: validated as bytes, and refused
        if _is_json(request.headers.get("content-type")):
            try:
                given = json.loads(raw)
            except json.JSONDecodeError as exc:
                error = {"type": "json_invalid", "loc": ("body", exc.pos), "input": {},
                         "msg": "JSON decode error", "ctx": {"error": exc.msg}}  # fmt: skip
                raise RequestValidationError([error]) from exc
            except (UnicodeDecodeError, RecursionError) as exc:
                raise HTTPException(400, "There was an error parsing the body") from exc
        try:
            return self.body_type.validate_python(given)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            raise RequestValidationError(
                [{**e, "loc": ("body", *e["loc"])} for e in errors]
            ) from exc


class BatchLane(APIRoute):
    """A plain FastAPI route whose requests run at most `app.state.batches`' tokens at once
    (made by `remem.service.http.create_app`: `batch_threads`), the others waiting on the
    event loop in arrival order, holding no thread: a batch of up to 1,000 writes takes
    seconds, and without the lane 40 of them at once held every thread of the pool that
    the other routes run on (a list of another tenant's records took 56 s)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            limiter = getattr(request.app.state, "batches", None)
            if limiter is None:
                return await handler(request)
            async with limiter:
                return await handler(request)

        return handle


class RecallHop(OneHop):
    """A `OneHop` route whose hops run in the process's recall lane (`app.state.recalls`,
    made by `remem.service.http.create_app`): at most `recall_threads` at once."""

    lane = "recalls"


def _is_json(content_type: str | None) -> bool:
    """Whether a content type is JSON's (application/json or application/*+json), as
    FastAPI reads it; a body without one is not parsed."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def _body_type(endpoint: Callable[..., Any], dependant: Any) -> Any:
    """The endpoint's body type; TypeError for an endpoint this class cannot serve."""
    if inspect.iscoroutinefunction(endpoint):
        raise TypeError(f"{endpoint.__name__}: OneHop serves a plain function, not a coroutine")
    calls = {d.name: d.call for d in dependant.dependencies}
    names = list(inspect.signature(endpoint).parameters)
    body = get_type_hints(endpoint).get(names[0]) if len(dependant.body_params) == 1 else None
    if (
        not all(isinstance(m, type) and issubclass(m, BaseModel) for m in get_args(body) or [body])
        or names[1:] not in (["who", "svc"], ["who", "svc", "via"])
        or dependant.path_params
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or any(calls.get(n) is not call for n, call in _SOLVED.items() if n in names)
        or set(calls) - set(_SOLVED)
    ):
        raise TypeError(
            f"{endpoint.__name__}: OneHop serves (body: Model, who: Who, svc: Svc[, via: Via])"
        )
    return body
