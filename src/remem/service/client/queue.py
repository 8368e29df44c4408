"""The `Client`'s event pages, extraction and deletion log (a mixin): `Memory`'s, over HTTP.

`process` means something else over HTTP than in the library: the server's extraction
worker (in `remem serve`, or `remem worker` beside it) runs the jobs, not the caller; so
`process` waits until the worker has drained the jobs of the key's scope, and reports
how many were done and failed meanwhile (the other counts of `ProcessResult` are not
seen from outside and stay 0). A server without a worker never drains: after
`timeout` seconds that is a `StoreError` that says so.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from remem.errors import ConflictError, InvalidInput, RefusedContent, StoreError
from remem.pipeline.jobs import ProcessResult
from remem.policy.dataclasses import shown
from remem.service.client.pages import collect
from remem.writes.checks import count
from remem.writes.events import ImportResult
from remem.writes.request import UNNUMBERED, ImportAsk, numbered, short_of_lines

POLL_SECONDS = 0.05
IMPORT_BATCH = 1000  # the most events one request of the service takes


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

    def ask_import(self, request: ImportAsk) -> ImportResult:
        """One import (`import_events` builds it), in batches (one transaction each, of at
        most `IMPORT_BATCH`), keeping their times; safe to run again, with the ids
        `Memory.import_events` gives: the server says each row's content digest (POST
        /v1/events/import-ids), this client numbers identical rows across batches, and
        the rows are appended with those ids. The first invalid row stops the import: the
        rows before it are stored, and the error names its line (`lines`, by default
        1-based positions)."""
        progress = request.progress
        size = min(count("batch", request.batch), IMPORT_BATCH)
        seen: dict[str, int] = {}  # content digest -> identical rows so far
        imported = skipped = 0
        pairs = numbered(request.rows, request.lines)
        while whole := list(itertools.islice(pairs, size)):
            chunk = [(line, row) for line, row in whole if row is not UNNUMBERED]
            if not chunk:
                raise short_of_lines(whole[-1][0])
            body = [_import_body(line, row) for line, row in chunk]
            answer = self._call("POST", "/v1/events/import-ids", json={"events": body})
            for row, digest in zip(body, answer["digests"], strict=False):
                if digest is not None:
                    row["event_id"] = f"imp_{digest}_{seen.get(digest, 0)}"
                    seen[digest] = seen.get(digest, 0) + 1
            good = body[: len(answer["digests"])]
            if good:
                try:
                    out = self._call("POST", "/v1/events", json={"events": good})
                except ConflictError as exc:  # one transaction: none of this batch is kept
                    where = f"lines {chunk[0][0]}-{chunk[-1][0]} (none of them stored)"
                    raise ConflictError(_stopped(where, exc)) from None
                added = [bool(e["created"]) for e in out["events"]]
                imported += sum(added)
                skipped += len(added) - sum(added)
                if progress is not None:
                    progress(len(added))
            if answer.get("error") is not None:
                err = answer["error"]
                cls = RefusedContent if err["code"] == RefusedContent.code else InvalidInput
                raise cls(_stopped(f"line {chunk[answer['index']][0]}", err["message"]))
            if len(chunk) < len(whole):  # `lines` ended before the rows
                raise short_of_lines(whole[-1][0])
        return ImportResult(imported, skipped)

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


def _import_body(line: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """An import row in the service's names (`actor_id`, `session_id`)."""
    if not isinstance(row, Mapping):
        why = f"an event must be an object; got {shown(row)}"
        raise InvalidInput(_stopped(f"line {line}", why))
    names = {"actor": "actor_id", "session": "session_id", "id": "event_id"}
    body = {names.get(str(k), str(k)): v for k, v in row.items() if v is not None}
    if "time" in body and not isinstance(body["time"], str | int | float):
        body["time"] = body["time"].isoformat()  # a datetime, as the library takes it
    return body


def _stopped(where: str, why: object) -> str:
    return (
        f"{where}: {why}. The lines before were kept; fix it and run the import again "
        "(lines already stored are skipped)"
    )
