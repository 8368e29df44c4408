"""Ask: the recall playground, with the explain view of every candidate."""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import ValidationError

from remem.console import views
from remem.console.web import PREFIX, At, Seat, Short, message_of, page, render
from remem.errors import InvalidInput
from remem.service.routes import recall
from remem.service.schemas import RetrieveIn

router = APIRouter(include_in_schema=False)

SENSITIVITIES = ("", "normal", "personal", "sensitive")
LABELS = {"actor_id": "actor", "top_k": "k", "budget_tokens": "budget"}  # API name: form


@router.get(PREFIX + "/ask")
@page("Ask")
def ask(
    request: Request,
    at: At,
    actor: Short = "",
    query: Annotated[str, Query(max_length=100_000)] = "",
    k: Short = "10",
    budget: Short = "1000",
    as_of: Short = "",
    max_sensitivity: Short = "",
) -> Response:
    """The form, and with a query the packet recall answers (POST /v1/memories/retrieve,
    explained): the records chosen, and every candidate with its scores and why it was
    dropped. Asking changes nothing, so it is a GET (and a link)."""
    asked = {
        "actor": actor or (at.who.actor or ""),
        "query": query,
        "k": k,
        "budget": budget,
        "as_of": as_of,
        "max_sensitivity": max_sensitivity,
    }
    context: dict[str, Any] = {
        "title": "Ask",
        "asked": asked,
        "sensitivities": SENSITIVITIES,
        "packet": None,
        "rows": [],
    }
    if query.strip():
        try:
            body = RetrieveIn.model_validate(
                {
                    "query": query,
                    "actor_id": asked["actor"] or None,
                    "top_k": k,
                    "budget_tokens": budget,
                    "as_of": as_of or None,
                    "max_sensitivity": max_sensitivity or None,
                    "explain": True,
                }
            )
        except ValidationError as exc:
            raise InvalidInput(message_of(exc, LABELS)[1]) from None
        packet = recall.answer(body, at.who, at.svc, via="console")
        rows = views.explain_rows(packet.get("explain") or {})
        texts = _texts(at, [r["id"] for r in rows])
        context["packet"] = packet
        context["rows"] = [{**r, "text": texts.get(r["id"], "")} for r in rows]
    return render(request, "ask.html", context, at=at)


def _texts(at: Seat, ids: list[str]) -> dict[str, str]:
    """The text of each candidate the key may see (records and events), by id."""
    store, tenant = at.svc.store, at.who.tenant
    recs = store.records.get_records(tenant, [i for i in ids if i.startswith("rec_")])
    out = {r.id: r.text for r in recs if at.who.may_see(r)}
    events = store.events.get_events(tenant, [i for i in ids if not i.startswith("rec_")])
    out.update({e.id: e.text for e in events if at.who.allows(e.actor)})
    return out
