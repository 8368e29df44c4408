"""Recall: the packet for a query (RetrieveMemoryRecords)."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from remem.documents.flows import recall_sources
from remem.errors import InvalidInput
from remem.model import Packet
from remem.policy import scope
from remem.policy.scope import Principal
from remem.service import audit
from remem.service.answers import KEYED, PacketOut, errors
from remem.service.routes.deps import Service, Svc, Via, Who
from remem.service.schemas import RetrieveIn

router = APIRouter()


@router.post(
    "/v1/memories/retrieve",
    tags=["memories"],
    operation_id="retrieve_memories",
    response_model=PacketOut,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403),
)
def retrieve(body: RetrieveIn, who: Who, svc: Svc, via: Via = "api") -> JSONResponse:
    """The recall packet for a query, inside a token budget (RetrieveMemoryRecords);
    with `namespace`, only the records of that namespace (no raw events). `context` is
    the packet as prompt text (`Packet.as_prompt`), flagged items quoted as untrusted."""
    # serialized once: the packet is built by remem and already has PacketOut's fields
    # (tests/surfaces/http/test_openapi.py holds it to them), so no model round trip
    return JSONResponse(answer(body, who, svc, via))


def answer(
    body: RetrieveIn, who: Principal, svc: Service, via: str | None = "api"
) -> dict[str, Any]:
    """What `retrieve` answers, as a dict (the console's ask page shows it too); the
    recall is noted in the audit log as made through `via`."""
    actor = body.actor_id
    if body.namespace is not None:
        owner = scope.namespace_actor(who, body.namespace)
        if actor is not None and actor != owner:
            raise InvalidInput("namespace belongs to another actor than actor_id")
        actor = owner
    actor = scope.actor_for(who, actor)
    mem = svc.memory(who.tenant)

    def memory() -> Packet:
        return mem.recall(
            actor=actor,
            query=body.query,
            k=body.top_k,
            budget=body.budget_tokens,
            as_of=body.as_of,
            known_at=body.known_at,
            valid_at=body.valid_at,
            explain=body.explain,
            include_events=body.include_events,
            namespace=body.namespace,
            max_sensitivity=body.max_sensitivity,
            pin=body.pin,
            metadata=body.metadata,
        )

    packet = recall_sources(
        mem.deps,
        who,
        body.sources,
        memory,
        actor=actor,
        query=body.query,
        k=body.top_k,
        budget=body.budget_tokens,
        namespaces=body.document_namespaces,
        max_sensitivity=body.max_sensitivity,
    )
    audit.recalled(svc.store, who, via, actor)
    return {**packet.as_dict(), "context": packet.as_prompt()}
