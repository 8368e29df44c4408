"""What a write is asked: one event, one statement to remember, or events to import.

As `remem.recall.request` does for recall, each write is one value before the checks:

    a face (keywords, an HTTP item, an MCP tool's arguments, CLI options)
        ─► RememberAsk / ImportAsk, as given
        ─► Memory.ask_remember / ask_import (checked there) ─► Record / ImportResult

`Writes` writes the keywords of `add_event`, `remember` and `import_events` once for
`Memory` and `Client`: each builds the request and hands it to its own `ask_*` (the
library writes it, the `Client` sends it); an event is the row `add_events` takes,
handed to `_add_event`. The requests are frozen dataclasses, unchecked: the write
flows check them with the library's errors (`remem.writes.records.remember`,
`remem.writes.events.event` and `import_rows`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInput
from remem.model import Kind, Record, Role, Sensitivity

if TYPE_CHECKING:
    from remem.writes.events import ImportResult

EXPLICIT = "explicit"  # the strategy of a statement remembered as it was said


@dataclass(frozen=True, slots=True, kw_only=True)
class RememberAsk:
    """One statement to remember as a face asks it, unchecked: `remember`'s keywords
    (documented there). `actor` None is the calling key's own actor, for a face to
    resolve. `request_id` makes a server's write idempotent (the `Client`'s); `strategy`
    is the provenance the library records (over HTTP a key's statement is explicit)."""

    actor: str | None
    text: str
    kind: str | Kind = Kind.SEMANTIC
    valid_until: str | datetime | None = None
    field: str | None = None
    value: str | None = None
    sensitivity: str | Sensitivity = Sensitivity.NORMAL
    strategy: str = EXPLICIT
    request_id: str | None = None
    namespace: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportAsk:
    """One import as a face asks it: `import_events`' arguments (documented there). The
    rows are read once, as the import goes (a file may be larger than memory)."""

    rows: Iterable[Mapping[str, Any]]
    batch: int = 500
    progress: Callable[[int], None] | None = None
    lines: Iterable[int] | None = None


UNNUMBERED: Mapping[str, Any] = MappingProxyType({})  # a row `lines` has no number for


def numbered(
    rows: Iterable[Mapping[str, Any]], lines: Iterable[int] | None
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """An import's rows with their line numbers (`lines`, else 1-based positions), read as
    the import goes. When `lines` ends before the rows, the last pair is the next row's
    position and `UNNUMBERED`, and no row after it is read: the import stores the rows
    before it and stops there (`short_of_lines`), never dropping the rest unsaid."""
    if lines is None:
        yield from enumerate(rows, 1)
        return
    numbers = iter(lines)
    for position, row in enumerate(rows, 1):
        line = next(numbers, None)
        if line is None:
            yield position, UNNUMBERED
            return
        yield line, row


def short_of_lines(position: int) -> InvalidInput:
    """The error of an import whose `lines` ended before row `position` (`numbered`)."""
    return InvalidInput(
        f"row {position}: lines gives {position - 1} line numbers, fewer than the rows; "
        "give one per row. The rows before it were kept; run the import again with the "
        "line numbers (rows already stored are skipped)"
    )


class Writes:
    """`add_event`, `remember` and `import_events` with their keywords, written once for
    `Memory` and `Client`."""

    def add_event(
        self,
        *,
        actor: str,
        session: str,
        role: str | Role,
        text: str,
        time: str | datetime | None = None,
        event_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Append one event to the thread log and enqueue its extraction; return its id.

        `event_id` is an idempotency key, unique per tenant: a repeat with the
        same actor, session, role and text is the same event (not stored again,
        its time and metadata ignored) and returns the same id; any other reuse
        raises `ConflictError`. A time more than `max_clock_skew` ahead of the
        clock is refused with `InvalidInput`. The keywords make one row, as
        `add_events` takes each, appended by `_add_event`.
        """
        row = {
            "actor": actor,
            "session": session,
            "role": role,
            "text": text,
            "time": time,
            "event_id": event_id,
            "metadata": metadata,
        }
        return self._add_event(row)

    def remember(
        self,
        *,
        actor: str,
        text: str,
        kind: str | Kind = Kind.SEMANTIC,
        valid_until: str | datetime | None = None,
        field: str | None = None,
        value: str | None = None,
        sensitivity: str | Sensitivity = Sensitivity.NORMAL,
        strategy: str = EXPLICIT,
        request_id: str | None = None,
        namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Record:
        """Store an explicit statement as a confirmed record at once; return it.

        A statement that repeats an active record is not stored twice: the
        existing record is returned (with the metadata it was first stored with).
        One about the same `field` supersedes it. `strategy` names a self-managed
        strategy that wrote it (provenance; the library's: over HTTP a key's statement
        is explicit). `request_id` makes a `Client`'s write idempotent (a retry after a
        timeout writes once; another write under a used id is a ConflictError); the
        library's own idempotent writes are `write_records`'.

        `metadata` is the application's JSON object kept beside the record (at most
        8 KB, 4 levels, 64 keys; screened for secrets like every stored string; see
        `remem.policy.metadata`): returned, exported, erased with the record, and
        selected by `recall(metadata=...)` and `records(metadata=...)`.

        `namespace` (strictly under the actor's `/tenants/{tenant}/actors/{actor}/`)
        files the record in an application's own namespace, e.g. a framework store's
        (`remem.integrations`). There the application names its records by `field`:
        only a record about the same field is repeated (same value) or superseded,
        never one whose text is merely similar.

        The keywords make one `RememberAsk`, written by `ask_remember`.
        """
        request = RememberAsk(
            actor=actor,
            text=text,
            kind=kind,
            valid_until=valid_until,
            field=field,
            value=value,
            sensitivity=sensitivity,
            strategy=strategy,
            request_id=request_id,
            namespace=namespace,
            metadata=metadata,
        )
        return self.ask_remember(request)

    def import_events(
        self,
        rows: Iterable[Mapping[str, Any]],
        batch: int = 500,
        progress: Callable[[int], None] | None = None,
        *,
        lines: Iterable[int] | None = None,
    ) -> ImportResult:
        """Import events in batches (one transaction each), keeping their times.

        Running an import again is safe: a row with an id is stored once (see
        `add_event`), and a row without one gets an id made from its content
        (`imp_` + a digest of actor, session, role, text, the given time and
        metadata, + how many identical rows came before it in this import), so
        two identical rows stay two events and a re-run yields the same ids.
        A row that is invalid, or whose id is used by a different event, stops
        the import: every row before it is stored, none from it on, and the
        error names it by `lines` (the rows' line numbers in their file; by
        default their 1-based positions). `progress` hears how many rows each
        batch stored.

        The arguments make one `ImportAsk`, run by `ask_import`.
        """
        return self.ask_import(ImportAsk(rows=rows, batch=batch, progress=progress, lines=lines))

    @abstractmethod
    def _add_event(self, row: Mapping[str, Any]) -> str:
        """The id of the event one row is stored as (`Memory`'s, or a `Client`'s POST)."""

    @abstractmethod
    def ask_remember(self, request: RememberAsk) -> Record:
        """The record one statement is stored as (`Memory.ask_remember`, or a `Client`'s
        POST)."""

    @abstractmethod
    def ask_import(self, request: ImportAsk) -> ImportResult:
        """What one import stored (`Memory.ask_import`, or a `Client`'s POSTs)."""
