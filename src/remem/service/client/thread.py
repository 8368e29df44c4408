"""The `Client`'s thread-state methods (a mixin): `remem.thread.api`'s checkpoints, over
`/v1/actors/{actor_id}/checkpoints`, with the same names and arguments."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from remem.errors import InvalidInput
from remem.service.client.pages import collect
from remem.thread.checkpoints import STATE_FIELDS, Checkpoint, CheckpointState
from remem.timeutil import parse_time


class ThreadClient:
    """Workflow checkpoints through the HTTP service, under the key's scope."""

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def checkpoint_save(
        self,
        *,
        actor: str,
        workflow: str,
        state: CheckpointState | Mapping[str, Any],
        expected_version: int | None = None,
        retention: timedelta | None = None,
    ) -> Checkpoint:
        """Save a checkpoint; a stale `expected_version` is a `ConflictError` (409)."""
        raw = state.as_dict() if isinstance(state, CheckpointState) else dict(state)
        body: dict[str, Any] = {"state": raw, "expected_version": expected_version}
        if retention is not None:
            body["retention_seconds"] = max(1, int(retention.total_seconds()))
        out = self._call("PUT", _path(actor, workflow), json=body)
        return checkpoint_from(out["checkpoint"])

    def checkpoint_load(self, *, actor: str, workflow: str) -> Checkpoint:
        """One workflow's checkpoint; `NotFound` when the actor has none."""
        return checkpoint_from(self._call("GET", _path(actor, workflow))["checkpoint"])

    def checkpoint_scan(
        self, *, actor: str, prefix: str = "", before: str | None = None, limit: int = 1000
    ) -> list[Checkpoint]:
        """The actor's checkpoints whose workflow name starts with `prefix`, by name
        descending (below `before` only), read a page of at most `pages.PAGE` at a time."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput(f"limit must be a positive whole number; got {limit!r}")
        params = {"prefix": prefix}
        pages = collect(self._call, _path(actor), "checkpoints", params, limit=limit, cursor=before)
        return [checkpoint_from(c) for c in pages]

    def checkpoint_delete(
        self, *, actor: str, workflow: str | None = None, prefix: str | None = None
    ) -> int:
        """Delete one checkpoint (`workflow`) or those whose name starts with `prefix`."""
        if (workflow is None) == (prefix is None):
            raise InvalidInput("checkpoint_delete needs exactly one of workflow or prefix")
        if workflow is not None:
            return int(self._call("DELETE", _path(actor, workflow))["deleted"])
        return int(self._call("DELETE", _path(actor), params={"prefix": prefix})["deleted"])


def checkpoint_from(d: Mapping[str, Any]) -> Checkpoint:
    """A `Checkpoint` from the service's JSON."""
    state = CheckpointState.from_dict({k: d[k] for k in STATE_FIELDS if k in d})
    expires = d.get("expires_at")
    return Checkpoint(
        tenant=str(d["tenant"]),
        actor=str(d["actor"]),
        workflow=str(d["workflow"]),
        version=int(d["version"]),
        state=state,
        created_at=parse_time(d["created_at"]),
        updated_at=parse_time(d["updated_at"]),
        expires_at=None if expires is None else parse_time(expires),
    )


def _path(actor: str, workflow: str | None = None) -> str:
    base = f"/v1/actors/{quote(actor, safe='')}/checkpoints"
    return base if workflow is None else f"{base}/{quote(workflow, safe='')}"
