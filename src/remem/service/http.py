"""The HTTP service: `Memory` behind FastAPI, with API-key principals.

    app = create_app("memory.db")          # then: uvicorn, or `remem serve`
    app = create_app("postgresql://app@db.internal/remem")   # the same, on PostgreSQL

Thin over the library: no policy lives here. The routes are routers grouped by
resource (`remem.service.routes`); scope decisions are `remem.policy.scope`'s,
errors are answered by `remem.service.http_errors`. Every request is authenticated
by `Authorization: Bearer KEY`; the key fixes the tenant and the actors the
request may touch (`remem.service.keys`). A body or query may narrow that
scope, never widen it: another actor is 403, another tenant's record is 404.

Errors are `{"error": {"code", "message"}}`: 401 without a valid key, 403
outside the key's scope or role, 404 unknown ids, 409 conflicts, 408 bodies
not received within `body_timeout`, 413 bodies over `max_body_bytes`, 422
malformed JSON or fields (and remem's InvalidInput and RefusedContent), 503
when the database cannot answer or `max_pending_bodies` are being received.

Metrics (`remem.telemetry.metrics`, when prometheus_client is installed) are at
`/metrics` for a tenant-wide admin key (that tenant's), and with `metrics_port` on an
unauthenticated listener of their own (the whole process's). Spans go where the
`telemetry` given (or `$REMEM_OTEL`) sends them.

Extraction runs in the server process: the worker (`remem.pipeline.worker`, one thread
per strategy) wakes after every write (and every second, to pick up retries
and other processes' events) and drains the queue. Pass `worker=False`
(`remem serve --no-worker`) when separate worker processes drain the queue instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from remem.config.config import Config, load_config
from remem.console import mount as mount_console
from remem.embed.base import Embedder
from remem.errors import InvalidInput, RlsBypassed
from remem.memory.memory import Memory, open_store
from remem.pipeline.worker import Worker
from remem.service.bodies import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_PENDING_BODIES,
    BodyLimit,
    BodyLimits,
)
from remem.service.http_errors import install_error_handlers
from remem.service.routes import ROUTERS
from remem.store.roles import Store, refuse_rls_bypass
from remem.telemetry import Telemetry

log = logging.getLogger("remem.service")

WORKER_POLL_SECONDS = 1.0


# -- the service state -------------------------------------------------------------------


@dataclass
class _Service:
    store: Store
    embedder: Embedder | None
    config: Config
    warnings: list[str] = field(default_factory=list)  # what an operator must know
    mems: dict[str, Memory] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    worker: Worker | None = None
    worker_memory: Memory | None = None
    telemetry: Telemetry = field(default_factory=Telemetry)

    def memory(self, tenant: str) -> Memory:
        """The tenant's `Memory` on the shared store (never closed: it would close the store)."""
        with self.lock:
            mem = self.mems.get(tenant)
            if mem is None:
                mem = self.mems[tenant] = Memory(
                    self.store,
                    tenant=tenant,
                    embedder=self.embedder,
                    config=self.config,
                    telemetry=self.telemetry,
                    catch_up=0,  # a worker drains the queue: a recall only reads
                )
            return mem

    def written(self) -> None:
        """Events or jobs were written: wake the extraction worker."""
        if self.worker is not None:
            self.worker.wake()

    def start_worker(self) -> None:
        """Start the in-process extraction worker (`remem.pipeline.worker`), one thread per
        strategy: it drains the queue whenever woken, and every `WORKER_POLL_SECONDS`."""
        # jobs name their tenant; one worker serves them all
        mem = Memory(
            self.store,
            tenant="default",
            embedder=self.embedder,
            config=self.config,
            telemetry=self.telemetry,
        )
        self.worker_memory = mem
        try:
            self.worker = Worker(mem.pipeline, idle_seconds=WORKER_POLL_SECONDS)
        except Exception:  # keep serving; the jobs stay queued for another worker
            log.exception("the extraction worker could not start")
            return
        self.worker.start()

    def stop_worker(self) -> None:
        """Stop the worker after the batches in hand, and close its model doors."""
        if self.worker is not None:
            self.worker.stop(timeout=30)
        if self.worker_memory is not None:
            self.worker_memory.close_models()


