"""Prometheus metrics: /metrics (`remem.telemetry.metrics`)."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Any

from fastapi import APIRouter, Request, Response

from remem.errors import Forbidden, NotFound
from remem.policy import scope
from remem.service.answers import KEYED, errors
from remem.service.routes.deps import Who

router = APIRouter()

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text format


_TEXT: dict[int | str, dict[str, Any]] = {
    200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}}
}


@router.get(
    "/metrics",
    tags=["service"],
    response_class=Response,
    operation_id="get_metrics",
    responses={**_TEXT, **errors(*KEYED, 403, 404)},
)
def metrics(request: Request, who: Who) -> Response:
    """The tenant's metrics in Prometheus' text format (a tenant-wide admin key): its
    requests, extraction, model calls, recalls and deletions, and its job queue read
    now. The whole process's are on `remem serve --metrics-port`'s listener."""
    scope.need_role(who, "admin")
    if who.actor is not None:
        raise Forbidden("metrics need a tenant-wide admin key (this one is for one actor)")
    kept = request.app.state.metrics
    if kept is None:
        raise NotFound("metrics are off: pip install 'remem[metrics]' and restart remem serve")
    return Response(kept.exposition(who.tenant), media_type=CONTENT_TYPE)
