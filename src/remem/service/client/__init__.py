"""`Client`: `Memory`'s methods over HTTP, so moving to a server is a one-line change.

    mem = Memory.open("memory.db", tenant="acme")             # embedded
    mem = Client("http://127.0.0.1:8080", api_key="rk_...")   # the same calls, on a server

The tenant comes from the key. HTTP errors come back as remem's exceptions:
401 `Unauthorized`, 403 `Forbidden`, 404 `NotFound`, 409 `ConflictError`,
413 and 422 `InvalidInput` (`RefusedContent` when a secret was refused),
5xx and an unreachable server `StoreError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from enum import Enum
from typing import Any

import httpx

from remem.errors import (
    ConflictError,
    Forbidden,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    StoreError,
    Unauthorized,
)
from remem.facts.lookup import Fact, FactValue, Profile
from remem.facts.request import FactAsk, ProfileAsk, Reads, RecordsAsk
from remem.model import (
    Authority,
    HistoryEntry,
    Kind,
    Packet,
    PacketItem,
    Record,
    Sensitivity,
    Source,
    Status,
)
from remem.policy.dataclasses import shown
from remem.recall.request import RecallAsk, Recalls
from remem.service.client.documents import DocumentClient, document_item, forget_report
from remem.service.client.pages import collect
from remem.service.client.queue import QueueClient
from remem.service.client.thread import ThreadClient
from remem.service.client.writes import WriteClient
from remem.store.roles import Asked, ForgetReport
from remem.timeutil import parse_time
from remem.writes.request import EXPLICIT, RememberAsk, Writes


class Client(Recalls, Reads, QueueClient, Writes, WriteClient, DocumentClient, ThreadClient):
    """A remem server, called with one API key. Thread-safe (httpx.Client is)."""

    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    # -- events ----------------------------------------------------------------------

    def _add_event(self, row: Mapping[str, Any]) -> str:
        """`add_event`'s row, posted (a repeated `event_id` is not a second event)."""
        body = _event_body(row)
        return str(self._call("POST", "/v1/events", json=body)["events"][0]["event_id"])

    def add_events(self, rows: Iterable[Mapping[str, Any]]) -> list[bool]:
        """Append many events in one transaction; per event, whether it was new."""
        body = [_event_body(r) for r in rows]
        if not body:
            return []
        out = self._call("POST", "/v1/events", json={"events": body})
        return [bool(e["created"]) for e in out["events"]]

    def events(
        self, *, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """One actor's events (optionally one session), in order, as JSON rows."""
        params = _compact({"actor_id": actor, "session_id": session})
        return collect(self._call, "/v1/events", "events", params, limit=limit)

    def jobs(self) -> dict[str, int]:
        """The extraction jobs of the key's scope by status (a key for one actor: that
        actor's)."""
        return {k: int(v) for k, v in self._call("GET", "/v1/jobs").items()}

    def list_jobs(self, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The extraction jobs of the key's scope (a key for one actor: that actor's), newest
        first."""
        params: dict[str, Any] = {"status": status} if status else {}
        return collect(self._call, "/v1/jobs/list", "jobs", params, limit=limit)

    def retry_jobs(self, failed_only: bool = True) -> int:
        """Put failed jobs (and, unless `failed_only`, waiting ones) back to run now."""
        params = {"failed_only": "true" if failed_only else "false"}
        return int(self._call("POST", "/v1/jobs/retry", params=params)["retried"])

    # -- memories --------------------------------------------------------------------

    def ask_remember(self, request: RememberAsk) -> Record:
        """One statement, posted to /v1/memories/batch-create (`remember` builds it from
        its keywords; `namespace` and `metadata`: as for `Memory.remember`). Over HTTP a
        key's statement is explicit: another `strategy` is InvalidInput, nothing sent (a
        self-managed strategy's records go through `write_records`)."""
        if request.strategy != EXPLICIT:
            raise InvalidInput(
                f"strategy {shown(request.strategy)} is the library's: over HTTP a key's "
                "statement is explicit; write a strategy's records with write_records"
            )
        item = {
            "request_id": request.request_id,
            "actor_id": request.actor,
            "text": request.text,
            "kind": str(request.kind),
            "field": request.field,
            "value": request.value,
            "valid_until": _iso(request.valid_until),
            "sensitivity": str(request.sensitivity),
            "namespace": request.namespace,
            "metadata": None if request.metadata is None else dict(request.metadata),
        }
        out = self._call("POST", "/v1/memories/batch-create", json={"records": [_compact(item)]})
        return _record(_only(out)["record"])

    def update(
        self, record_id: str, *, text: str, valid_until: str | datetime | None = None
    ) -> Record:
        """Correct a record: a new confirmed record supersedes it (`Memory.update`); the
        server names the key as who corrected it."""
        item = _compact({"record_id": record_id, "text": text, "valid_until": _iso(valid_until)})
        out = self._call("POST", "/v1/memories/batch-update", json={"records": [item]})
        return _record(_only(out)["record"])

    def ask(self, request: RecallAsk) -> Packet:
        """One recall request, posted to /v1/memories/retrieve (`recall` builds it from
        its keywords): the server's `Memory.ask` answers, in the key's scope."""
        return _packet(self._call("POST", "/v1/memories/retrieve", json=_retrieve(request)))

    def ask_fact(self, request: FactAsk) -> Fact:
        """One exact lookup, as GET /v1/actors/{actor}/facts/{field} (`fact` builds it
        from its keywords): found, conflict or not_found."""
        params = {
            "as_of": _iso(request.as_of),
            "known_at": _iso(request.known_at),
            "valid_at": _iso(request.valid_at),
        }
        path = f"/v1/actors/{_seg(_named(request.actor))}/facts/{_seg(request.field)}"
        return _fact(self._call("GET", path, params=_compact(params)))

    def ask_profile(self, request: ProfileAsk) -> Profile:
        """One actor's profile, as GET /v1/actors/{actor}/profile (`profile` builds it)."""
        sensitivity = request.max_sensitivity
        params = {
            "as_of": _iso(request.as_of),
            "known_at": _iso(request.known_at),
            "valid_at": _iso(request.valid_at),
            "max_sensitivity": None if sensitivity is None else str(sensitivity),
            "budget_tokens": request.budget,
        }
        path = f"/v1/actors/{_seg(_named(request.actor))}/profile"
        d = self._call("GET", path, params=_compact(params))
        return Profile(
            actor=d["actor"],
            known_at=parse_time(d["known_at"]),
            valid_at=parse_time(d["valid_at"]),
            facts=tuple(_fact(f) for f in d["facts"]),
            tokens=int(d["tokens"]),
            budget=d["budget"],
            dropped=int(d["dropped"]),
            capped=int(d.get("capped", 0)),
        )

    def ask_records(self, request: RecordsAsk) -> list[Record]:
        """One actor's records, as GET /v1/memories, following its cursors up to
        `request.limit` (`records` builds it)."""
        metadata = request.metadata
        params = _compact(
            {
                "actor_id": request.actor,
                "all": request.all,
                "as_of": _iso(request.as_of),
                "field": request.field,
                "namespace": request.namespace,
                "metadata": None if metadata is None else _json(metadata),
            }
        )
        found = collect(self._call, "/v1/memories", "records", params, limit=request.limit)
        return [_record(r) for r in found]

    def get(self, record_id: str) -> Record:
        """One record; NotFound when there is none the key may see."""
        return _record(self._call("GET", f"/v1/memories/{_seg(record_id)}"))

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every change of a record, oldest first."""
        rows = self._call("GET", f"/v1/memories/{_seg(record_id)}/history")["history"]
        return [
            HistoryEntry(
                record_id=h["record_id"],
                action=h["action"],
                at=parse_time(h["at"]),
                text=h["text"],
                status=Status(h["status"]),
                related_id=h["related_id"],
                reason=h["reason"],
                by=h["by"],
            )
            for h in rows
        ]

    def forget(
        self,
        *,
        record_id: str | None = None,
        actor: str | None = None,
        asked: Asked | None = None,
    ) -> ForgetReport:
        """Erase one record, or everything of one actor (an admin key), and verify it.
        Of `asked`, only the reason travels (in the JSON body, not the URL, which access
        logs keep; it is kept in the receipt): the server
        names who asked by the key, and refuses (InvalidInput, nothing erased) a reason
        that repeats a word of what is erased."""
        if (record_id is None) == (actor is None):
            raise InvalidInput("forget needs exactly one of record_id or actor")
        body = _compact({"reason": asked.reason if asked is not None else None})
        if record_id is not None:
            out = self._call("DELETE", f"/v1/memories/{_seg(record_id)}", json=body)
        else:
            out = self._call("POST", f"/v1/subjects/{_seg(str(actor))}/forget", json=body)
        return forget_report(out)

    def export(self, *, actor: str) -> Iterator[dict[str, Any]]:
        """Everything the server holds about one actor (an admin key), as JSON rows."""
        yield from self._call("GET", f"/v1/subjects/{_seg(actor)}/export")["rows"]

    def audit(
        self,
        *,
        actor: str | None = None,
        key_id: str | None = None,
        action: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The audit log (an admin key; a key for one actor: its actor's rows), newest
        first, narrowed by whichever filters are given: who read, exported, erased or
        decided what, or changed keys (`GET /v1/audit`); ids and counts, never content.
        Every row, following the cursors, or the newest `limit`."""
        params = _compact({"actor_id": actor, "key_id": key_id, "action": action})
        return collect(self._call, "/v1/audit", "rows", params, limit=limit)

    # -- procedures --------------------------------------------------------------------

    def propose_procedure(
        self, *, text: str, name: str | None = None, actor: str | None = None
    ) -> Record:
        """Propose a procedure; it stays PROPOSED until a reviewer approves it."""
        body = _compact({"text": text, "name": name, "actor_id": actor})
        return _record(self._call("POST", "/v1/procedures", json=body))

    def procedures(self, *, actor: str | None = None, all: bool = False) -> list[Record]:
        """The tenant's shared procedures (or one actor's): approved, or every status with
        `all` (a reviewer key)."""
        params = _compact({"actor_id": actor, "all": all or None})
        return [_record(r) for r in collect(self._call, "/v1/procedures", "records", params)]

    def approve(self, record_id: str) -> Record:
        """Approve a proposed procedure (a reviewer or admin key; the key is the reviewer)."""
        return _record(self._call("POST", f"/v1/memories/{_seg(record_id)}/approve"))

    def reject(self, record_id: str, *, reason: str = "") -> Record:
        """Reject a proposed procedure with a reason (a reviewer or admin key)."""
        out = self._call("POST", f"/v1/memories/{_seg(record_id)}/reject", json={"reason": reason})
        return _record(out)

    # -- plumbing ------------------------------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StoreError(
                f"cannot reach the remem server at {self._http.base_url} ({exc}); is it running?"
            ) from exc
        if resp.status_code < 400:
            return resp.json()
        raise _exception(resp)


