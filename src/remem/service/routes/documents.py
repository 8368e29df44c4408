"""Documents: add (JSON or a multipart upload), list, read, search and remove.

Every route runs the flows of `remem.documents.flows` with the key's principal:
what a key may read and write is `remem.documents.scope`'s rule, applied in the
storage query. An upload is bounded by the service's body limit (413 above it).
"""

# no `from __future__ import annotations`: FastAPI reads the signatures at runtime
import base64
import binascii
import json
from collections import Counter
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from remem.documents import flows
from remem.documents.scope import check_write, parse_scope
from remem.errors import InvalidInput, NotFound
from remem.lifecycle import erasure
from remem.policy import scope
from remem.policy.scope import Principal, named
from remem.service import audit, paging
from remem.service.answers import (
    KEYED,
    Deletion,
    DocumentAdded,
    DocumentHits,
    DocumentList,
    DocumentRead,
    errors,
)
from remem.service.http_errors import said
from remem.service.routes.deps import Service, Svc, Via, Who, refuses_body
from remem.writes.batch import SensitivityName

router = APIRouter()

Format = Literal["text", "markdown", "html", "pdf"]


class DocumentIn(BaseModel):
    """A document to add, as text or as base64 bytes (a PDF)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, min_length=1)
    content_base64: str | None = Field(default=None, min_length=1)
    title: str | None = Field(default=None, min_length=1, max_length=500)
    source_uri: str | None = Field(default=None, min_length=1, max_length=2000)
    scope: str = Field(default="tenant", description="tenant, actor:NAME or namespace:NAME")
    format: Format | None = None
    sensitivity: SensitivityName = "normal"


class SearchIn(BaseModel):
    """A search of the documents the key may read."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=100_000)
    actor_id: str | None = Field(default=None, min_length=1, max_length=200)
    top_k: int = Field(default=10, ge=1, le=1000)
    namespaces: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=20
    )
    max_sensitivity: SensitivityName | None = None


_UPLOAD = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": DocumentIn.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "title": {"type": "string"},
                        "source_uri": {"type": "string"},
                        "scope": {"type": "string"},
                        "format": {"type": "string", "enum": ["text", "markdown", "html", "pdf"]},
                        "sensitivity": {"type": "string"},
                    },
                }
            },
        },
    }
}


@router.post(
    "/v1/documents",
    tags=["documents"],
    openapi_extra=_UPLOAD,
    operation_id="add_document",
    status_code=201,
    response_model=DocumentAdded,
    responses={
        200: {"model": DocumentAdded, "description": "stored already, or a new version"},
        **errors(*KEYED, 403),
    },
)
async def add_document(request: Request, who: Who, svc: Svc) -> JSONResponse:
    """Add a document (JSON `text` or `content_base64`, or a multipart `file`): 201 when it
    is new, 200 when it was stored already (unchanged) or became a new version."""
    fields = await _fields(request)
    result = await run_in_threadpool(_add, svc, who, fields)
    return JSONResponse(result.as_dict(), status_code=201 if result.status == "added" else 200)


def _add(svc: Service, who: Principal, fields: dict[str, Any]) -> flows.AddResult:
    return flows.add(svc.memory(who.tenant).deps, who, **fields)


