"""A field's long history costs a write, a lookup and consolidation nothing more.

An agent may store `preference:coffee` thousands of times. Each write of a fielded
fact, each `fact` and each listing of the field reads only what it needs (the
field's current records, the records valid at the time asked for, the newest
`limit`), so the rows read from the backend stay the same however long the
history grows. The answers are compared with a brute-force reading of the whole
table (`remem.facts.lookup.lookup` and `remem.consolidate.rules.decide` over every
record of the field), on both backends.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from remem import Memory
from remem.embed import HashEmbedder
from remem.facts.lookup import lookup
from remem.model import Status
from remem.policy.scope import SHARED_ACTOR
from remem.policy.validity import held
from remem.store.roles import Scope
from tests.support.backends import both_backends
from tests.support.clock import Clock, Ticking
from tests.support.field_history import (
    ACTOR,
    FIELD,
    brute_closings,
    build,
    newest,
    rows_read,
    sqlite_steps,
    table,
)


def restate(mem: Memory, clock: Clock, times: int, start: int = 0) -> None:
    """`times` new values of the field, a minute apart: each supersedes the last."""
    for i in range(start, start + times):
        clock.advance(minutes=1)
        mem.remember(actor="ann", text=f"I take my coffee style {i}", field=FIELD, value=f"s{i}")


def cost(mem: Memory, clock: Clock, step: Callable[[], object]) -> int:
    clock.advance(minutes=1)
    with rows_read(mem) as seen:
        step()
    return seen[0]


def costs(mem: Memory, clock: Clock, n: int) -> dict[str, int]:
    """Rows read by each operation on the field when it has `n` values behind it."""
    past = clock()
    return {
        "write a new value": cost(
            mem,
            clock,
            lambda: mem.remember(actor="ann", text=f"coffee {n}", field=FIELD, value=f"new{n}"),
        ),
        "write the same value": cost(
            mem,
            clock,
            lambda: mem.remember(actor="ann", text=f"coffee {n}", field=FIELD, value=f"new{n}"),
        ),
        "fact now": cost(mem, clock, lambda: mem.fact(actor="ann", field=FIELD)),
        "fact as of a minute ago": cost(
            mem, clock, lambda: mem.fact(actor="ann", field=FIELD, as_of=past)
        ),
        "the newest 3 of the field": cost(
            mem, clock, lambda: mem.records(actor="ann", field=FIELD, all=True, limit=3)
        ),
        "records as of a minute ago": cost(
            mem, clock, lambda: mem.records(actor="ann", field=FIELD, as_of=past, limit=3)
        ),
    }


@both_backends
def test_rows_read_per_write_and_lookup_do_not_grow_with_the_fields_history(
    mem: Memory, clock: Clock
) -> None:
    restate(mem, clock, 20)
    short = costs(mem, clock, 20)
    restate(mem, clock, 150, start=20)
    long = costs(mem, clock, 170)
    assert long == short
    assert max(short.values()) <= 12  # a handful of rows, not the history


@both_backends
def test_decisions_and_lookups_match_a_reading_of_the_whole_table(
    mem: Memory, clock: Clock
) -> None:
    for other in ("tea", "milk"):  # other fields and another actor beside it
        mem.remember(actor=ACTOR, text=f"I like {other}", field=f"preference:{other}", value="yes")
        mem.remember(actor="cid", text="coffee, black", field=FIELD, value="black")
    times = build(mem, clock, 160)
    clock.advance(minutes=5)
    records = table(mem)
    assert len(records) > 100  # a long history, most of it invalid
    rng = random.Random(11)
    moments = [times[0] - timedelta(minutes=1), *rng.sample(times, 25), clock()]
    moments += [t + timedelta(seconds=30) for t in rng.sample(times, 10)]
    for known in moments:
        closed = brute_closings(mem, records, known)
        for valid in (known, *rng.sample(moments, 3)):
            got = mem.fact(actor=ACTOR, field=FIELD, known_at=known, valid_at=valid).as_dict()
            want = lookup(FIELD, records, known, valid, closed).as_dict()
            assert got == want, (known, valid)
        held_then = [r.id for r in newest(records) if held(r, known, known, closed)]
        listed = mem.records(actor=ACTOR, field=FIELD, as_of=known, limit=3)
        assert [r.id for r in listed] == held_then[:3]
    assert [r.id for r in mem.records(actor=ACTOR, field=FIELD, all=True, limit=7)] == [
        r.id for r in newest(records)[:7]
    ]
    active = [r.id for r in newest(records) if r.status is Status.ACTIVE]
    assert [r.id for r in mem.records(actor=ACTOR, field=FIELD)] == active
    assert 1 <= len(active) <= 3  # superseded as it went: one per authority, at most


def versions(mem: Memory, clock: Clock, n: int, start: int = 0) -> str:
    """`n` approved versions of the procedure "refunds", each superseding the last; the
    id of the newest."""
    newest = ""
    for i in range(start, start + n):
        clock.advance(minutes=1)
        rec = mem.propose_procedure(text=f"Refunds over ${100 + i} need a manager", name="refunds")
        newest = mem.approve(rec.id, reviewer="dana").id
    return newest


@both_backends
def test_approving_a_version_reads_the_approved_one_not_every_version(
    mem: Memory, clock: Clock
) -> None:
    def approval() -> int:
        clock.advance(minutes=1)
        rec = mem.propose_procedure(text="Refunds need a receipt", name="refunds")
        with rows_read(mem) as seen:
            mem.approve(rec.id, reviewer="dana")
        return seen[0]

    versions(mem, clock, 10)
    short = approval()
    newest = versions(mem, clock, 120, start=10)
    shared = Scope(mem.tenant, SHARED_ACTOR)  # the whole table's versions, read by scope
    listed = mem.store.records.list_records(shared, [Status.ACTIVE, Status.INVALID])
    every = [r for r in listed if r.field == "procedure:refunds"]
    assert len(every) == 131
    assert [r.id for r in every if r.status is Status.ACTIVE] == [newest]  # the others superseded
    assert approval() == short


def test_the_database_work_of_a_lookup_now_and_a_fields_reads_does_not_grow(
    tmp_path: Path,
) -> None:
    clock = Ticking()
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), clock=clock) as mem:
        scope = Scope(mem.tenant, "ann")

        def work() -> dict[str, int]:
            steps = {}
            for name, read in {
                "fact now": lambda: mem.fact(actor="ann", field=FIELD),
                "the newest 3": lambda: mem.records(actor="ann", field=FIELD, all=True, limit=3),
                "the active ones": lambda: mem.store.records.records_by_field(
                    scope, FIELD, current=True, limit=100
                ),
            }.items():
                with sqlite_steps(mem) as seen:
                    read()
                steps[name] = seen[0]
            return steps

        restate(mem, clock, 20)
        short = work()
        restate(mem, clock, 400, start=20)
        long = work()
        assert long.keys() == short.keys()
        for name in short:  # the same, but for a level more of an index's B-tree (the
            # forks of a lookup are 39 seeks: `remem.store.forks`)
            assert long[name] <= short[name] + 3, (name, short, long)
