"""Facts and profiles: one field's exact value, every field of an actor."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from remem.facts.request import FactAsk, ProfileAsk
from remem.policy import scope
from remem.service import audit
from remem.service.answers import KEYED, FactOut, ProfileOut, errors
from remem.service.routes.deps import Svc, Via, Who
from remem.writes.batch import SensitivityName

router = APIRouter()


@router.get(
    "/v1/actors/{actor_id}/facts/{field}",
    tags=["facts"],
    operation_id="get_fact",
    response_model=FactOut,
    responses=errors(*KEYED, 403),
)
def get_fact(
    actor_id: str,
    field: str,
    who: Who,
    svc: Svc,
    as_of: Annotated[str | None, Query(max_length=64, description="ISO 8601")] = None,
    known_at: Annotated[str | None, Query(max_length=64)] = None,
    valid_at: Annotated[str | None, Query(max_length=64)] = None,
    via: Via = "api",
) -> dict[str, Any]:
    """One field's value by exact lookup (200 always): `status` is found, conflict
    (each candidate with provenance) or not_found. Audited as a recall (`recalled`)."""
    actor = scope.actor_for(who, actor_id)
    audit.recalled(svc.store.audit, who, via, actor)
    request = FactAsk(actor=actor, field=field, as_of=as_of, known_at=known_at, valid_at=valid_at)
    return svc.memory(who.tenant).ask_fact(request).as_dict()


@router.get(
    "/v1/actors/{actor_id}/profile",
    tags=["facts"],
    operation_id="get_profile",
    response_model=ProfileOut,
    responses=errors(*KEYED, 403),
)
def get_profile(
    actor_id: str,
    who: Who,
    svc: Svc,
    as_of: Annotated[str | None, Query(max_length=64, description="ISO 8601")] = None,
    known_at: Annotated[str | None, Query(max_length=64)] = None,
    valid_at: Annotated[str | None, Query(max_length=64)] = None,
    max_sensitivity: Annotated[SensitivityName | None, Query()] = None,
    budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    via: Via = "api",
) -> dict[str, Any]:
    """Every current field of an actor and its value, conflicts marked, with record
    ids, highest authority then newest first, cut to `budget_tokens`. Audited as a
    recall (`recalled`)."""
    actor = scope.actor_for(who, actor_id)
    audit.recalled(svc.store.audit, who, via, actor)
    request = ProfileAsk(actor=actor, as_of=as_of, known_at=known_at, valid_at=valid_at,
                         max_sensitivity=max_sensitivity, budget=budget_tokens)  # fmt: skip
    return svc.memory(who.tenant).ask_profile(request).as_dict()
