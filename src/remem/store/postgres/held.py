"""Decoded records a PostgreSQL store keeps while their scopes are unchanged.

A recall fetches the same candidates again and again: at 100,000 records in scope,
94% of the 84 records a recall of `remem bench` asks for were asked for before, and
reading and decoding them took about a fifth of a recall's time on PostgreSQL. As on
SQLite (`remem.store.sqlite.upkeep.HeldRecords`), decoded records are kept; here,
beside the version of their scope (`scope_versions`), which the transaction of every
write to a scope's records moves on, in any process: inserts, status changes, grown
sources and erasures (`RecordUpkeep.scope_changed`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from remem.model import Record
from remem.store.flows.records import Reader
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.rows import record_from

__all__ = ["RECORDS_HELD", "HeldRecords"]

RECORDS_HELD = 10_000
"""Decoded records kept per store (the oldest dropped first), as on SQLite."""


class _Held(NamedTuple):
    seq: int
    version: int
    record: Record


class HeldRecords:
    """Decoded records while their scope's version is unchanged
    (`remem.store.flows.records.Held`).

    A read sends, in one round trip, a short statement for the versions of the scopes
    of the records it holds among those asked for, and one for the records it does not
    hold, each with its scope's version (one statement, so one snapshot: a record is
    never kept beside a version newer than itself, whatever commits meanwhile). It hands
    back the held records whose scope has not moved on, and reads the others again. At
    most `RECORDS_HELD` are kept, the oldest dropped first.
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.records: dict[tuple[str, str], _Held] = {}
        self.lock = threading.Lock()

    def get(self, tenant: str, ids: Sequence[str], read: Reader) -> list[Record]:
        """Records of this tenant with these ids (missing ones are left out), in the order
        of the records table (`seq`), as `GET_RECORDS` gives them. `read` is not used:
        the records are read with their scope's version (`GET_RECORDS_HELD`)."""
        wanted = list(dict.fromkeys(ids))
        with self.lock:
            held = {i: h for i in wanted if (h := self.records.get((tenant, i))) is not None}
        unheld = [i for i in wanted if i not in held]
        actors = sorted({h.record.actor for h in held.values()})
        statements: list[tuple[str, dict[str, Any]]] = []
        if held:
            statements.append((q.SCOPE_VERSIONS, {"tenant": tenant, "actors": actors}))
        if unheld:
            statements.append((q.GET_RECORDS_HELD, {"tenant": tenant, "keys": unheld}))
        got = self.backend.rows_many(tenant, statements) if statements else []
        now = {r["actor"]: int(r["version"]) for r in got[0]} if held else {}
        fresh = {i: h for i, h in held.items() if now.get(h.record.actor, 0) == h.version}
        rows = got[-1] if unheld else []
        stale = [i for i in held if i not in fresh]
        if stale:  # their scope moved on since: read again
            rows = [*rows, *self.backend.rows(tenant, q.GET_RECORDS_HELD,
                                              {"tenant": tenant, "keys": stale})]  # fmt: skip
        read_now = {
            r["id"]: _Held(
                int(r["seq"]),
                int(r["scope_version"]),
                record_from(r, self.backend.time, self.backend.list_value),
            )
            for r in rows
        }
        if read_now or stale:
            with self.lock:
                for i in stale:
                    self.records.pop((tenant, i), None)
                for i, h in read_now.items():
                    self.records.pop((tenant, i), None)  # newest last: dropped last
                    self.records[(tenant, i)] = h
                while len(self.records) > RECORDS_HELD:
                    self.records.pop(next(iter(self.records)))
        found = sorted([*fresh.values(), *read_now.values()], key=lambda h: h.seq)
        return [h.record for h in found]
