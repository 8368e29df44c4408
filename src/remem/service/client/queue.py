"""The `Client`'s event pages, extraction and deletion log (a mixin): `Memory`'s, over HTTP.

`process` means something else over HTTP than in the library: the server's extraction
worker (in `remem serve`, or `remem worker` beside it) runs the jobs, not the caller; so
`process` waits until the worker has drained the jobs of the key's scope, and reports
how many were done and failed meanwhile (the other counts of `ProcessResult` are not
seen from outside and stay 0). A server without a worker never drains: after
`timeout` seconds that is a `StoreError` that says so.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from remem.errors import StoreError
from remem.pipeline.jobs import ProcessResult
from remem.service.client.pages import collect

POLL_SECONDS = 0.05


class QueueClient:
    """Event pages, extraction and the deletion log through the HTTP service."""

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def events_page(
        self, *, actor: str, session: str | None = None, after: str | None = None,
        limit: int = 100,
    ) -> tuple[list[dict[str, Any]], str | None]:  # fmt: skip
        """Up to `limit` of an actor's events after `after` (the cursor the page before
        returned; None: the first), as JSON rows, and the next page's cursor (None after
        the last)."""
        params = {"actor_id": actor, "session_id": session, "cursor": after, "limit": limit}
        page = self._call(
            "GET", "/v1/events", params={k: v for k, v in params.items() if v is not None}
        )
        return list(page["events"]), page["next_cursor"]

    def process(
        self, limit: int | None = None, batch: int = 64, *, timeout: float = 60.0
    ) -> ProcessResult:
        """Wait until the server's worker has run the queued extraction jobs of the key's
        scope (see the module docstring); `limit` and `batch` are the worker's to choose
        over HTTP and are accepted for `Memory.process`'s signature only."""
        del limit, batch
        before = self._call("GET", "/v1/jobs")
        deadline = time.monotonic() + timeout
        while True:
            now = self._call("GET", "/v1/jobs")
            if now["pending"] == 0 and now["running"] == 0:
                return ProcessResult(
                    jobs_done=now["done"] - before["done"],
                    failed=now["failed"] - before["failed"],
                )
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the server's extraction worker did not run the {now['pending']} "
                    f"pending jobs within {timeout:g} seconds: is one running (remem serve "
                    "without --no-worker, or remem worker)?"
                )
            time.sleep(POLL_SECONDS)

    def deletions(self, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first (a tenant-wide admin key)."""
        return collect(self._call, "/v1/deletions", "deletions", {}, limit=limit)

    def fresh_start(self, actor: str) -> dict[str, str] | None:
        """If `actor` was erased: `{"erased_at", "message"}`; None for one never erased."""
        out: dict[str, str] | None = self._call(
            "GET", f"/v1/subjects/{quote(actor, safe='')}/fresh-start"
        )
        return out
