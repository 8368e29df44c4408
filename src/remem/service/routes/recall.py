"""Recall: the packet for a query (RetrieveMemoryRecords)."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from dataclasses import replace
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from remem.policy import scope
from remem.policy.scope import Principal
from remem.recall.request import RecallAsk
from remem.service import audit
from remem.service.answers import KEYED, PacketOut, errors
from remem.service.onehop import RecallHop
from remem.service.routes.deps import Service, Svc, Via, Who
from remem.service.schemas import RetrieveIn

# the key, the body and the recall in one hop, in the process's recall lane
router = APIRouter(route_class=RecallHop)


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
    """What `retrieve` answers, as a dict (the console's ask page shows it too): the body
    is a `RecallAsk` for `Memory.ask`, its actor the key's (`scope.recall_actor`); the
    recall is noted in the audit log as made through `via`."""
    request = RecallAsk(**dict(body))
    actor = scope.recall_actor(who, request.actor, request.namespace)
    packet = svc.memory(who.tenant).ask(replace(request, actor=actor), who)
    audit.recalled(svc.store.audit, who, via, actor)
    return {**packet.as_dict(), "context": packet.as_prompt()}
