"""Adding events with their jobs: the flow once, for every backend.

`Events` is the event log of both stores (`Store.events`): adding events and reading
them. One call's events are written in one
transaction (on PostgreSQL bound to each of their tenants in turn), with one
job per (new event, strategy): the outbox that
makes extraction happen exactly once per event. What is new is decided by
`remem.policy.events.classify` against what is stored under the same ids (a
repeat of a stored event is no second event; another event under a taken id
is refused whole with `EventIdTaken`, and nothing of the call is written). A
backend supplies its named statements (`EventSQL`), its transaction (SQLite's
write lock, PostgreSQL's transaction bound to the tenant, where a concurrent
writer may store an id between the read and the insert: the stored one then
decides, as if it had been there) and its full-text upkeep (`EventUpkeep.index_events`:
FTS5 rows on SQLite, term rows on PostgreSQL).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from remem.errors import InvalidInput
from remem.model import Event
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store.flows.backend import Backend, Row, Tx
from remem.store.roles import EventKey, Near
from remem.store.rows import event_from, event_params, json_text, near_from

EARLIEST = datetime(1, 1, 1, tzinfo=UTC)  # before every storable time: the first page
PAGE_BYTES = 4 * 1024 * 1024  # of event text and metadata in one `events_page`


class EventSQL(Protocol):
    """The named statements of adding and reading events; parameters as listed."""

    LIST_EVENTS_ACTOR: str  # tenant, actor, limit
    LIST_EVENTS_SESSION: str  # tenant, actor, session, limit
    # tenant, actor, time, seq, limit, bytes -> + seq, bytes_before (after that key)
    EVENTS_AFTER_ACTOR: str
    EVENTS_AFTER_SESSION: str  # the same and session
    GET_EVENTS: str  # tenant, {keys}: event ids (in arrival order)
    SESSION_CONTEXT: str  # tenant, actor, session, time, limit (newest first)

    EVENT_IDENTITIES: str  # tenant, {keys}: ids -> id, actor, session, role, text
    EVENT_FIELDS: tuple[str, ...]  # the keys of `remem.store.rows.event_params`, in order
    EVENT_ROWS: int  # the most events one `insert_events` statement takes
    INSERT_JOB: str  # tenant, event_id, strategy, at; ON CONFLICT DO NOTHING

    def insert_events(self, rows: int) -> str:
        """`rows` events' fields in turn, positional; ON CONFLICT DO NOTHING RETURNING
        key, id."""
        ...


class EventUpkeep(Protocol):
    """What is a backend's own about events: its full-text rows, and the events around
    others (one statement per chunk of events on SQLite, a lateral join on PostgreSQL)."""

    def index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        """Index just-inserted events (their backend keys) for `search_events`."""
        ...

    def near_rows(self, tenant: str, event_ids: Sequence[str], reach: int) -> Sequence[Row]:
        """The rows of `remem.store.rows.near_from` around these events of one tenant."""
        ...


class Events:
    """The event log of a store (`remem.store.roles.EventLog`), written once over its
    `backend`, its dialect's statements (`sql`) and its own indexes (`upkeep`)."""

    def __init__(self, backend: Backend, sql: EventSQL, upkeep: EventUpkeep) -> None:
        self.backend, self.sql, self.upkeep = backend, sql, upkeep

    def event(self, r: Row) -> Event:
        """An event from its row."""
        return event_from(r, self.backend.time, self.backend.json_value)  # type: ignore[arg-type]

    def add_events(self, events: Sequence[Event], strategies: Sequence[str]) -> list[bool]:
        """Append events and, in the same transaction, one job per strategy each; per
        event, whether it was new. See `Store.add_events`."""
        if not events:
            return []
        by_tenant: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_tenant.setdefault(e.tenant, []).append(i)
        fresh: list[bool] = [False] * len(events)
        now = self.backend.at(self.backend.clock())
        tenants = list(by_tenant)
        with self.backend.transaction(tenants[0]) as db:
            for tenant in tenants:  # one transaction, bound to each tenant in turn
                if tenant != tenants[0]:
                    self.backend.bind(db, tenant)
                places = by_tenant[tenant]
                mine = self._add(db, tenant, [events[i] for i in places], places, strategies, now)
                for i, is_new in zip(places, mine, strict=True):
                    fresh[i] = is_new
        return fresh

    def _add(
        self,
        db: Tx,
        tenant: str,
        batch: Sequence[Event],
        places: Sequence[int],
        strategies: Sequence[str],
        now: Any,
    ) -> list[bool]:
        """Add one tenant's events (at `places` in the call) with their jobs; which were new."""
        q = self.sql
        fresh = self._classify(db, tenant, batch, places)
        new = [i for i, is_new in enumerate(fresh) if is_new]
        keys = self._insert_events(db, [batch[i] for i in new], now)
        raced = [i for i, key in zip(new, keys, strict=True) if key is None]
        if raced:  # a concurrent writer stored these ids: the stored one decides
            self._classify(db, tenant, [batch[i] for i in raced], [places[i] for i in raced])
            fresh = [is_new and i not in raced for i, is_new in enumerate(fresh)]
        added = [(key, batch[i]) for i, key in zip(new, keys, strict=True) if key is not None]
        if added:
            self.upkeep.index_events(db, tenant, added)
            jobs = [
                {"tenant": tenant, "event_id": e.id, "strategy": s, "at": now}
                for _, e in added
                for s in strategies
            ]
            if jobs:
                db.executemany(q.INSERT_JOB, jobs)
        return fresh

    def _insert_events(self, db: Tx, events: Sequence[Event], now: Any) -> list[Any]:
        """Insert events of distinct ids, `EVENT_ROWS` to a statement; per event, its
        backend key, or None where a concurrent writer stored its id first."""
        q = self.sql
        fields = operator.itemgetter(*q.EVENT_FIELDS)

        def obj(value: Any) -> object:  # text on both backends, never jsonb (schema 11)
            return "{}" if type(value) is dict and not value else json_text(value)

        keys: dict[str, Any] = {}
        for start in range(0, len(events), q.EVENT_ROWS):
            part = events[start : start + q.EVENT_ROWS]
            values = [v for e in part for v in fields(event_params(e, now, self.backend.at, obj))]
            for r in db.execute(q.insert_events(len(part)), values).fetchall():
                keys[r["id"]] = r["key"]
        return [keys.get(e.id) for e in events]

    def _classify(
        self, db: Tx, tenant: str, batch: Sequence[Event], places: Sequence[int]
    ) -> list[bool]:
        """Per event of `batch`, whether it is new; `EventIdTaken` names its place in the
        call (`places[i]` for `batch[i]`)."""
        ids = list(dict.fromkeys(e.id for e in batch))
        stored: dict[str, Identity] = {}
        for sql, params in self.backend.lists(self.sql.EVENT_IDENTITIES, {"tenant": tenant}, ids):
            for r in db.execute(sql, params).fetchall():
                stored[r["id"]] = Identity(r["actor"], r["session"], r["role"], r["text"])
        try:
            return classify(batch, stored)
        except EventIdTaken as exc:
            raise EventIdTaken(exc.event_id, places[exc.index]) from None

    # -- reads ------------------------------------------------------------------------------

    def list_events(
        self, tenant: str, actor: str, session: str | None = None, limit: int = 1000
    ) -> list[Event]:
        """Events of one actor (optionally one session), oldest first by their own time."""
        q = self.sql
        sql = q.LIST_EVENTS_ACTOR if session is None else q.LIST_EVENTS_SESSION
        params = {"tenant": tenant, "actor": actor, "session": session, "limit": limit}
        return [self.event(r) for r in self.backend.read(tenant, sql, params)]

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
        q = self.sql
        sql = q.EVENTS_AFTER_ACTOR if session is None else q.EVENTS_AFTER_SESSION
        when, seq = after or (EARLIEST, 0)
        params = {"tenant": tenant, "actor": actor, "session": session,
                  "time": self.backend.at(when), "seq": seq, "limit": limit + 1,
                  "bytes": max_bytes}  # fmt: skip
        rows = self.backend.read(tenant, sql, params)
        page = [r for r in rows[:limit] if r["bytes_before"] < max_bytes]
        events = [self.event(r) for r in page]
        if len(rows) == len(page):
            return events, None
        return events, (events[-1].time, int(page[-1]["seq"]))

    def get_events(self, tenant: str, event_ids: Sequence[str]) -> list[Event]:
        """The events with these client ids, in arrival order."""
        return [self.event(r) for r in self._keyed(tenant, self.sql.GET_EVENTS, event_ids)]

    def session_context(self, event: Event, limit: int) -> list[Event]:
        """Up to `limit` events of `event`'s session before it, oldest first."""
        params = {"tenant": event.tenant, "actor": event.actor, "session": event.session,
                  "time": self.backend.at(event.time), "limit": limit}  # fmt: skip
        rows = self.backend.read(event.tenant, self.sql.SESSION_CONTEXT, params)
        return [self.event(r) for r in reversed(rows)]

    def events_near(self, events: Sequence[Event], reach: int) -> Near:
        """The events around each of these (one tenant's), `reach` steps either way in its
        session; see `EventLog.events_near`."""
        if not events or reach <= 0:
            return {}
        tenant = events[0].tenant
        return near_from(self.upkeep.near_rows(tenant, [e.id for e in events], reach), self.event)

    def _keyed(self, tenant: str, sql: str, keys: Sequence[str]) -> list[Row]:
        """The rows of a statement over a list of keys, each bound part in its own read."""
        rows: list[Row] = []
        for bound_sql, params in self.backend.lists(sql, {"tenant": tenant}, list(keys)):
            rows.extend(self.backend.read(tenant, bound_sql, params))
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
