"""The HTTP service: `Memory` behind FastAPI, with API-key principals.

    app = create_app("memory.db")          # then: uvicorn, or `remem serve`
    app = create_app("postgresql://app@db.internal/remem")   # the same, on PostgreSQL

Thin over the library: no policy lives here. Every request is authenticated
by `Authorization: Bearer KEY`; the key fixes the tenant and the actors the
request may touch (`remem.service.keys`). A body or query may narrow that
scope, never widen it: another actor is 403, another tenant's record is 404.

Errors are `{"error": {"code", "message"}}`: 401 without a valid key, 403
outside the key's scope or role, 404 unknown ids, 409 conflicts, 408 bodies
not received within `body_timeout`, 413 bodies over `max_body_bytes`, 422
malformed JSON or fields (and remem's InvalidInput and RefusedContent), 503
when the database cannot answer or `max_pending_bodies` are being received.

Extraction runs in the server process: the worker (`remem.worker`, one thread
per strategy) wakes after every write (and every second, to pick up retries
and other processes' events) and drains the queue. Pass `worker=False`
(`remem serve --no-worker`) when separate worker processes drain the queue instead.
"""

# no `from __future__ import annotations`: FastAPI reads the closures' `Who` at runtime
import base64
import binascii
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from remem import batch
from remem.config import Config, load_config
from remem.embed.base import Embedder
from remem.errors import (
    ConflictError,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    RlsBypassed,
    StoreError,
)
from remem.ids import new_id
from remem.memory import Memory, open_store
from remem.model import Record
from remem.policy.scope import SHARED_ACTOR, check_name
from remem.service import keys as keyring
from remem.service.bodies import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_PENDING_BODIES,
    BodyLimit,
    BodyLimits,
)
from remem.service.keys import Forbidden, Principal, Unauthorized
from remem.service.schemas import (
    BatchCreateIn,
    BatchDeleteIn,
    BatchUpdateIn,
    CreateItem,
    DeleteItem,
    EventBatchIn,
    EventIn,
    KeyIn,
    ProposeIn,
    RejectIn,
    RetrieveIn,
    UpdateItem,
)
from remem.store.base import ForgetReport, Store, refuse_rls_bypass
from remem.worker import Worker

log = logging.getLogger("remem.service")

WORKER_POLL_SECONDS = 1.0
_CURSOR = re.compile(r"o:([0-9]{1,17})")  # what `_cursor` hands out, matched whole

_STATUS: list[tuple[type[RememError], int]] = [
    (InvalidInput, 422),
    (RefusedContent, 422),
    (NotFound, 404),
    (ConflictError, 409),
    (StoreError, 503),
]


# -- the service state -------------------------------------------------------------------


