"""Reading events, records and history by key or scope: written once, for every backend.

`Lookups` is a mixin of both stores. Each read is one named statement (or one
per list of keys, through the backend's list binder) in its own transaction,
and its rows become remem's values through `remem.store.rows` with the
backend's decoders (`SQLFlows._time`, `_json_value`, `_list_value`). What is
truly a backend's own stays there: search, vectors, and the events around
others (`events_near`, one statement per event on SQLite, a lateral join on
PostgreSQL).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

from remem.errors import InvalidInput
from remem.model import Event, HistoryEntry, Record, Status
from remem.store.flows.backend import Row, SQLFlows
from remem.store.roles import EventKey, Scope
from remem.store.rows import event_from, record_from

LISTED = (Status.ACTIVE, Status.INVALID, Status.PROPOSED)  # `list_records` by default

EARLIEST = datetime(1, 1, 1, tzinfo=UTC)  # before every storable time: the first page
PAGE_BYTES = 4 * 1024 * 1024  # of event text and metadata in one `events_page`


class LookupSQL(Protocol):
    """The named statements of the reads; parameters as listed."""

    LIST_EVENTS_ACTOR: str  # tenant, actor, limit
    LIST_EVENTS_SESSION: str  # tenant, actor, session, limit
    # tenant, actor, time, seq, limit, bytes -> + seq, bytes_before (after that key)
    EVENTS_AFTER_ACTOR: str
    EVENTS_AFTER_SESSION: str  # the same and session
    GET_EVENTS: str  # tenant, {keys}: event ids (in arrival order)
    SESSION_CONTEXT: str  # tenant, actor, session, time, limit (newest first)
    GET_RECORD: str  # tenant, record_id
    GET_RECORDS: str  # tenant, {keys}: record ids
    BY_FIELD: str  # tenant, actor, field
    BY_FIELD_PREFIX: str  # tenant, actor, prefix, n (its length in characters)
    HISTORY: str  # tenant, record_id -> the columns of `HistoryEntry`
    RECORD_STATUS_BY_EVENT: str  # tenant, {keys}: event ids -> event_id, status, record_id

    def list_records(
        self, scope: Scope, paged: bool = False, after: bool = False
    ) -> tuple[str, dict[str, Any]]:
        """A scope's records of some statuses ({keys}), newest first, up to `limit`."""
        ...


