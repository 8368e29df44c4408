"""Health and the extraction job queue: /healthz, /v1/jobs."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from remem.policy import scope
from remem.service.routes.deps import Svc, Who, refuses_body

router = APIRouter()


@router.get("/healthz", tags=["service"])
def healthz(svc: Svc) -> dict[str, Any]:
    """Liveness: the database answers; `warnings` (only when there are any) says what
    an operator must know, e.g. a role that bypasses row-level security."""
    svc.store.ping()
    return {"status": "ok", "warnings": svc.warnings} if svc.warnings else {"status": "ok"}


@router.get("/v1/jobs", tags=["jobs"])
def jobs(who: Who, svc: Svc) -> dict[str, Any]:
    """Extraction job counts by status of the key's scope: the tenant's, or for a key
    narrowed to one actor, those of that actor's events."""
    return svc.store.job_counts(who.tenant, who.actor)


@router.get("/v1/jobs/list", tags=["jobs"])
def list_jobs(
    who: Who,
    svc: Svc,
    status: Annotated[str | None, Query(description="pending, running, done or failed")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """The extraction jobs of the key's scope, newest first: strategy, state, attempts,
    last error (ListMemoryExtractionJobs); a key narrowed to one actor lists only the
    jobs of that actor's events."""
    found = svc.memory(who.tenant).jobs(status, limit, actor=who.actor)
    return {"jobs": [j.as_dict() for j in found]}


@router.post("/v1/jobs/retry", tags=["jobs"], dependencies=[refuses_body("failed_only")])
def retry_jobs(who: Who, svc: Svc, failed_only: bool = True) -> dict[str, Any]:
    """Put the tenant's failed jobs (and, unless `failed_only`, waiting ones) back to
    run now (StartMemoryExtractionJob). Needs an admin key for the whole tenant: it
    acts on the tenant's queue, whose failures (an endpoint down) are not one actor's.
    It takes no body: one naming a job is refused (422) rather than every job retried."""
    scope.need_tenant_wide(who)
    scope.need_role(who, "admin")
    retried = svc.memory(who.tenant).retry_jobs(failed_only=failed_only)
    svc.written()
    return {"retried": retried}
