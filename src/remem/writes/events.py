"""The event write path: a row becomes a checked, redacted `Event`, then the thread log.

`event` validates one row (fields, text, role, time within the allowed clock
skew, id, metadata) and keeps secrets only in redacted form; `add` appends
events with their extraction jobs in one transaction; `import_rows` imports
in batches, safely re-runnable (see `Memory.import_events`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from remem.errors import ConflictError, InvalidInput, RefusedContent, RememError
from remem.lifecycle.erasure import fresh_start
from remem.memory.deps import Deps
from remem.model import Event, Role
from remem.policy.dataclasses import find_secrets, redact, redact_json, shown
from remem.policy.events import EventIdTaken, import_digest
from remem.policy.scope import stored_name
from remem.policy.text import MAX_METADATA_BYTES, check_json, nfc
from remem.timeutil import parse_time
from remem.writes.checks import MAX_EVENT_CHARS, count, span, statement
from remem.writes.request import UNNUMBERED, numbered, short_of_lines

log = logging.getLogger("remem")

_T = TypeVar("_T")
_FIELDS = frozenset({"actor", "session", "role", "text", "time", "event_id", "id", "metadata"})


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: events stored, and repeats skipped."""

    imported: int
    skipped: int


def event(deps: Deps, row: Mapping[str, Any], max_clock_skew: timedelta) -> Event:
    """One row as an event of `deps.tenant`, checked; a secret is kept only redacted."""
    if type(row) is not dict and not isinstance(row, Mapping):  # the ABC check is slow
        raise InvalidInput(
            f"an event must be an object with actor, session, role, text; got {shown(row)}"
        )
    unknown = row.keys() - _FIELDS
    if unknown:
        raise InvalidInput(f"unknown event field(s): {', '.join(sorted(unknown))}")
    text = nfc(statement("event text", row.get("text"), MAX_EVENT_CHARS))
    try:
        role = Role(str(row.get("role")))
    except ValueError:
        raise InvalidInput(
            f"role must be one of {', '.join(r.value for r in Role)}; got {shown(row.get('role'))}"
        ) from None
    raw_time = row.get("time")
    if raw_time is None:  # "" or spaces are refused, as every time field on every surface
        when = deps.clock()
    else:
        when = _event_time(deps, raw_time, max_clock_skew)
    raw_id = row.get("event_id") or row.get("id")
    event_id = stored_name("event id", raw_id) if raw_id else deps.ids("evt")
    metadata = row.get("metadata") or {}
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise InvalidInput("event metadata must be an object")
    kinds: list[str] = []
    if metadata:  # empty metadata is valid JSON with nothing to redact
        check_json("event metadata", metadata, max_bytes=MAX_METADATA_BYTES)
        metadata = nfc(metadata)  # its keys and strings, as every stored string
        # the event is kept, but the log holds a secret only in redacted form, in the
        # text and in every metadata key and string alike
        clean, kinds = redact_json(metadata)
        metadata = dict(clean) if isinstance(clean, Mapping) else {}
    else:
        metadata = {}
    findings = find_secrets(text)
    if findings:
        text = redact(text, findings)
    if findings or kinds:
        metadata["redacted"] = sorted({f.kind for f in findings} | set(kinds))
    return Event(
        id=event_id,
        tenant=deps.tenant,
        actor=stored_name("actor", row.get("actor")),
        session=stored_name("session", row.get("session")),
        role=role,
        text=text,
        time=when,
        metadata=metadata,
    )


def add(deps: Deps, events: Sequence[Event]) -> list[bool]:
    """Append events, each with its extraction jobs, in one transaction; per event,
    whether it was new. An erased actor's new events are logged as a fresh start."""
    added = deps.store.events.add_events(events, deps.config.strategy_names) if events else []
    actors = {e.actor for e, new in zip(events, added, strict=True) if new}
    for actor in sorted(actors):
        note = fresh_start(deps, actor)
        if note is not None:
            log.info("%s", note["message"])
    return added


