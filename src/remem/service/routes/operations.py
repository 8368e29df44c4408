"""Health, readiness and the extraction job queue: /healthz, /readyz, /v1/jobs."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from remem.errors import InvalidInput
from remem.policy import scope
from remem.policy.scope import named
from remem.service import paging
from remem.service.answers import (
    ANY,
    KEYED,
    Health,
    JobCounts,
    JobList,
    Readiness,
    Retried,
    errors,
)
from remem.service.routes.deps import Svc, Who, refuses_body

router = APIRouter()


@router.get(
    "/healthz",
    tags=["service"],
    operation_id="check_health",
    response_model=Health,
    response_model_exclude_unset=True,
    responses=errors(*ANY),
)
def healthz(svc: Svc) -> dict[str, Any]:
    """Liveness: the database answers; `warnings` (only when there are any) says what
    an operator must know, e.g. a role that bypasses row-level security."""
    svc.store.ping()
    return {"status": "ok", "warnings": svc.warnings} if svc.warnings else {"status": "ok"}


@router.get(
    "/readyz",
    tags=["service"],
    operation_id="check_readiness",
    response_model=Readiness,
    responses={
        503: {"model": Readiness, "description": "not ready: `checks` says what is not"},
        **errors(408, 413),
    },
)
def readyz(svc: Svc) -> JSONResponse:
    """Readiness (no key): the database answers at the schema this code knows
    (migrations done), the embedder has embedded (the first probe loads it), and when
    this process runs the extraction worker, that it is alive, with `lag_seconds`, the
    age of the oldest pending job. 503 with the same body when a check fails."""
    answer = svc.readiness()
    return JSONResponse(answer, status_code=200 if answer["status"] == "ready" else 503)


@router.get(
    "/v1/jobs",
    tags=["jobs"],
    operation_id="count_jobs",
    response_model=JobCounts,
    responses=errors(*KEYED),
)
def jobs(who: Who, svc: Svc) -> dict[str, Any]:
    """Extraction job counts by status of the key's scope: the tenant's, or for a key
    narrowed to one actor, those of that actor's events."""
    return svc.store.jobs.job_counts(who.tenant, who.actor)


@router.get(
    "/v1/jobs/list",
    tags=["jobs"],
    operation_id="list_jobs",
    response_model=JobList,
    responses=errors(*KEYED, 400),
)
def list_jobs(
    who: Who,
    svc: Svc,
    status: Annotated[str | None, Query(description="pending, running, done or failed")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: paging.Cursor = None,
) -> dict[str, Any]:
    """The extraction jobs of the key's scope, newest first: strategy, state, attempts,
    last error (ListMemoryExtractionJobs); a key narrowed to one actor lists only the
    jobs of that actor's events. `next_cursor` fetches the next page, read below the last
    job's number (`remem.service.paging`)."""
    from remem.pipeline.jobs import JOB_STATUSES

    if status is not None and status not in JOB_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(JOB_STATUSES)}; got {named(status)}")
    query = (who.tenant, who.actor, status)
    after = paging.read("jobs", query, cursor, (paging.NUMBER,))
    before = None if after is None else int(after[0])
    found = svc.store.jobs.list_jobs(who.tenant, status, limit + 1, who.actor, before)
    jobs, next_cursor = paging.page(found, limit, lambda j: (j.id,), "jobs", query)
    return {"jobs": [j.as_dict() for j in jobs], "next_cursor": next_cursor}


@router.post(
    "/v1/jobs/retry",
    tags=["jobs"],
    dependencies=[refuses_body("failed_only")],
    operation_id="retry_jobs",
    response_model=Retried,
    responses=errors(*KEYED, 403),
)
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
