"""CPU per write and per lookup of a fielded fact against the length of its history.

`python -m tests.support.field_bench [sqlite|postgres] [N ...]` restates
`preference:coffee` N times (each a new value, a minute apart, through
`Memory.remember`), then times `WRITES` more writes of a new value, `fact` now and
`fact` as of an hour before, each by `time.process_time` (this process's CPU: on
PostgreSQL the server's own work is not counted), and prints the median of each in
milliseconds. `python -m tests.support.field_bench widths STEPS SEED` writes a mixed
history of STEPS candidates (`tests.support.field_history.build`, on SQLite) and
prints how many records are active at the end and the most held at one (known at,
valid at) of 200 sampled times. The figures of docs/decisions/field-history.md come
from it.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.model import Status
from remem.policy.validity import held
from tests.support.clock import Clock, Ticking
from tests.support.field_history import brute_closings, build, table

FIELD = "preference:coffee"
WRITES = 30  # timed writes (and lookups) at each length


def _cpu(step: Callable[[], object]) -> float:
    t = time.process_time()
    step()
    return (time.process_time() - t) * 1000


def measure(target: str, n: int) -> dict[str, float]:
    """Median CPU milliseconds of a write, a lookup now and one as of an hour before,
    with `n` values of the field behind them (on a clock that ticks as a real one)."""
    clock = Ticking()
    with Memory.open(target, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        for i in range(n):
            clock.advance(minutes=1)
            mem.remember(actor="ann", text=f"coffee style {i}", field=FIELD, value=f"s{i}")
        hour_ago = clock() - timedelta(hours=1)
        writes, now, past = [], [], []
        for i in range(WRITES):
            clock.advance(minutes=1)
            writes.append(_cpu(lambda i=i: mem.remember(
                actor="ann", text=f"coffee new {i}", field=FIELD, value=f"n{i}")))  # fmt: skip
            now.append(_cpu(lambda: mem.fact(actor="ann", field=FIELD)))
            past.append(_cpu(lambda: mem.fact(actor="ann", field=FIELD, as_of=hour_ago)))
    return {
        "write": statistics.median(writes),
        "fact now": statistics.median(now),
        "fact as of": statistics.median(past),
    }


def widths(steps: int, seed: int) -> str:
    """How wide a field's current and held sets grow over a mixed history."""
    clock = Clock()
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "widths.db")
        with Memory.open(path, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
            times = build(mem, clock, steps, seed)
            records = table(mem)
            widest = 0
            for known in random.Random(1).sample(times, min(200, len(times))):
                closed = brute_closings(mem, records, known)
                for valid in (known, times[-1], known - timedelta(minutes=30)):
                    widest = max(widest, sum(held(r, known, valid, closed) for r in records))
    active = sum(r.status is Status.ACTIVE for r in records)
    return f"steps {steps} seed {seed}: {len(records)} records, {active} active, most held {widest}"


def main(argv: list[str]) -> None:
    if argv[:1] == ["widths"]:
        print(widths(int(argv[1]), int(argv[2])))
        return
    backend = argv[0] if argv else "sqlite"
    lengths = [int(a) for a in argv[1:]] or [10, 1000, 3000]
    for n in lengths:
        if backend == "postgres":
            from tests.support import pg

            admin = pg.acquire()
            try:
                with pg.fresh_database(admin) as dsn:
                    got = measure(pg.as_url(dsn), n)
            finally:
                pg.release()
        else:
            with tempfile.TemporaryDirectory() as d:
                got = measure(str(Path(d) / "bench.db"), n)
        shown = "  ".join(f"{k} {v:.2f} ms" for k, v in got.items())
        print(f"{backend} {n:>5} restatements: {shown}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
