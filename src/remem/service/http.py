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

`remem serve --workers N` runs N server processes (uvicorn's supervisor; each builds its
app with `app_from_environment` from the settings `serve_environment` put in
`$REMEM_SERVE`): they share the database, and on SQLite its vector files, as any
processes on one database do. None of them runs extraction: the supervising process runs
the one worker (`supervising`), which wakes every `WORKER_POLL_SECONDS` since no
server process can wake it. Metrics are kept in prometheus_client's multiprocess mode
(a directory `remem serve` makes for the run, `$PROMETHEUS_MULTIPROC_DIR`): `/metrics` in
any process, and the `--metrics-port` listener in the supervising one, show every
process's counts (`remem.telemetry.metrics`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI

from remem.blas import keep_one_blas_thread
from remem.config.config import Config, load_config
from remem.console import mount as mount_console
from remem.embed.base import Embedder
from remem.errors import InvalidInput, RememError, RlsBypassed
from remem.memory.memory import Memory, open_store
from remem.memory.refusals import Refusals
from remem.pipeline.worker import Worker
from remem.service.bodies import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_PENDING_BODIES,
    BodyLimit,
    BodyLimits,
    TrustedKeys,
)
from remem.service.http_errors import install_error_handlers
from remem.service.lane import recall_lane
from remem.service.routes import ROUTERS
from remem.store.roles import Store, refuse_rls_bypass
from remem.telemetry import Telemetry

log = logging.getLogger("remem.service")

WORKER_POLL_SECONDS = 1.0
SERVE_ENV = "REMEM_SERVE"  # the settings of `remem serve --workers N`'s server processes


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
    embedder_ready: bool = False  # the embedder answered once (it loads lazily)
    runs_worker: bool = False  # this process was to run the extraction worker
    # the texts the embedder refused, of every tenant: one set, held to its bounds
    # whatever the number of tenants (`remem.memory.refusals`)
    refused: Refusals = field(default_factory=Refusals)

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
                mem.deps = replace(mem.deps, refused=self.refused)
            return mem

    def readiness(self) -> dict[str, Any]:
        """What `GET /readyz` answers: whether the database answers at the schema this code
        knows (the store migrated it on opening; a newer one is refused there), whether
        the embedder has embedded (the first probe loads it), and, when this process runs
        the extraction worker, whether it is alive and the age of the oldest pending job."""
        checks: dict[str, bool] = {}
        try:
            self.store.ping()
            version = self.store.schema_version()
            checks["database"] = True
        except RememError:
            version, checks["database"] = 0, False
        checks["migrations"] = version == self.store.schema_known
        if self.embedder is not None and not self.embedder_ready:
            try:
                self.embedder.embed(["ready"])
                self.embedder_ready = True
            except Exception:
                log.exception("the embedder could not embed")
        checks["embedder"] = self.embedder is None or self.embedder_ready
        lag, pending = None, None
        if self.runs_worker:
            checks["worker"] = self.worker is not None and self.worker.running
            if checks["database"]:
                lag, pending = self._lag()
        ok = all(checks.values())
        return {
            "status": "ready" if ok else "not_ready",
            "checks": checks,
            "schema_version": version,
            "embedder": None if self.embedder is None else self.embedder.name,
            "worker": ("running" if checks["worker"] else "stopped")
            if self.runs_worker
            else "elsewhere",
            "lag_seconds": lag,
            "pending_jobs": pending,
        }

    def _lag(self) -> tuple[float, int]:
        """The age in seconds of the oldest pending job of any tenant, and how many wait."""
        groups = [g for g in self.store.jobs.job_groups(None) if g.status == "pending"]
        if not groups:
            return 0.0, 0
        oldest = min(g.oldest for g in groups)
        age = (datetime.now(UTC) - oldest).total_seconds()
        return round(max(age, 0.0), 3), sum(g.count for g in groups)

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
        mem.deps = replace(mem.deps, refused=self.refused)
        self.worker_memory = mem
        self.runs_worker = True
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
    recall_threads: int | None = None,
    batch_threads: int | None = None,
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

    `recall_threads` recalls run at once (`POST /v1/memories/retrieve`, default
    `default_recall_threads()`); more wait their turn in arrival order, while every
    other route runs on the thread pool as before. Likewise `batch_threads` batch writes
    (the four `/v1/memories/batch*` routes, up to 1,000 writes each; default the cores),
    so that batches cannot hold every thread of that pool (`BatchLane`).
    """
    lane = recall_lane(recall_threads)
    batch_lane = recall_lane(batch_threads, "batch_threads")
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
        keep_one_blas_thread()  # on this process's main thread, before a recall's (`remem.blas`)
        _app.state.recalls = anyio.CapacityLimiter(lane)  # the recall lane (`RecallHop`)
        _app.state.batches = anyio.CapacityLimiter(batch_lane)  # batch writes (`BatchLane`)
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
    app.state.trusted_keys = trusted = TrustedKeys()  # filled by `deps.principal`
    app.add_middleware(
        BodyLimit,
        limits=BodyLimits(max_body_bytes, body_timeout, max_pending_bodies),
        trusted=trusted,
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


# -- several server processes (`remem serve --workers N`) -------------------------------------


def serve_environment(db_path: str, *, lexical: bool, **settings: Any) -> dict[str, str]:
    """The environment a server process of `remem serve --workers N` builds its app from:
    `create_app`'s keyword arguments (JSON values) and whether to load the embedder. The
    database travels here too, not on a command line (a URL may hold a password)."""
    return {SERVE_ENV: json.dumps({"db": db_path, "lexical": lexical, "settings": settings})}


def app_from_environment() -> FastAPI:
    """The app of one server process of `remem serve --workers N` (uvicorn's factory):
    `create_app` with the settings in `$REMEM_SERVE`, without the extraction worker."""
    raw = os.environ.get(SERVE_ENV)
    if raw is None:
        raise InvalidInput(f"${SERVE_ENV} is not set: start the server with remem serve")
    spec = json.loads(raw)
    embedder = None
    if not spec["lexical"]:
        from remem.embed.choose import for_config

        config = spec["settings"].get("config")
        embedder = for_config(config if isinstance(config, str) else None)
    return create_app(spec["db"], embedder=embedder, worker=False, **spec["settings"])


@contextmanager
def supervising(
    db_path: str | Path,
    *,
    embedder: Embedder | None,
    config: Config | str | Path | None,
    worker: bool = True,
    metrics_host: str = "127.0.0.1",
    metrics_port: int | None = None,
) -> Iterator[None]:
    """What the supervising process of `remem serve --workers N` runs, over its own
    connection to the database: the one extraction worker (unless not `worker`), counted
    in the shared metrics when they are kept, and the `metrics_port` listener, which
    shows every process's; both stopped (the worker after the batches in hand) on exit."""
    settings = config if isinstance(config, Config) else load_config(config)
    store = open_store(db_path)
    try:
        tel, listener = _telemetry(store, None, None, metrics_host, metrics_port)
    except BaseException:
        store.close()
        raise
    svc = _Service(store, embedder, settings, telemetry=tel)
    try:
        if worker:
            svc.start_worker()
        if listener is not None:
            listener.start()
        yield
    finally:
        if listener is not None:
            listener.stop()
        svc.stop_worker()
        svc.store.close()