def _exception(resp: httpx.Response) -> RememError:
    try:
        err = resp.json()["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", f"HTTP {resp.status_code}: {resp.text[:200]}"
    status = resp.status_code
    if status == 401:
        return Unauthorized(message)
    if status == 403:
        return Forbidden(message)
    if status == 404:
        return NotFound(message)
    if status == 409:
        return ConflictError(message)
    if status == 422 and code == RefusedContent.code:
        return RefusedContent(message)
    if 400 <= status < 500:
        return InvalidInput(message)
    return StoreError(message)


def _only(out: dict[str, Any]) -> dict[str, Any]:
    """The one result of a one-item batch, raised as an exception if it failed."""
    result: dict[str, Any] = out["results"][0]
    if result["status"] >= 400:
        err = result["error"]
        exc = {
            404: NotFound,
            409: ConflictError,
        }.get(
            result["status"], RefusedContent if err["code"] == "refused_content" else InvalidInput
        )
        raise exc(err["message"])
    return result


def _event_body(row: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise InvalidInput(f"an event must be an object; got {shown(row)}")
    body = {
        "actor_id": row.get("actor"),
        "session_id": row.get("session"),
        "role": None if row.get("role") is None else str(row.get("role")),
        "text": row.get("text"),
        "time": _iso(row.get("time")),
        "event_id": row.get("event_id") or row.get("id"),
        "metadata": row.get("metadata"),
    }
    return _compact(body)


# RetrieveIn's names for the fields of a RecallAsk named otherwise on the wire
_RETRIEVE_NAMES = {"actor": "actor_id", "k": "top_k", "budget": "budget_tokens"}


def _retrieve(request: RecallAsk) -> dict[str, Any]:
    """The body of POST /v1/memories/retrieve for a recall request: its fields under
    RetrieveIn's names, times in ISO 8601, lists as lists, None left out (the server's
    default); the server checks them."""
    body: dict[str, Any] = {}
    for f in fields(request):
        value = getattr(request, f.name)
        if f.name == "sources" and isinstance(value, str):  # "memory,documents"
            value = [s.strip() for s in value.split(",")]
        elif isinstance(value, Enum):
            value = str(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, Sequence) and not isinstance(value, str):
            value = list(value)
        body[_RETRIEVE_NAMES.get(f.name, f.name)] = _iso(value)
    return _compact(body)


def _compact(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _seg(value: str) -> str:
    """A path segment, quoted so an id cannot change the path."""
    from urllib.parse import quote

    return quote(value, safe="")


def _named(actor: str | None) -> str:
    """A request's actor, which a path needs named (the server checks it)."""
    if not isinstance(actor, str):
        raise InvalidInput(f"actor must be named; got {shown(actor)}")
    return actor


def _time(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value)


def _record(d: dict[str, Any]) -> Record:
    src = d["source"]
    return Record(
        id=d["id"],
        tenant=d["tenant"],
        actor=d["actor"],
        namespace=d["namespace"],
        kind=Kind(d["kind"]),
        text=d["text"],
        source=Source(
            type=src["type"],
            event_ids=tuple(src["event_ids"]),
            strategy=src["strategy"],
            extractor=src["extractor"],
        ),
        authority=Authority(d["authority"]),
        sensitivity=Sensitivity(d["sensitivity"]),
        valid_from=parse_time(d["valid_from"]),
        created_at=parse_time(d["created_at"]),
        updated_at=parse_time(d["updated_at"]),
        status=Status(d["status"]),
        field=d["field"],
        value=d["value"],
        valid_until=_time(d["valid_until"]),
        supersedes=d["supersedes"],
        superseded_by=d["superseded_by"],
        flags=tuple(d["flags"]),
        metadata=dict(d.get("metadata") or {}),
    )


def _json(value: Mapping[str, Any]) -> str:
    """A filter as the JSON text of a query parameter."""
    try:
        return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a metadata filter must be JSON ({exc})") from None


def _item(r: dict[str, Any]) -> PacketItem:
    return PacketItem(
        id=r["id"],
        text=r["text"],
        kind=r["kind"],
        namespace=r["namespace"],
        status=r["status"],
        source_date=parse_time(r["source_date"]),
        source=r["source"],
        score=float(r["score"]),
        tokens=int(r["tokens"]),
        flags=tuple(r["flags"]),
        metadata=dict(r.get("metadata") or {}),
    )


def _fact(d: dict[str, Any]) -> Fact:
    return Fact(
        field=d["field"],
        status=d["status"],
        known_at=parse_time(d["known_at"]),
        valid_at=parse_time(d["valid_at"]),
        candidates=tuple(
            FactValue(
                record_id=c["record_id"],
                value=c["value"],
                kind=c["kind"],
                namespace=c["namespace"],
                text=c["text"],
                authority=c["authority"],
                sensitivity=c["sensitivity"],
                source_date=parse_time(c["source_date"]),
                valid_from=parse_time(c["valid_from"]),
                valid_until=_time(c["valid_until"]),
                known_since=parse_time(c["known_since"]),
                source=c["source"],
                field=c.get("field", d["field"]),
            )
            for c in d["candidates"]
        ),
    )


def _packet(d: dict[str, Any]) -> Packet:
    return Packet(
        pinned=tuple(_item(r) for r in d.get("pinned", [])),
        records=tuple(_item(r) for r in d["records"]),
        conflicts=tuple(d["conflicts"]),
        tokens=int(d["tokens"]),
        budget=int(d["budget"]),
        notes=tuple(d["notes"]),
        explain=d.get("explain"),
        documents=None
        if d.get("documents") is None
        else tuple(document_item(x) for x in d["documents"]),
    )