class Lookups(SQLFlows):
    """The reads of `Store` by key or scope, written once."""

    lookup_sql: ClassVar[LookupSQL]

    def _event(self, r: Row) -> Event:
        return event_from(r, self._time, self._json_value)  # type: ignore[arg-type]

    def _record(self, r: Row) -> Record:
        return record_from(r, self._time, self._list_value)  # type: ignore[arg-type]

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]:
        """Events of one actor (optionally one session), oldest first by their own time."""
        q = self.lookup_sql
        sql = q.LIST_EVENTS_ACTOR if session is None else q.LIST_EVENTS_SESSION
        params = {"tenant": tenant, "actor": actor, "session": session, "limit": limit}
        return [self._event(r) for r in self._read(tenant, sql, params)]

    def events_page(
        self,
        tenant: str,
        actor: str,
        session: str | None,
        after: EventKey | None,
        limit: int,
        max_bytes: int = PAGE_BYTES,
    ) -> tuple[list[Event], EventKey | None]:
        """Up to `limit` events of one actor (optionally one session) in `list_events`'
        order, from just after `after` (the key `events_page` handed out; None: from
        the first), and the key to read on from, None after the last. One read of
        at most `limit + 1` rows by (time, seq), however deep the page.

        A page also ends once its events hold `max_bytes` (`PAGE_BYTES`, 4 MiB) of
        text and metadata (at least one event, so at most that plus one event's
        0.5 MB): a thousand events of 100,000 characters each come a few at a time."""
        if after is not None and not _event_key(after):
            raise InvalidInput("after must be the key a page of events returned, or None")
        q = self.lookup_sql
        sql = q.EVENTS_AFTER_ACTOR if session is None else q.EVENTS_AFTER_SESSION
        when, seq = after or (EARLIEST, 0)
        params = {"tenant": tenant, "actor": actor, "session": session,
                  "time": self._at(when), "seq": seq, "limit": limit + 1,
                  "bytes": max_bytes}  # fmt: skip
        rows = self._read(tenant, sql, params)
        page = [r for r in rows[:limit] if r["bytes_before"] < max_bytes]
        events = [self._event(r) for r in page]
        if len(rows) == len(page):
            return events, None
        return events, (events[-1].time, int(page[-1]["seq"]))

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]:
        """The events with these client ids, in arrival order."""
        return [self._event(r) for r in self._keyed(tenant, self.lookup_sql.GET_EVENTS, event_ids)]

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of `event`'s session before it, oldest first."""
        params = {"tenant": event.tenant, "actor": event.actor, "session": event.session,
                  "time": self._at(event.time), "limit": limit}  # fmt: skip
        rows = self._read(event.tenant, self.lookup_sql.SESSION_CONTEXT, params)
        return [self._event(r) for r in reversed(rows)]

    def get_record(self, tenant: str, record_id: str) -> Record | None:
        """One record of this tenant, or None."""
        params = {"tenant": tenant, "record_id": record_id}
        rows = self._read(tenant, self.lookup_sql.GET_RECORD, params)
        return self._record(rows[0]) if rows else None

    def get_records(self, tenant: str, ids: Sequence[str]) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out)."""
        return [self._record(r) for r in self._keyed(tenant, self.lookup_sql.GET_RECORDS, ids)]

    def list_records(
        self, scope: Scope, statuses: Iterable[Status] | None = None, limit: int = 10_000
    ) -> list[Record]:
        """Records of one scope, newest first, optionally of some statuses only."""
        wanted = [s.value for s in (statuses or LISTED)]
        sql, params = self.lookup_sql.list_records(scope)
        # one statement: the statuses are a handful, far below SQLite's chunk of keys
        ((bound_sql, bound),) = self._lists(sql, {**params, "limit": limit}, wanted)
        return [self._record(r) for r in self._read(scope.tenant, bound_sql, bound)]

    def records_page(
        self,
        scope: Scope,
        statuses: Iterable[Status] | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Record]:
        """Up to `limit` records of one scope in the order of their unique key (valid_from,
        id), newest first, after `after` (None: from the newest): a page of a keyset."""
        wanted = [s.value for s in (statuses or LISTED)]
        sql, params = self.lookup_sql.list_records(scope, paged=True, after=after is not None)
        params = {**params, "limit": limit}
        if after is not None:
            params |= {"after_at": self._at(after[0]), "after_id": after[1]}
        ((bound_sql, bound),) = self._lists(sql, params, wanted)
        return [self._record(r) for r in self._read(scope.tenant, bound_sql, bound)]

    def records_by_field(self, scope: Scope, field: str) -> list[Record]:
        """Active and invalid records of one scope about `field`, newest first.

        `field` as given (NFC, as fields are stored now) and, where it differs, its
        NFD form: a field stored decomposed before fields were put in NFC ("café"
        typed on a Mac) is still found by it. The read is by index either way."""
        q, forms = self.lookup_sql, 0
        found: list[Record] = []
        for form in dict.fromkeys((field, unicodedata.normalize("NFD", field))):
            params = {"tenant": scope.tenant, "actor": scope.actor, "field": form}
            rows = self._read(scope.tenant, q.BY_FIELD, params)
            forms += bool(rows)
            found.extend(self._record(r) for r in rows)
        if forms > 1:  # both spellings held records: one order, as the statement's
            found.sort(key=lambda r: r.valid_from, reverse=True)
        return found

    def records_by_field_prefix(self, scope: Scope, prefix: str) -> list[Record]:
        """Active and invalid records of one scope whose field starts with `prefix` (a
        family key's head, "allergy:"), newest first."""
        params = {"tenant": scope.tenant, "actor": scope.actor, "prefix": prefix, "n": len(prefix)}
        rows = self._read(scope.tenant, self.lookup_sql.BY_FIELD_PREFIX, params)
        return [self._record(r) for r in rows]

    def history(self, tenant: str, record_id: str) -> list[HistoryEntry]:
        """The append-only history of one record, oldest first."""
        params = {"tenant": tenant, "record_id": record_id}
        return [
            HistoryEntry(
                record_id=r["record_id"],
                action=r["action"],
                at=self._time(r["at"]),
                text=r["text"],
                status=Status(r["status"]),
                related_id=r["related_id"],
                reason=r["reason"],
                by=r["by_whom"],
            )
            for r in self._read(tenant, self.lookup_sql.HISTORY, params)
        ]

    def events_with_records(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the status of each such record.

        Summaries are left out: a summary is an index over its events, not made
        from one of them, and its older versions must not mark the events old.
        """
        found: dict[str, list[str]] = {}
        for r in self._keyed(tenant, self.lookup_sql.RECORD_STATUS_BY_EVENT, event_ids):
            found.setdefault(r["event_id"], []).append(r["status"])
        return found

    def records_of_events(self, tenant: str, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For those of these events some record came from: the ids of those records
        (summaries left out, as in `events_with_records`), in id order."""
        found: dict[str, list[str]] = {}
        for r in self._keyed(tenant, self.lookup_sql.RECORD_STATUS_BY_EVENT, event_ids):
            found.setdefault(r["event_id"], []).append(r["record_id"])
        return {e: sorted(ids) for e, ids in found.items()}

    def _keyed(self, tenant: str, sql: str, keys: Sequence[str]) -> list[Row]:
        """The rows of a statement over a list of keys, each bound part in its own read."""
        rows: list[Row] = []
        for bound_sql, params in self._lists(sql, {"tenant": tenant}, list(keys)):
            rows.extend(self._read(tenant, bound_sql, params))
        return rows


def _event_key(value: object) -> bool:
    """Whether `value` is an `EventKey`: an aware time and a seq within a bigint."""
    if not isinstance(value, tuple) or len(value) != 2:
        return False
    when, seq = value
    return (
        isinstance(when, datetime)
        and when.tzinfo is not None
        and type(seq) is int
        and 0 <= seq < 2**63
    )
