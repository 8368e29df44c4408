"""The HTTP routes, one router per resource, in the order `create_app` includes them.

    operations  /healthz, /v1/jobs (the extraction queue)
    events      /v1/events
    recall      /v1/memories/retrieve
    facts       /v1/actors/{actor_id}/facts/{field}, /v1/actors/{actor_id}/profile
    records     /v1/memories (list, read, history, forget one, batch writes)
    procedures  /v1/procedures, /v1/memories/{record_id}/approve|reject
    documents   /v1/documents (add, list, read, search, remove)
    thread      /v1/actors/{actor_id}/checkpoints (save, load, list by name, delete)
    admin       /v1/subjects/{actor_id}/forget|export, /v1/keys
    metrics     /metrics (Prometheus)

Every route takes the principal of its key (`deps.Who`) and the running
service (`deps.Svc`); scope decisions are `remem.policy.scope`'s.
"""

from fastapi import APIRouter

from remem.service.routes import (
    admin,
    documents,
    events,
    facts,
    metrics,
    operations,
    procedures,
    recall,
    records,
    thread,
)

ROUTERS: tuple[APIRouter, ...] = (
    operations.router,
    events.router,
    recall.router,
    facts.router,
    records.router,
    records.batches,
    procedures.router,
    documents.router,
    thread.router,
    admin.router,
    metrics.router,
)
