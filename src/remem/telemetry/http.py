"""The service's side of the metrics: request counts and latency, and the metrics listener.

`RequestMetrics` is an ASGI middleware: every HTTP request is counted by method (a
standard one, else `other`), route template (`/v1/memories/{record_id}`, never the raw
path: ids would make unbounded series) and status, with its latency. The tenant is the
one the request's key named (`remem.service.routes.deps.principal` leaves it in the
request state); a request without a valid key counts for the process only.
"""

from __future__ import annotations

import time
from typing import Any

from remem.telemetry.metrics import Metrics

Scope = dict[str, Any]
UNMATCHED = "unmatched"  # no route: a 404, one series for every unknown path
TENANT_STATE = "remem_tenant"  # the request-state key the principal's tenant is left under
# the methods counted by name; any other (a client may send any token) is one series,
# so a client cannot grow the label set without bound
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


class RequestMetrics:
    """Count and time every HTTP request into `metrics`."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sent(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            tenant = (scope.get("state") or {}).get(TENANT_STATE)
            seconds = time.perf_counter() - started
            method = scope["method"] if scope["method"] in METHODS else OTHER_METHOD
            self.metrics.request(tenant, method, route, status, seconds)


class Listener:
    """The unauthenticated metrics listener of `remem serve --metrics-port`: the whole
    process's metrics (with `--workers N`: every process's, from the supervising one), on
    a port of its own (bind it where only Prometheus reaches)."""

    def __init__(self, metrics: Metrics, host: str, port: int) -> None:
        self.metrics, self.host, self.port = metrics, host, port
        self._server: Any = None

    def start(self) -> None:
        """Listen (a daemon thread); `port` 0 takes a free one, then `port` says which."""
        from prometheus_client import start_http_server

        self._server, _thread = start_http_server(
            self.port, addr=self.host, registry=self.metrics.registry(None)
        )
        self.port = int(self._server.server_port)

    def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
