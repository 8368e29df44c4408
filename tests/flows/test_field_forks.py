"""A `fact` as of a past time reads a bounded number of rows however long the field's
history (`remem.store.forks`; SQLite schema 14, PostgreSQL schema 18).

The invalid records held at a past time are found by the forks of their intervals (of
validity, and of being open), not by walking the field's older or newer history: a
field restated 2,000 times answers as of any past moment with the same work as one
restated 200 times. The work is counted inside the database (SQLite's virtual-machine
instructions through its progress handler; PostgreSQL's rows scanned, from `EXPLAIN
ANALYZE` of the statement the store runs), never timed; the answers are held to the
value stated at that moment and to a brute-force reading of the whole table. On both
backends."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from remem import Memory
from remem.facts.lookup import lookup
from remem.model import Status
from remem.store.forks import ancestors, fork, seconds
from remem.store.roles import Scope
from remem.store.sqlite.store import SQLiteStore
from tests.support.backends import both_backends
from tests.support.clock import Clock
from tests.support.field_history import sqlite_steps

FIELD = "preference:coffee"


def restate(mem: Memory, clock: Clock, start: int, n: int, at: list[datetime]) -> None:
    """`n` new values of the field a minute apart, each superseding the last; `at` gets
    a moment 30 seconds after each, when it was the one held."""
    for i in range(start, start + n):
        clock.advance(minutes=1)
        mem.remember(actor="ann", text=f"Ann takes her coffee style {i}", field=FIELD,
                     value=f"s{i}")  # fmt: skip
        at.append(clock() + timedelta(seconds=30))


@contextmanager
def postgres_rows(mem: Memory) -> Iterator[list[int]]:
    """The rows PostgreSQL scans (returned by a scan or removed by its filter, in every
    loop) in the records and history tables for each statement the store reads while
    the block runs: each is run once more under `EXPLAIN ANALYZE` to count them."""
    backend = mem.store.records.backend  # type: ignore[attr-defined]
    real = backend.read
    seen = [0]

    def scanned(plan: Mapping[str, Any]) -> int:
        own = 0
        if plan.get("Relation Name") in ("records", "history"):
            loops = int(plan.get("Actual Loops", 1))
            rows = float(plan["Actual Rows"]) + float(plan.get("Rows Removed by Filter", 0))
            own = round(rows * loops)
        return own + sum(scanned(p) for p in plan.get("Plans", ()))

    def counting(tenant: str | None, sql: str, params: Mapping[str, Any]) -> Sequence[Any]:
        rows = real(tenant, sql, params)
        (row,) = real(tenant, f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        plan = next(iter(row.values()))
        plan = json.loads(plan) if isinstance(plan, str) else plan
        seen[0] += scanned(plan[0]["Plan"])
        return rows

    backend.read = counting
    try:
        yield seen
    finally:
        del backend.read


def work(mem: Memory, moments: Sequence[datetime]) -> list[int]:
    """The database's work for `fact` as of each of `moments`. On PostgreSQL the tables
    are vacuumed and their statistics brought up to date first, as autovacuum would after
    such a load (on a table it has never analysed the planner takes every index to be as
    good; and whether autovacuum has vacuumed the new pages yet changes what an
    index-only scan costs: a CI run under load once read 205 rows where runs here read
    25, and vacuuming here leaves the plan to the data alone)."""
    if not isinstance(mem.store, SQLiteStore):
        with mem.store.records.backend.connect() as conn:  # type: ignore[attr-defined]
            conn.execute("VACUUM (ANALYZE) records, history")
    out = []
    for t in moments:
        counting = sqlite_steps if isinstance(mem.store, SQLiteStore) else postgres_rows
        with counting(mem) as seen:
            mem.fact(actor="ann", field=FIELD, as_of=t)
        out.append(seen[0])
    return out


@both_backends
def test_a_fact_as_of_a_past_time_reads_the_same_however_long_the_history(
    mem: Memory, clock: Clock
) -> None:
    at: list[datetime] = []
    restate(mem, clock, 0, 200, at)
    moments = [at[5], at[100], at[198]]
    short = work(mem, moments)
    restate(mem, clock, 200, 800, at)  # five times the history (ten: the same, 2x the time)
    moments_late = [at[600], at[998]]
    long = work(mem, moments) + work(mem, moments_late)
    if isinstance(mem.store, SQLiteStore):  # hundreds of instructions: a deeper B-tree only
        assert max(long) <= max(short) + 5, (short, long)
    else:  # rows scanned: the held records and the few open at each fork's moment (at
        # 200 values the planner may still find a walk of the actor's rows cheaper)
        assert max(long) <= 40, (short, long)
    for i in (0, 5, 100, 199, 200, 555, 777, 900, 998, 999):
        answer = mem.fact(actor="ann", field=FIELD, as_of=at[i]).as_dict()
        assert answer["status"] == "found" and answer["value"] == f"s{i}", (i, answer)
    before = mem.fact(actor="ann", field=FIELD, as_of=at[0] - timedelta(minutes=5))
    assert before.status == "not_found"
    # what is known now about a past moment: the value valid then, stated then
    assert mem.fact(actor="ann", field=FIELD, valid_at=at[876]).as_dict()["value"] == "s876"


@both_backends
def test_the_forks_find_what_a_reading_of_every_history_finds(mem: Memory, clock: Clock) -> None:
    at: list[datetime] = []
    restate(mem, clock, 0, 60, at)
    # a value that expires on its own, then is superseded after it expired
    clock.advance(minutes=1)
    mem.remember(actor="ann", text="Ann takes her coffee black this week", field=FIELD,
                 value="black", valid_until=clock() + timedelta(minutes=3))  # fmt: skip
    clock.advance(minutes=5)
    restate(mem, clock, 60, 20, at)
    every = [
        r
        for r in mem.store.records.list_records(
            Scope(mem.tenant, "ann"), [Status.ACTIVE, Status.INVALID]
        )
        if r.field == FIELD
    ]
    now = clock()
    for known in [*at[::7], at[-1], now - timedelta(hours=3)]:
        closed = {}
        for r in every:
            shut = [h.at for h in mem.history(r.id) if h.status is Status.INVALID]
            if shut:
                closed[r.id] = min(shut)
        for valid in (known, at[12], at[70]):
            got = mem.fact(actor="ann", field=FIELD, known_at=known, valid_at=valid).as_dict()
            want = lookup(FIELD, every, known, valid, closed).as_dict()
            assert got == want, (known, valid)


def test_an_interval_is_registered_at_an_ancestor_of_each_second_it_holds() -> None:
    base = datetime.fromisoformat("2026-03-01T10:00:00+00:00")
    for length in (0, 1, 59, 3_600, 86_400 * 400):
        lo, hi = seconds(base), seconds(base + timedelta(seconds=length))
        node = fork(lo, hi)
        assert node is not None and lo <= node <= hi
        for inside in (0, length // 3, length):
            assert node in ancestors(base + timedelta(seconds=inside))
        assert node not in ancestors(base + timedelta(seconds=length + 1)) or node == fork(
            lo, hi + 1
        )
    assert fork(10, 9) is None
    early, late = datetime.fromisoformat("0001-01-01T00:00:00+00:00"), datetime.max
    assert 0 < seconds(early) < seconds(late.replace(tzinfo=early.tzinfo)) < 2**39


_UNDO_SQLITE = """DROP INDEX records_field_known_fork; DROP INDEX records_field_valid_fork;
DROP TRIGGER history_closes; ALTER TABLE records DROP COLUMN closed_at;
ALTER TABLE records DROP COLUMN known_fork; ALTER TABLE records DROP COLUMN valid_fork;
ALTER TABLE api_requests DROP COLUMN digest; PRAGMA user_version = 13"""
_UNDO_POSTGRES = """DROP TRIGGER history_closes ON history; DROP FUNCTION history_closes();
ALTER TABLE records DROP COLUMN closed_at, DROP COLUMN known_fork, DROP COLUMN valid_fork;
ALTER TABLE api_requests DROP COLUMN digest; DELETE FROM schema_version WHERE version >= 18"""


@both_backends
def test_the_migration_fills_the_forks_of_a_history_written_before_it(
    db_path: Any, clock: Clock
) -> None:
    """A database whose history was written before schema 14 / 18 (made so by undoing that
    migration and the ones after it) is migrated on opening, and its past is answered as
    before."""
    at: list[datetime] = []
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        restate(mem, clock, 0, 40, at)
        if isinstance(mem.store, SQLiteStore):
            conn = mem.store.backend.conn  # type: ignore[attr-defined]
            for statement in _UNDO_SQLITE.split(";"):
                conn.execute(statement)
        else:
            with mem.store.records.backend.connect() as pg:  # type: ignore[attr-defined]
                for statement in _UNDO_POSTGRES.split(";"):
                    pg.execute(statement)
        before = 13 if isinstance(mem.store, SQLiteStore) else 17
        assert mem.store.schema_version() == before
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        assert mem.store.schema_version() == mem.store.schema_known
        for i in (0, 7, 20, 38, 39):
            answer = mem.fact(actor="ann", field=FIELD, as_of=at[i]).as_dict()
            assert answer["value"] == f"s{i}", (i, answer)
        restate(mem, clock, 40, 5, at)  # and the trigger keeps the new ones
        assert mem.fact(actor="ann", field=FIELD, as_of=at[42]).as_dict()["value"] == "s42"
