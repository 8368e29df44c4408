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

Extraction runs in the server process: a worker thread wakes after every
write (and every second, to pick up retries and other processes' events) and
runs `Memory.process()`. Pass `worker=False` (`remem serve --no-worker`) when
separate worker processes drain the queue instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI

from remem.config import Config, load_config
from remem.embed.base import Embedder
from remem.errors import RlsBypassed
from remem.memory import Memory, open_store
from remem.service.bodies import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_PENDING_BODIES,
    BodyLimit,
    BodyLimits,
)
from remem.service.http_errors import install_error_handlers
from remem.service.routes import ROUTERS
from remem.store.base import Store, refuse_rls_bypass

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
    wake: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    def memory(self, tenant: str) -> Memory:
        """The tenant's `Memory` on the shared store (never closed: it would close the store)."""
        with self.lock:
            mem = self.mems.get(tenant)
            if mem is None:
                mem = self.mems[tenant] = Memory(
                    self.store, tenant=tenant, embedder=self.embedder, config=self.config
                )
            return mem

    def written(self) -> None:
        """Events or jobs were written: wake the extraction worker."""
        self.wake.set()

    def work(self) -> None:
        """The in-process extraction worker: drain the queue whenever woken."""
        # jobs name their tenant; one worker serves them all, one thread per strategy
        mem = Memory(self.store, tenant="default", embedder=self.embedder, config=self.config)
        try:
            while not self.stop.is_set():
                self.wake.wait(WORKER_POLL_SECONDS)
                self.wake.clear()
                if self.stop.is_set():
                    break
                try:
                    mem.process()
                except Exception:  # keep serving; the jobs stay queued and are retried
                    log.exception("extraction worker run failed")
        finally:
            mem.close_models()


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
) -> FastAPI:
    """The FastAPI app over the database `db_path` names (created if missing): a path,
    `sqlite:///path`, or a PostgreSQL URL (`remem.memory.open_store`).

    `embedder` None means lexical recall only; `remem serve` passes the
    default embedder when one is installed. `config` is the memory
    configuration (strategies, model) extraction runs with. A request body must
    arrive within `body_timeout` seconds (else 408), and at most
    `max_pending_bodies` are received at once (beyond that 503 with Retry-After;
    `remem.service.bodies`).

    A PostgreSQL role that row-level security does not bind (a superuser,
    BYPASSRLS) is refused with `RlsBypassed` unless `allow_rls_bypass`; allowed,
    it is logged at startup and shown in `/healthz` as `warnings`.
    """
    settings = config if isinstance(config, Config) else load_config(config)
    store = open_store(db_path)
    try:
        refuse_rls_bypass(store, allowed=allow_rls_bypass)
    except RlsBypassed:
        store.close()
        raise
    warnings = store.warnings()
    svc = _Service(store, embedder, settings, warnings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for line in warnings:
            log.warning("remem: warning: %s", line)
        thread = None
        if worker:
            thread = threading.Thread(target=svc.work, name="remem-worker", daemon=True)
            thread.start()
            svc.wake.set()  # drain what an earlier run left queued
        try:
            yield
        finally:
            svc.stop.set()
            svc.wake.set()
            if thread is not None:
                thread.join(timeout=30)
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
    app.add_middleware(
        BodyLimit,
        limits=BodyLimits(max_body_bytes, body_timeout, max_pending_bodies),
    )
    install_error_handlers(app)

    for router in ROUTERS:
        app.include_router(router)
    return app