# -- the app -----------------------------------------------------------------------------------


def create_app(
    db_path: str | Path,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_pending_bodies: int = DEFAULT_MAX_PENDING_BODIES,
    embedder: Embedder | None = None,
    worker: bool = True,
    config: Config | str | Path | None = None,
    allow_rls_bypass: bool = False,
    telemetry: Telemetry | None = None,
    metrics: bool | None = None,
    metrics_host: str = "127.0.0.1",
    metrics_port: int | None = None,
) -> FastAPI:
    """The FastAPI app over the database `db_path` names (created if missing): a path,
    `sqlite:///path`, or a PostgreSQL URL (`remem.memory.memory.open_store`).

    `embedder` None means lexical recall only; `remem serve` passes the
    default embedder when one is installed. `config` is the memory
    configuration (strategies, model) extraction runs with. A request body must
    arrive within `body_timeout` seconds (else 408), and at most
    `max_pending_bodies` are received at once (beyond that 503 with Retry-After;
    `remem.service.bodies`).

    A PostgreSQL role that row-level security does not bind (a superuser,
    BYPASSRLS) is refused with `RlsBypassed` unless `allow_rls_bypass`; allowed,
    it is logged at startup and shown in `/healthz` as `warnings`.

    `telemetry` sets where spans go (default: `Telemetry.create()`, i.e. `$REMEM_OTEL`).
    `metrics` (default: on when prometheus_client is installed) keeps the Prometheus
    metrics; `metrics_port` also serves the process's on `metrics_host` without a key
    (port 0: a free one, in `app.state.metrics_listener.port` once started).
    """
    settings = config if isinstance(config, Config) else load_config(config)
    store = open_store(db_path)
    try:
        refuse_rls_bypass(store, allowed=allow_rls_bypass)
    except RlsBypassed:
        store.close()
        raise
    warnings = store.warnings()
    tel, listener = _telemetry(store, telemetry, metrics, metrics_host, metrics_port)
    svc = _Service(store, embedder, settings, warnings, telemetry=tel)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for line in warnings:
            log.warning("remem: warning: %s", line)
        if worker:
            svc.start_worker()  # it drains what an earlier run left queued at once
        if listener is not None:
            listener.start()
        try:
            yield
        finally:
            if listener is not None:
                listener.stop()
            svc.stop_worker()
            for mem in svc.mems.values():
                mem.close_models()
            svc.store.close()

    app = FastAPI(
        title="remem",
        version="0.1.0",
        description="Long-term memory for AI agents. Operations map onto Bedrock "
        "AgentCore Memory's; authenticate with `Authorization: Bearer KEY`.",
        lifespan=lifespan,
    )
    app.state.service = svc
    app.state.metrics = tel.metrics
    app.state.metrics_listener = listener
    app.add_middleware(
        BodyLimit,
        limits=BodyLimits(max_body_bytes, body_timeout, max_pending_bodies),
    )
    if tel.metrics is not None:
        from remem.telemetry.http import RequestMetrics

        app.add_middleware(RequestMetrics, metrics=tel.metrics)
    install_error_handlers(app)

    for router in ROUTERS:
        app.include_router(router)
    mount_console(app)  # the web console at /console (`remem.console`)
    return app


def _telemetry(
    store: Store, telemetry: Telemetry | None, metrics: bool | None, host: str, port: int | None
) -> tuple[Telemetry, Any]:
    """The service's telemetry with its metrics (when kept), and the metrics listener."""
    tel = telemetry if telemetry is not None else Telemetry.create()
    if metrics is None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            metrics = False
    if metrics is False:
        if port is not None:
            raise InvalidInput("--metrics-port needs the metrics: pip install 'remem[metrics]'")
        return tel, None
    from remem.telemetry.http import Listener
    from remem.telemetry.metrics import Metrics

    kept = Metrics(store)
    listener = None if port is None else Listener(kept, host, port)
    return replace(tel, metrics=kept), listener
