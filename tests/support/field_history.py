"""A field's long history, written through consolidation and read as a whole table.

`build` writes a mixed history of one field and holds each decision to
`remem.consolidate.rules.decide` over the whole table; `table` and `brute_closings`
read it the brute-force way (every record of the scope, every history) that the
bounded reads of `RecordStore.records_by_field` are compared with
(tests/flows/test_field_history.py, `python -m tests.support.field_bench widths`).
`rows_read` and `sqlite_steps` count the work of a read: rows handed back by the
store's backend, and SQLite's own instructions.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from remem import Memory
from remem.consolidate.rules import Decision, decide
from remem.consolidate.step import Consolidation
from remem.model import Action, Authority, Candidate, Kind, Record, Source, Status
from remem.pipeline.jobs import ProcessResult
from remem.policy.scope import namespace_for
from remem.store.roles import Scope
from tests.support.clock import Clock

FIELD = "preference:coffee"
CONFIRMED = Authority.CONFIRMED
NAMESPACE = namespace_for("default", "bea", Kind.PREFERENCE)
ACTOR = "bea"
KINDS = ("new", "new", "new", "same", "rerun", "inferred", "late", "expiring", "old")


def table(mem: Memory, field: str = FIELD) -> list[Record]:
    """Every active and invalid record of the field, read as the whole scope's list (not by
    the field's index): the brute-force reading the bounded reads are held to."""
    every = mem.store.records.list_records(
        Scope(mem.tenant, ACTOR), [Status.ACTIVE, Status.INVALID]
    )
    return [r for r in every if r.field == field]


def brute_closings(mem: Memory, records: Sequence[Record], known: datetime) -> dict[str, datetime]:
    """`remem.recall.gather.closings` over every record: each one's history read."""
    if known >= mem.deps.clock():
        return {}
    out = {}
    for r in records:
        if r.status is Status.INVALID and r.created_at <= known:
            shut = [h.at for h in mem.history(r.id) if h.status is Status.INVALID]
            out[r.id] = min(shut) if shut else r.created_at
    return out


def outcome(result: ProcessResult, record_id: str, batch: Consolidation) -> tuple[object, ...]:
    if result.noops:
        return ("noop", record_id)
    if result.late:
        return ("late",)
    return (
        "update" if result.records_updated else "add",
        sorted(c.record_id for c in batch.changes),
    )


def expected(decision: Decision) -> tuple[object, ...]:
    if decision.action is Action.NOOP:
        return ("noop", decision.target)
    if decision.late_behind is not None:
        return ("late",)
    return (decision.action.value.lower(), sorted(decision.supersedes))


def build(mem: Memory, clock: Clock, steps: int, seed: int = 7) -> list[datetime]:
    """`steps` candidates about the field through consolidation (the path of `remember` and
    extraction): new values, the current value restated, an event consolidated again,
    inferred values beside confirmed ones, late arrivals, values that expire, old values
    said again. Before each is written, its decision is held to `decide` over the whole
    table. Returns the times the steps were written at."""
    rng = random.Random(seed)
    said: list[tuple[str, str]] = []  # (event id, value) of each step
    times = []
    current = "v0"
    for i in range(steps):
        clock.advance(minutes=1)
        kind = KINDS[rng.randrange(len(KINDS))] if said else "new"
        event, value, observed, authority, until = f"ev{i}", f"v{i}", clock(), CONFIRMED, None
        if kind == "same":
            value = current
        elif kind == "rerun":
            event, value = said[rng.randrange(len(said))]
        elif kind == "inferred":
            authority = Authority.INFERRED
        elif kind == "late":
            observed = clock() - timedelta(minutes=rng.randrange(1, 90))
        elif kind == "expiring":
            until = clock() + timedelta(minutes=rng.randrange(1, 30))
        elif kind == "old":
            value = said[rng.randrange(len(said))][1]
        cand = Candidate(
            text=f"coffee, {value}", kind=Kind.PREFERENCE, observed_at=observed,
            source=Source(type="event", event_ids=(event,), strategy="semantic"),
            field=FIELD, value=value, authority=authority,
        )  # fmt: skip
        same = sorted(table(mem), key=lambda r: r.created_at, reverse=True)
        want = expected(decide(cand, same, []))
        batch = Consolidation(mem.deps, ACTOR)
        result, record_id = batch.add(cand, None, NAMESPACE, valid_until=until, near=())
        assert outcome(result, record_id, batch) == want, (i, kind)
        mem.store.records.apply(batch.write())
        said.append((event, value))
        if result.records_added or result.records_updated:
            current = value if authority is CONFIRMED else current
        times.append(clock())
    return times


def newest(records: Sequence[Record]) -> list[Record]:
    return sorted(records, key=lambda r: r.valid_from, reverse=True)


@contextmanager
def rows_read(mem: Memory) -> Iterator[list[int]]:
    """The rows the store's backend hands back while the block runs (every read of
    records goes through `Backend.read`); counted, then passed on unchanged."""
    backend = mem.store.records.backend  # type: ignore[attr-defined]
    real = backend.read
    seen = [0]

    def counting(tenant: str | None, sql: str, params: Mapping[str, Any]) -> Sequence[Any]:
        rows = real(tenant, sql, params)
        seen[0] += len(rows)
        return rows

    backend.read = counting
    try:
        yield seen
    finally:
        del backend.read  # the instance's own attribute: the class's method again


@contextmanager
def sqlite_steps(mem: Memory) -> Iterator[list[int]]:
    """SQLite's virtual-machine instructions (in hundreds) run while the block runs: the
    work inside the database, which rows handed back do not show."""
    conn = mem.store.records.backend.conn  # type: ignore[attr-defined]
    seen = [0]

    def step() -> int:
        seen[0] += 1
        return 0  # go on

    conn.set_progress_handler(step, 100)
    try:
        yield seen
    finally:
        conn.set_progress_handler(None, 0)