async def _fields(request: Request) -> dict[str, Any]:
    """The document's fields from a JSON body or a multipart form."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "multipart/form-data":
        return await _form(request)
    try:
        body = DocumentIn.model_validate(json.loads(await request.body()))
    except ValidationError as exc:
        raise InvalidInput(f"the body must be a JSON document object: {_problems(exc)}") from None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep to read
        raise InvalidInput(
            "the body is not JSON this service can read: it must be UTF-8 and nest at most "
            "a few hundred levels"
        ) from None
    if (body.text is None) == (body.content_base64 is None):
        raise InvalidInput("give exactly one of text or content_base64")
    data: str | bytes
    if body.text is not None:
        data = body.text
    else:
        try:
            data = base64.b64decode(body.content_base64 or "", validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("content_base64 is not valid base64") from None
    return {"data": data, "name": body.source_uri or body.title, "title": body.title,
            "source_uri": body.source_uri, "scope": body.scope, "format": body.format,
            "sensitivity": body.sensitivity}  # fmt: skip


async def _form(request: Request) -> dict[str, Any]:
    try:
        async with request.form() as form:  # closes the uploaded file's spool
            return await _form_fields(form)
    except (AssertionError, ImportError):  # python-multipart is not installed
        raise InvalidInput(
            "multipart uploads need python-multipart (pip install 'remem[docs]'); "
            "send JSON with text or content_base64 instead"
        ) from None
    except InvalidInput:
        raise
    except Exception as exc:  # a malformed multipart body is the client's
        raise InvalidInput(f"the multipart body could not be read: {_short(exc)}") from None


_PARTS = ("file", "title", "source_uri", "scope", "format", "sensitivity")


async def _form_fields(form: FormData) -> dict[str, Any]:
    # as the JSON body refuses a field it does not know: a misspelt "Scope" part would
    # otherwise store a private document for the whole tenant; and one of each
    for part in dict.fromkeys(form.keys()):
        if part not in _PARTS:
            raise InvalidInput(
                f"a multipart upload takes the parts {', '.join(_PARTS)}; not {named(part)} "
                "(nothing was stored)"
            )
        if len(form.getlist(part)) > 1:
            raise InvalidInput(f"a multipart upload takes one {part} part (nothing was stored)")
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InvalidInput("a multipart upload needs a `file` part")
    values: dict[str, str | None] = {}
    for name in ("title", "source_uri", "scope", "format", "sensitivity"):
        value = form.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{name} must be a text field")
        values[name] = value or None
    data = await upload.read()
    return {"data": data, "name": upload.filename or values["source_uri"] or values["title"],
            "title": values["title"], "source_uri": values["source_uri"],
            "scope": values["scope"] or "tenant", "format": values["format"],
            "sensitivity": values["sensitivity"] or "normal"}  # fmt: skip


def _problems(exc: ValidationError) -> str:
    """What is wrong where, as the other routes say it: `title: String should have ...`."""
    return "; ".join(said(err) for err in exc.errors()[:5])


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


@router.get(
    "/v1/documents",
    tags=["documents"],
    operation_id="list_documents",
    response_model=DocumentList,
    responses=errors(*KEYED, 400, 403),
)
def list_documents(
    who: Who,
    svc: Svc,
    doc_scope: Annotated[str | None, Query(alias="scope", max_length=300)] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    cursor: paging.Cursor = None,
    via: Via = "api",
) -> dict[str, Any]:
    """The documents the key may read (of one scope, when given), newest change first,
    `limit` a page; `next_cursor` fetches the next, read after the last document's
    (updated_at, id) (`remem.service.paging`). Audited: a `read` row per actor whose
    documents the page holds, or that `scope` names (`remem.service.audit.read_many`)."""
    deps = svc.memory(who.tenant).deps
    query = (who.tenant, who.actor, doc_scope)
    after = paging.read("documents", query, cursor, (paging.TIME, paging.TEXT))
    # one row past the page says whether another follows (the listing takes 10,000 at
    # most: a full page of 10,000 gets a cursor, and the page after may be empty)
    found = flows.listing(
        deps,
        who,
        doc_scope,
        min(limit + 1, 10_000),
        None if after is None else (after[0], after[1]),
    )
    docs = found[:limit]
    more = len(found) > limit or (limit == 10_000 and len(found) == limit)
    next_cursor = (
        paging.write("documents", query, (docs[-1].updated_at, docs[-1].id))
        if docs and more
        else None
    )
    owners = Counter(o for d in docs if (o := _owner(d.scope_key)) is not None)
    asked = None if doc_scope is None else _owner(doc_scope)
    if asked is not None:
        owners[asked] += 0  # an actor's empty listing is a read of that actor too
    audit.read_many(svc.store.audit, who, via, owners, "documents")
    return {"documents": [d.as_dict() for d in docs], "next_cursor": next_cursor}


def _owner(scope_key: str) -> str | None:
    """The actor whose document a scope's are (None: the tenant's or a namespace's)."""
    where = parse_scope(scope_key)
    return where.name if where.kind == "actor" else None


@router.get(
    "/v1/documents/{document_id}",
    tags=["documents"],
    operation_id="get_document",
    response_model=DocumentRead,
    responses=errors(*KEYED, 404),
)
def get_document(document_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """One document the key may read, with its chunks (position, span, text); an actor's
    document is audited (a `read` row naming it)."""
    doc, chunks = flows.get(svc.memory(who.tenant).deps, who, document_id)
    owner = _owner(doc.scope_key)
    if owner is not None:
        audit.note(svc.store.audit, who, "read", via, actor=owner, target=document_id, documents=1)
    return {"document": doc.as_dict(), "chunks": [c.as_dict() for c in chunks]}


@router.post(
    "/v1/documents/search",
    tags=["documents"],
    operation_id="search_documents",
    response_model=DocumentHits,
    responses=errors(*KEYED, 403),
)
def search_documents(body: SearchIn, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """The chunks best matching a query among the documents the key may read for an
    actor (the key's own by default): the tenant's, the actor's, the named namespaces'.
    A search for an actor is audited as a recall (one row per key, actor and minute)."""
    items = flows.search(
        svc.memory(who.tenant).deps, who, query=body.query, actor=body.actor_id,
        k=body.top_k, namespaces=body.namespaces, max_sensitivity=body.max_sensitivity,
    )  # fmt: skip
    subject = body.actor_id if body.actor_id is not None else who.actor
    if subject is not None:
        audit.recalled(svc.store.audit, who, via, subject)
    return {"documents": [it.as_dict() for it in items]}


@router.delete(
    "/v1/documents/{document_id}",
    tags=["documents"],
    dependencies=[refuses_body()],
    operation_id="remove_document",
    response_model=Deletion,
    response_model_exclude_unset=True,
    responses=errors(*KEYED, 403, 404),
)
def remove_document(document_id: str, who: Who, svc: Svc, via: Via = "api") -> dict[str, Any]:
    """Remove a document from every index, tombstone it and verify by reading back; the
    audit log gets a row (`document_remove`, the actor of an actor's document)."""
    mem = svc.memory(who.tenant)
    doc, _ = flows.get(mem.deps, who, document_id)  # NotFound outside the key's scope
    where = parse_scope(doc.scope_key)
    check_write(who, where)
    try:
        report = erasure.forget_document(mem.deps, document_id)
    except NotFound:
        raise NotFound(f"no document {named(document_id)} for this key") from None
    owner = where.name if where.kind == "actor" else None
    audit.note(svc.store.audit, who, "document_remove", via, actor=owner, target=document_id,
               job=report.job_id or 0, verified=report.verified)  # fmt: skip
    return {"document_id": document_id, **scope.deletion_report(report)}