def import_rows(
    deps: Deps,
    rows: Iterable[Mapping[str, Any]],
    max_clock_skew: timedelta,
    batch: int = 500,
    progress: Callable[[int], None] | None = None,
    lines: Iterable[int] | None = None,
) -> ImportResult:
    """Import events in batches (one transaction each); see `Memory.import_events`."""
    count("batch", batch)
    seen: dict[str, int] = {}  # content digest -> identical rows so far
    names = deps.config.strategy_names
    imported = skipped = 0
    for whole in _batched(numbered(rows, lines), batch):
        chunk = [(line, row) for line, row in whole if row is not UNNUMBERED]
        if not chunk:
            raise short_of_lines(whole[-1][0])
        events: list[Event] = []
        try:
            for _, row in chunk:
                events.append(_import_event(deps, row, seen, max_clock_skew))
            added = deps.store.events.add_events(events, names)
        except (InvalidInput, RefusedContent, EventIdTaken) as exc:
            bad = exc.index if isinstance(exc, EventIdTaken) else len(events)
            if bad:  # the rows before the bad one are kept, as the message says
                deps.store.events.add_events(events[:bad], names)
            raise _stopped_at(exc, chunk[bad][0]) from None
        imported += sum(added)
        skipped += len(added) - sum(added)
        if progress is not None:
            progress(len(added))
        if len(chunk) < len(whole):  # `lines` ended before the rows
            raise short_of_lines(whole[-1][0])
    return ImportResult(imported, skipped)


def import_digests(
    deps: Deps, rows: Sequence[Mapping[str, Any]], max_clock_skew: timedelta
) -> tuple[list[str | None], tuple[int, RememError] | None]:
    """Per row, the content digest `import_rows` makes its id from (None: the row has
    its own id), up to the first invalid row, and that row's index and error (None:
    every row is valid). Nothing is written: a client that imports over HTTP numbers
    identical rows itself (`imp_` + digest + `_` + how many came before) and appends
    them with those ids (`remem.service.client.queue`)."""
    digests: list[str | None] = []
    for i, row in enumerate(rows):
        try:
            found = event(deps, row, max_clock_skew)
        except (InvalidInput, RefusedContent) as exc:
            return digests, (i, exc)
        if row.get("event_id") or row.get("id"):
            digests.append(None)
        else:
            digests.append(import_digest(found, time_given=row.get("time") is not None))
    return digests, None


def _import_event(
    deps: Deps, row: Mapping[str, Any], seen: dict[str, int], skew: timedelta
) -> Event:
    """An import row as an event; a row without an id gets its content's id."""
    found = event(deps, row, skew)
    if isinstance(row, Mapping) and (row.get("event_id") or row.get("id")):
        return found
    digest = import_digest(found, time_given=row.get("time") is not None)
    n = seen.get(digest, 0)
    seen[digest] = n + 1
    return replace(found, id=f"imp_{digest}_{n}")


def _event_time(deps: Deps, raw: object, skew: timedelta) -> datetime:
    """A client's event time; refused when it is more than `skew` ahead of the clock."""
    when = parse_time(raw, "event time")
    ahead = when - deps.clock()
    if ahead > skew:
        raise InvalidInput(
            f"event time {when.isoformat()} is in the future, {span(ahead)} ahead of "
            f"the clock; an event may be dated at most {span(skew)} ahead"
        )
    return when


def _batched(rows: Iterable[_T], size: int) -> Iterator[list[_T]]:
    chunk: list[_T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _stopped_at(exc: RememError, line: int) -> RememError:
    """An import error naming the line it stopped at, and what to do."""
    cls = ConflictError if isinstance(exc, ConflictError) else type(exc)
    return cls(
        f"line {line}: {exc}. The lines before line {line} were kept; fix it and run "
        "the import again (lines already stored are skipped)"
    )
