"""The forks of intervals of time: how a lookup as of a past time seeks, in a bounded
number of index probes, the records whose interval (of validity, or of being open)
contains the time asked for.

A time is counted in whole seconds since 0000-01-01 (`seconds`, floored; below `2**BITS`
for every year remem stores, 1 to 9999). An interval [lo, hi] of such seconds is
registered at its fork: the number within it with the most trailing zero bits, the
largest `(hi >> t) << t` that is still `lo` or more (`fork`). Read as a node of a binary
tree over `BITS` bits (a number with t trailing zeros spans the 2**t - 1 numbers on
each side of it), the interval lies within its fork's span; so an interval that contains
a point is registered at one of the point's `BITS` ancestors (`ancestors`), and a lookup
seeks those forks only. At each it reads the intervals registered there: they all
contain that node's time, so they are the records open at one moment, a handful, not a
field's history (docs/decisions/field-history.md).

Seconds are floored, so an interval of times [a, b] holds [seconds(a), seconds(b)] and a
time t in it has seconds(t) in that: the probe finds every record it must, and the
exact comparisons of the statement keep the right ones. The stores compute the forks in
SQL (SQLite schema 14's generated columns, PostgreSQL schema 18's trigger); `fork` here
is the same rule, for the tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

BITS = 39  # 2**39 seconds: about 17,400 years, past 9999-12-31 from 0000-01-01
EPOCH_OFFSET = 62_167_219_200  # seconds from 0000-01-01 to 1970-01-01
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def seconds(t: datetime) -> int:
    """Whole seconds from 0000-01-01 to `t` (an aware time), floored."""
    return (t - _EPOCH) // timedelta(seconds=1) + EPOCH_OFFSET


def fork(lo: int, hi: int) -> int | None:
    """The node [lo, hi] is registered at (None when it is empty: hi < lo)."""
    if hi < lo:
        return None
    for t in range(BITS - 1, -1, -1):
        node = (hi >> t) << t
        if node >= lo:
            return node
    raise AssertionError("unreachable: t = 0 gives hi")


def ancestors(t: datetime) -> list[int]:
    """The `BITS` nodes whose span may hold the time `t`: the forks to seek."""
    p = seconds(t)
    return [((p >> (k + 1)) << (k + 1)) | (1 << k) for k in range(BITS)]