@dataclass
class _Service:
    store: Store
    embedder: Embedder | None
    config: Config
    mems: dict[str, Memory] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    worker: Worker | None = None
    worker_memory: Memory | None = None

    def memory(self, tenant: str) -> Memory:
        """The tenant's `Memory` on the shared store (never closed: it would close the store)."""
        with self.lock:
            mem = self.mems.get(tenant)
            if mem is None:
                mem = self.mems[tenant] = Memory(
                    self.store, tenant=tenant, embedder=self.embedder, config=self.config
                )
            return mem

    def start_worker(self) -> None:
        """Start the in-process extraction worker (`remem.worker`), one thread per
        strategy: it drains the queue whenever woken, and every `WORKER_POLL_SECONDS`."""
        # jobs name their tenant; one worker serves them all
        mem = Memory(self.store, tenant="default", embedder=self.embedder, config=self.config)
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
    svc = _Service(store, embedder, settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for line in warnings:
            log.warning("remem: warning: %s", line)
        if worker:
            svc.start_worker()  # it drains what an earlier run left queued at once
        try:
            yield
        finally:
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
    app.add_middleware(
        BodyLimit,
        limits=BodyLimits(max_body_bytes, body_timeout, max_pending_bodies),
    )
    _install_error_handlers(app)

    bearer = HTTPBearer(auto_error=False, description="an API key from `remem keys create`")

    def principal(
        creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if creds is None:
            raise Unauthorized("send Authorization: Bearer KEY (create one: remem keys create)")
        who = keyring.verify_key(svc.store, creds.credentials)
        if who is None:
            raise Unauthorized("the API key is unknown or revoked")
        return who

    Who = Annotated[Principal, Depends(principal)]

    def written() -> None:
        if svc.worker is not None:
            svc.worker.wake()

    # -- health and jobs --------------------------------------------------------------

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, Any]:
        """Liveness: the database answers; `warnings` (only when there are any) says what
        an operator must know, e.g. a role that bypasses row-level security."""
        svc.store.ping()
        return {"status": "ok", "warnings": warnings} if warnings else {"status": "ok"}

    @app.get("/v1/jobs", tags=["jobs"])
    def jobs(who: Who) -> dict[str, Any]:
        """Extraction job counts by status of the key's scope: the tenant's, or for a key
        narrowed to one actor, those of that actor's events."""
        return svc.store.job_counts(who.tenant, who.actor)

    @app.get("/v1/jobs/list", tags=["jobs"])
    def list_jobs(
        who: Who,
        status: Annotated[str | None, Query(description="pending, running, done or failed")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """The extraction jobs of the key's scope, newest first: strategy, state, attempts,
        last error (ListMemoryExtractionJobs); a key narrowed to one actor lists only the
        jobs of that actor's events."""
        found = svc.memory(who.tenant).jobs(status, limit, actor=who.actor)
        return {"jobs": [j.as_dict() for j in found]}

    @app.post("/v1/jobs/retry", tags=["jobs"])
    def retry_jobs(who: Who, failed_only: bool = True) -> dict[str, Any]:
        """Put the tenant's failed jobs (and, unless `failed_only`, waiting ones) back to
        run now (StartMemoryExtractionJob). Needs an admin key for the whole tenant: it
        acts on the tenant's queue, whose failures (an endpoint down) are not one actor's."""
        _tenant_wide(who)
        _role(who, "admin")
        retried = svc.memory(who.tenant).retry_jobs(failed_only=failed_only)
        written()
        return {"retried": retried}

    # -- events -----------------------------------------------------------------------

    @app.post("/v1/events", status_code=201, tags=["events"])
    def create_events(body: EventBatchIn | EventIn, who: Who) -> dict[str, Any]:
        """Append one event, or a batch in one transaction (CreateEvent)."""
        items = body.events if isinstance(body, EventBatchIn) else [body]
        for item in items:
            _allow(who, item.actor_id)
        rows = [
            {
                "actor": e.actor_id,
                "session": e.session_id,
                "role": e.role,
                "text": e.text,
                "time": e.time,
                "event_id": e.event_id or new_id("evt"),
                "metadata": e.metadata,
            }
            for e in items
        ]
        mem = svc.memory(who.tenant)
        created = mem.add_events(rows)
        written()
        # an erased actor's new events start a new memory: say so beside each of them
        fresh = {a: mem.fresh_start(a) for a in {e.actor_id for e in items}}
        out = []
        for e, r, c in zip(items, rows, created, strict=True):
            answer: dict[str, Any] = {"event_id": r["event_id"], "created": c}
            if fresh[e.actor_id] is not None:
                answer["fresh_start"] = fresh[e.actor_id]
            out.append(answer)
        return {"events": out}

    @app.get("/v1/events", tags=["events"])
    def list_events(
        who: Who,
        actor_id: Annotated[str | None, Query(max_length=200)] = None,
        session_id: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        cursor: Annotated[str | None, Query(max_length=100)] = None,
    ) -> dict[str, Any]:
        """An actor's events in the order they happened, a page at a time (ListEvents)."""
        actor = _actor(who, actor_id)
        if session_id is not None:
            check_name("session", session_id)
        start = _offset(cursor)
        page = svc.memory(who.tenant).events(
            actor=actor, session=session_id, limit=start + limit + 1
        )
        rows = page[start : start + limit]
        more = len(page) > start + limit
        return {
            "events": [
                {
                    "event_id": e.id,
                    "actor_id": e.actor,
                    "session_id": e.session,
                    "role": e.role.value,
                    "text": e.text,
                    "time": e.time.isoformat(),
                    "metadata": e.metadata,
                }
                for e in rows
            ],
            "next_cursor": _cursor(start + limit) if more else None,
        }

    # -- memories: read --------------------------------------------------------------

    @app.post("/v1/memories/retrieve", tags=["memories"])
    def retrieve(body: RetrieveIn, who: Who) -> dict[str, Any]:
        """The recall packet for a query, inside a token budget (RetrieveMemoryRecords);
        with `namespace`, only the records of that namespace (no raw events)."""
        actor = body.actor_id
        if body.namespace is not None:
            owner = _namespace_actor(who, body.namespace)
            if actor is not None and actor != owner:
                raise InvalidInput("namespace belongs to another actor than actor_id")
            actor = owner
        actor = _actor(who, actor)
        packet = svc.memory(who.tenant).recall(
            actor=actor,
            query=body.query,
            k=body.top_k,
            budget=body.budget_tokens,
            as_of=body.as_of,
            explain=body.explain,
            include_events=body.include_events,
            namespace=body.namespace,
            max_sensitivity=body.max_sensitivity,
            pin=body.pin,
        )
        return packet.as_dict()

    @app.get("/v1/actors/{actor_id}/facts/{field}", tags=["facts"])
    def get_fact(
        actor_id: str,
        field: str,
        who: Who,
        as_of: Annotated[str | None, Query(max_length=64, description="ISO 8601")] = None,
        known_at: Annotated[str | None, Query(max_length=64)] = None,
        valid_at: Annotated[str | None, Query(max_length=64)] = None,
    ) -> dict[str, Any]:
        """One field's value by exact lookup (200 always): `status` is found, conflict
        (each candidate with provenance) or not_found."""
        actor = _actor(who, actor_id)
        found = svc.memory(who.tenant).fact(
            actor=actor, field=field, as_of=as_of, known_at=known_at, valid_at=valid_at
        )
        return found.as_dict()

    @app.get("/v1/actors/{actor_id}/profile", tags=["facts"])
    def get_profile(
        actor_id: str,
        who: Who,
        as_of: Annotated[str | None, Query(max_length=64, description="ISO 8601")] = None,
        known_at: Annotated[str | None, Query(max_length=64)] = None,
        valid_at: Annotated[str | None, Query(max_length=64)] = None,
        max_sensitivity: Annotated[
            Literal["normal", "personal", "sensitive"] | None, Query()
        ] = None,
        budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    ) -> dict[str, Any]:
        """Every current field of an actor and its value, conflicts marked, with record
        ids, highest authority then newest first, cut to `budget_tokens`."""
        actor = _actor(who, actor_id)
        prof = svc.memory(who.tenant).profile(
            actor=actor,
            as_of=as_of,
            known_at=known_at,
            valid_at=valid_at,
            max_sensitivity=max_sensitivity,
            budget=budget_tokens,
        )
        return prof.as_dict()

    @app.get("/v1/memories", tags=["memories"])
    def list_memories(
        who: Who,
        actor_id: Annotated[str | None, Query(max_length=200)] = None,
        all: Annotated[bool, Query(description="include invalid and proposed records")] = False,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
        as_of: Annotated[
            str | None, Query(max_length=64, description="ISO 8601: known and valid then")
        ] = None,
    ) -> dict[str, Any]:
        """An actor's records, newest first (ListMemoryRecords); with `as_of`, those
        known and valid then."""
        actor = _actor(who, actor_id)
        recs = svc.memory(who.tenant).records(actor=actor, all=all, limit=limit, as_of=as_of)
        return {"records": [r.as_dict() for r in recs]}

    @app.get("/v1/memories/{record_id}", tags=["memories"])
    def get_memory(record_id: str, who: Who) -> dict[str, Any]:
        """One record (GetMemoryRecord); another tenant's or actor's id is 404."""
        return _record(svc, who, record_id).as_dict()

    @app.get("/v1/memories/{record_id}/history", tags=["memories"])
    def memory_history(record_id: str, who: Who) -> dict[str, Any]:
        """Every change of a record, oldest first."""
        _record(svc, who, record_id)
        entries = svc.memory(who.tenant).history(record_id)
        return {"history": [h.as_dict() for h in entries]}

    # -- memories: write ---------------------------------------------------------------

    @app.delete("/v1/memories/{record_id}", tags=["memories"])
    def delete_memory(record_id: str, who: Who) -> dict[str, Any]:
        """Forget one record everywhere and verify it (DeleteMemoryRecord); a record shared
        by the whole tenant needs an admin key for the whole tenant."""
        _record(svc, who, record_id, write=True)
        report = svc.memory(who.tenant).forget(record_id=record_id)
        return {"record_id": record_id, **_report(report)}

    @app.post("/v1/memories/batch-create", tags=["memories"])
    def batch_create(body: BatchCreateIn, who: Who) -> dict[str, Any]:
        """Write explicit records, confirmed at once (BatchCreateMemoryRecords)."""
        for item in body.records:  # the whole batch is refused before any write
            _actor(who, item.actor_id)

        def run(item: CreateItem, actor: str) -> dict[str, Any]:
            rec = svc.memory(who.tenant).remember(
                actor=actor,
                text=item.text,
                kind=item.kind,
                valid_until=item.valid_until,
                field=item.field,
                value=item.value,
                sensitivity=item.sensitivity,
            )
            return {"status": 201, "record_id": rec.id}

        return _batch(svc, who, "create", body.records, lambda i: _actor(who, i.actor_id), run)

    @app.post("/v1/memories/batch-update", tags=["memories"])
    def batch_update(body: BatchUpdateIn, who: Who) -> dict[str, Any]:
        """Correct records: each new text supersedes its record (BatchUpdateMemoryRecords)."""

        def run(item: UpdateItem, actor: str) -> dict[str, Any]:
            new = _supersede(svc.memory(who.tenant), item, who.key_id)
            return {"status": 200, "record_id": new.id, "supersedes": item.record_id}

        return _batch(svc, who, "update", body.records, lambda i: _actor_of(svc, who, i), run)

    @app.post("/v1/memories/batch-delete", tags=["memories"])
    def batch_delete(body: BatchDeleteIn, who: Who) -> dict[str, Any]:
        """Forget records everywhere and verify each (BatchDeleteMemoryRecords)."""

        def run(item: DeleteItem, _actor: str) -> dict[str, Any]:
            report = svc.memory(who.tenant).forget(record_id=item.record_id)
            return {"status": 200, "record_id": item.record_id, **_report(report)}

        return _batch(svc, who, "delete", body.records, lambda i: _actor_of(svc, who, i), run)

    # -- procedures: propose, approve, reject -----------------------------------------------

    @app.post("/v1/procedures", status_code=201, tags=["procedures"])
    def propose(body: ProposeIn, who: Who) -> dict[str, Any]:
        """Propose a procedure; it stays inactive until a reviewer approves it. Without
        `actor_id` it is shared by the whole tenant, which needs a key for the whole tenant."""
        if body.actor_id is not None:
            check_name("actor_id", body.actor_id)
        keyring.authorize(who, "propose", body.actor_id or SHARED_ACTOR)
        rec = svc.memory(who.tenant).propose_procedure(
            text=body.text, name=body.name, actor=body.actor_id, proposed_by=who.key_id
        )
        return rec.as_dict()

    @app.post("/v1/memories/{record_id}/approve", tags=["procedures"])
    def approve(record_id: str, who: Who) -> dict[str, Any]:
        """Approve a proposed procedure (reviewers and admins; a shared one: of the whole
        tenant)."""
        _role(who, "reviewer")
        keyring.authorize(who, "review", _record(svc, who, record_id).actor)
        return svc.memory(who.tenant).approve(record_id, reviewer=who.key_id).as_dict()

    @app.post("/v1/memories/{record_id}/reject", tags=["procedures"])
    def reject(record_id: str, who: Who, body: RejectIn | None = None) -> dict[str, Any]:
        """Reject a proposed procedure with a reason (reviewers and admins; a shared one:
        of the whole tenant)."""
        _role(who, "reviewer")
        keyring.authorize(who, "review", _record(svc, who, record_id).actor)
        reason = body.reason if body is not None else ""
        return (
            svc.memory(who.tenant).reject(record_id, reviewer=who.key_id, reason=reason).as_dict()
        )

    # -- subjects: erasure and export --------------------------------------------------------

    @app.post("/v1/subjects/{actor_id}/forget", tags=["subjects"])
    def forget_subject(actor_id: str, who: Who) -> dict[str, Any]:
        """Erase everything of one actor and verify it by reading back (admins)."""
        _role(who, "admin")
        actor = _actor(who, actor_id)
        report = svc.memory(who.tenant).forget(actor=actor)
        return {"actor_id": actor, **_report(report)}

    @app.get("/v1/subjects/{actor_id}/export", tags=["subjects"])
    def export_subject(actor_id: str, who: Who) -> dict[str, Any]:
        """Everything remem holds about one actor, in a portable shape (admins)."""
        _role(who, "admin")
        actor = _actor(who, actor_id)
        return {"actor_id": actor, "rows": list(svc.memory(who.tenant).export(actor=actor))}

    # -- keys ----------------------------------------------------------------------------

    @app.get("/v1/keys", tags=["keys"])
    def list_keys(who: Who) -> dict[str, Any]:
        """The tenant's API keys, without secrets (admins)."""
        _role(who, "admin")
        found = keyring.list_keys(svc.store, who.tenant)
        return {"keys": [k.as_dict() for k in found if who.actor in (None, k.actor)]}

    @app.post("/v1/keys", status_code=201, tags=["keys"])
    def create_key(body: KeyIn, who: Who) -> dict[str, Any]:
        """A new key in the caller's tenant; the secret is in this answer only (admins)."""
        _role(who, "admin")
        actor = body.actor_id if body.actor_id is not None else who.actor
        if actor is not None:
            _allow(who, actor)
        key, secret = keyring.create_key(svc.store, tenant=who.tenant, actor=actor, role=body.role)
        return {**key.as_dict(), "key": secret}

    @app.delete("/v1/keys/{key_id}", tags=["keys"])
    def revoke_key(key_id: str, who: Who) -> dict[str, Any]:
        """Revoke a key of the caller's tenant at once (admins)."""
        _role(who, "admin")
        mine = svc.store.get_key(key_id, who.tenant)
        if mine is None or who.actor not in (None, mine.actor):
            raise NotFound(f"no API key {key_id!r} in this tenant")
        return keyring.revoke_key(svc.store, key_id, who.tenant).as_dict()

    return app


# -- scope ------------------------------------------------------------------------------------


def _allow(who: Principal, actor: str) -> str:
    check_name("actor_id", actor)
    if not who.allows(actor):
        raise Forbidden(f"this API key may not act on actor {actor!r}")
    return actor


def _actor(who: Principal, actor_id: str | None) -> str:
    """The actor a request names, or the key's own; never one the key does not allow."""
    if actor_id is None:
        if who.actor is None:
            raise InvalidInput("actor_id is required with a key for the whole tenant")
        return who.actor
    return _allow(who, actor_id)


def _tenant_wide(who: Principal) -> None:
    if who.actor is not None:
        raise Forbidden("this needs a key for the whole tenant; this key is for one actor")


def _role(who: Principal, role: str) -> None:
    if not who.has_role(role):
        raise Forbidden(f"this operation needs a {role} key; this key is {who.role}")


def _namespace_actor(who: Principal, namespace: str) -> str:
    """The actor whose namespace this is; another tenant's namespace is 403."""
    parts = namespace.split("/")
    if len(parts) < 5 or parts[0] != "" or parts[1] != "tenants" or parts[3] != "actors":
        raise InvalidInput("namespace must look like /tenants/{tenant}/actors/{actor}/...")
    if parts[2] != who.tenant:
        raise Forbidden("this API key may not read another tenant's namespace")
    return _allow(who, parts[4])


def _record(svc: _Service, who: Principal, record_id: str, *, write: bool = False) -> Record:
    """A record the key may see (shared procedures are readable by every key of the tenant),
    and with `write` may change (403 for a shared one it may only read)."""
    rec = svc.store.get_record(who.tenant, record_id)
    if rec is None or not who.may_see(rec):
        raise NotFound(f"no record {record_id!r} for this API key")
    if write:
        keyring.authorize(who, "change", rec.actor)
    return rec


def _actor_of(svc: _Service, who: Principal, item: UpdateItem | DeleteItem) -> str:
    """The actor of a record named in a batch; a record the key cannot see is 404."""
    return _record(svc, who, item.record_id, write=True).actor


def _supersede(mem: Memory, item: UpdateItem, by: str) -> Record:
    """Correct a record through the library: the old one becomes INVALID, linked."""
    return mem.update(item.record_id, text=item.text, valid_until=item.valid_until, by=by)


# -- batches and idempotency ---------------------------------------------------------------------


def _batch(
    svc: _Service,
    who: Principal,
    operation: str,
    items: Sequence[Any],
    resolve: Callable[[Any], str],
    run: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """Run each item; an item with a request id runs once per actor (`remem.batch.once`,
    the flow the library and the CLI run too): a repeat returns its first outcome.

    Items fail one by one (an unknown record is a 404 in its result, a request
    id used for another operation or still running a 409); a request id is
    recorded only with a successful outcome.
    """
    results = []
    for item in items:
        try:
            outcome = _item(svc, who, operation, item, resolve, run)
        except ConflictError as exc:
            outcome = _failure(409, exc)
        results.append(_with_record(svc, who, {"request_id": item.request_id, **outcome}))
    ok = sum(1 for r in results if r["status"] < 300)
    return {"results": results, "succeeded": ok, "failed": len(results) - ok}


def _item(
    svc: _Service,
    who: Principal,
    operation: str,
    item: Any,
    resolve: Callable[[Any], str],
    run: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """One item's outcome; its actor (the item's, or its record's) owns its request id."""
    rid: str | None = item.request_id
    target: str | None = getattr(item, "record_id", None)
    try:
        actor = resolve(item)
    except (NotFound, Forbidden) as exc:
        if rid is not None and target is not None and isinstance(exc, NotFound):
            replayed = batch.replay_gone(svc.store, who.tenant, rid, operation, target, who.allows)
            if replayed is not None:
                return replayed
        return _failure(_status_of(exc), exc)

    def attempt() -> tuple[dict[str, Any], bool]:
        try:
            return run(item, actor), True
        except (InvalidInput, RefusedContent, NotFound, ConflictError) as exc:
            return _failure(_status_of(exc), exc), False

    if rid is None:
        return attempt()[0]
    return batch.once(svc.store, who.tenant, actor, rid, operation, target, attempt)


def _failure(status: int, exc: RememError) -> dict[str, Any]:
    return {"status": status, "error": {"code": exc.code, "message": str(exc)}}


def _with_record(svc: _Service, who: Principal, result: dict[str, Any]) -> dict[str, Any]:
    """Add the record's current state to a successful create or update."""
    rid = result.get("record_id")
    if rid and result["status"] < 300 and "deleted" not in result:
        rec = svc.store.get_record(who.tenant, rid)
        result["record"] = rec.as_dict() if rec is not None else None
    return result


def _report(report: ForgetReport) -> dict[str, Any]:
    return {
        "deleted": report.deleted,
        "verified": report.verified,
        "remaining": report.remaining,
        "job_id": report.job_id,
        "attempts": report.attempts,
    }


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if (m := _CURSOR.fullmatch(text)) is not None:
            return int(m[1])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput("cursor is not one this service handed out; omit it to start over")


# -- errors --------------------------------------------------------------------------------------


def _status_of(exc: RememError) -> int:
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


Handler = Callable[[Request, Any], Awaitable[JSONResponse]]


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


def _install_error_handlers(app: FastAPI) -> None:
    async def remem_error(_req: Request, exc: Any) -> JSONResponse:
        status = _status_of(exc)
        if status >= 500:
            log.error("request failed: %s", exc)
        return _error(status, exc.code, str(exc))

    async def validation(_req: Request, exc: Any) -> JSONResponse:
        problems = []
        for err in _closest_member(exc.errors())[:10]:
            if err.get("type") == "json_invalid":
                problems.append(f"malformed JSON: {err.get('ctx', {}).get('error', 'invalid')}")
            else:
                msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
                problems.append(f"{_where(err.get('loc', ()))}: {msg}")
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
        return _error(422, "invalid_input", f"unusable value: {type(exc).__name__}")

    app.add_exception_handler(RememError, remem_error)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(UnicodeError, bad_text)
    app.add_exception_handler(OverflowError, bad_text)
