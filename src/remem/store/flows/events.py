"""Adding events with their jobs: the flow once, for every backend.

`EventLog` is a mixin of both stores. One call's events are written in one
transaction (on PostgreSQL bound to each of their tenants in turn), with one
job per (new event, strategy): the outbox that
makes extraction happen exactly once per event. What is new is decided by
`remem.policy.events.classify` against what is stored under the same ids (a
repeat of a stored event is no second event; another event under a taken id
is refused whole with `EventIdTaken`, and nothing of the call is written). A
backend supplies its named statements (`EventSQL`), its transaction (SQLite's
write lock, PostgreSQL's transaction bound to the tenant, where a concurrent
writer may store an id between the read and the insert: the stored one then
decides, as if it had been there) and its full-text upkeep (`_index_events`:
FTS5 rows on SQLite, term rows on PostgreSQL).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from remem.model import Event
from remem.policy.events import EventIdTaken, Identity, classify
from remem.store.flows.backend import SQLFlows, Tx
from remem.store.roles import Clock
from remem.store.rows import event_params, json_text


class EventSQL(Protocol):
    """The named statements of adding events."""

    EVENT_IDENTITIES: str  # tenant, {keys}: ids -> id, actor, session, role, text
    EVENT_FIELDS: tuple[str, ...]  # the keys of `remem.store.rows.event_params`, in order
    EVENT_ROWS: int  # the most events one `insert_events` statement takes
    INSERT_JOB: str  # tenant, event_id, strategy, at; ON CONFLICT DO NOTHING

    def insert_events(self, rows: int) -> str:
        """`rows` events' fields in turn, positional; ON CONFLICT DO NOTHING RETURNING
        key, id."""
        ...


class EventLog(SQLFlows):
    """`add_events` of a store, written once."""

    events_sql: ClassVar[EventSQL]
    _clock: Clock

    def _index_events(self, db: Tx, tenant: str, added: Sequence[tuple[Any, Event]]) -> None:
        """Index just-inserted events (their backend keys) for `search_events`."""
        raise NotImplementedError

    def add_events(self, events: Sequence[Event], strategies: Sequence[str]) -> list[bool]:
        """Append events and, in the same transaction, one job per strategy each; per
        event, whether it was new. See `Store.add_events`."""
        if not events:
            return []
        by_tenant: dict[str, list[int]] = {}
        for i, e in enumerate(events):
            by_tenant.setdefault(e.tenant, []).append(i)
        fresh: list[bool] = [False] * len(events)
        now = self._at(self._clock())
        tenants = list(by_tenant)
        with self._flow_tx(tenants[0]) as db:
            for tenant in tenants:  # one transaction, bound to each tenant in turn
                if tenant != tenants[0]:
                    self._bind(db, tenant)
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
        q = self.events_sql
        fresh = self._classify(db, tenant, batch, places)
        new = [i for i, is_new in enumerate(fresh) if is_new]
        keys = self._insert_events(db, [batch[i] for i in new], now)
        raced = [i for i, key in zip(new, keys, strict=True) if key is None]
        if raced:  # a concurrent writer stored these ids: the stored one decides
            self._classify(db, tenant, [batch[i] for i in raced], [places[i] for i in raced])
            fresh = [is_new and i not in raced for i, is_new in enumerate(fresh)]
        added = [(key, batch[i]) for i, key in zip(new, keys, strict=True) if key is not None]
        if added:
            self._index_events(db, tenant, added)
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
        q = self.events_sql
        fields = operator.itemgetter(*q.EVENT_FIELDS)

        def obj(value: Any) -> object:  # text on both backends, never jsonb (schema 11)
            return "{}" if type(value) is dict and not value else json_text(value)

        keys: dict[str, Any] = {}
        for start in range(0, len(events), q.EVENT_ROWS):
            part = events[start : start + q.EVENT_ROWS]
            values = [v for e in part for v in fields(event_params(e, now, self._at, obj))]
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
        for sql, params in self._lists(self.events_sql.EVENT_IDENTITIES, {"tenant": tenant}, ids):
            for r in db.execute(sql, params).fetchall():
                stored[r["id"]] = Identity(r["actor"], r["session"], r["role"], r["text"])
        try:
            return classify(batch, stored)
        except EventIdTaken as exc:
            raise EventIdTaken(exc.event_id, places[exc.index]) from None
