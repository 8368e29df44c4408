"""The `Client`'s mixed record batches (a mixin): `Memory.write_records`, over HTTP.

The batch is checked here as the library checks it (`remem.writes.batch.parse_items`,
nothing sent when an item is malformed), then sent `BATCH` items a request to
POST /v1/memories/batch, whose answers are given back in the library's shape:
`{"request_id", "op", "status": "created" | "updated" | "deleted" | "error", ...}`.
Over HTTP the key is who corrects a record (the library names the item's strategy).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from remem.store.values import Asked
from remem.writes.batch import WriteItem, parse_items

BATCH = 1000  # the most items one request of the service takes
_DONE = {"create": "created", "update": "updated", "delete": "deleted"}


class WriteClient:
    """Self-managed strategies' batches through the HTTP service."""

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def write_records(
        self, items: Iterable[Mapping[str, Any]], *, asked: Asked | None = None
    ) -> list[dict[str, Any]]:
        """Self-managed strategies: create, update and delete records in one batch; each
        item's outcome, in order (see the module docstring). Of `asked`, only the reason
        travels, as each delete's `reason` unless the item has its own: the server names
        who asked by the key."""
        parsed = parse_items(items)
        reason = asked.reason if asked is not None else None
        results: list[dict[str, Any]] = []
        for start in range(0, len(parsed), BATCH):
            body = [_wire(i, reason) for i in parsed[start : start + BATCH]]
            out = self._call("POST", "/v1/memories/batch", json={"records": body})
            results.extend(_outcome(r) for r in out["results"])
        return results


def _wire(item: WriteItem, reason: str | None) -> dict[str, Any]:
    body = item.model_dump(exclude_none=True, by_alias=True)  # the wire's names: actor_id
    if reason is not None and body.get("op") == "delete":
        body.setdefault("reason", reason)
    return body


def _outcome(r: dict[str, Any]) -> dict[str, Any]:
    """A service result in the shape `Memory.write_records` gives."""
    head = {"request_id": r["request_id"], "op": r["op"]}
    if r["status"] >= 300:
        return {**head, "status": "error", "error": r["error"]}
    out = {**head, "status": _DONE[r["op"]], "record_id": r["record_id"]}
    if r["op"] == "update":
        out["supersedes"] = r["supersedes"]
    if r["op"] == "delete":
        out["verified"] = r["verified"]
    if r.get("replayed"):  # a repeated request id's first outcome, as the library marks it
        out["replayed"] = True
    return out
