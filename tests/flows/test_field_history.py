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

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import Clock

FIELD = "preference:coffee"


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
