"""The in-process side of `remem bench --http`: `Memory.recall` in a fresh process.

`run_http_compare` times the library and the service on the same store and the same
query texts, under the same conditions, so that their ratio measures HTTP alone:

- the in-process recalls run in a child process of their own (`LocalRecall`), which
  opens the store as `remem serve` does: not in the process that just built the
  records, whose heap, page cache and garbage collector a server never shares;
- both sides are warmed up alike, with `WARM` recalls of texts that are never timed;
- at concurrency 1 the two sides take turns, `block` queries each
  (`plan`): a change in the machine's load meets both alike;
- no query text is timed twice in one process (the embedders keep the last 256
  single texts, `embed.minilm.embedder.QUERY_CACHE`): each HTTP run after the first
  gets texts of its own (`queries`).

Each side reports wall time per recall and the CPU per recall of the process that
recalled (in process: the child's user and system time, all its threads; over HTTP:
the server's processes, read from /proc), and on PostgreSQL the CPU its own server
processes spent meanwhile (`tree_cpu_seconds` of the postmaster the bench started).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from remem.eval.bench.synthetic import QUERIES

WARM = 24
"""Recalls each side makes, of texts never timed, before any is timed."""

BLOCK = 50
"""Recalls per turn when the in-process side and HTTP at concurrency 1 alternate."""


def query(i: int, run: int = 0) -> str:
    """The `i`th timed query text of HTTP run `run` (run 0: the one at concurrency 1, the
    same texts the in-process side times); texts differ between runs."""
    base = QUERIES[i % len(QUERIES)]
    if run == 0:
        return base + ("" if i < len(QUERIES) else f" {i}")
    return f"{base} {run}-{i}"


def warm_query(i: int) -> str:
    """The `i`th warm-up text: never one of `query`'s."""
    return f"warm up {QUERIES[i % len(QUERIES)]} #{i}"


def plan(requests: int, block: int = BLOCK) -> list[tuple[str, list[int]]]:
    """The turns of the concurrency 1 comparison: ("local" | "http", query indexes),
    alternating and starting with the in-process side in the first pair, HTTP in the
    next (ABBA), so that neither side is always the one measured first."""
    turns: list[tuple[str, list[int]]] = []
    for n, start in enumerate(range(0, requests, block)):
        part = list(range(start, min(start + block, requests)))
        first, second = ("local", "http") if n % 2 == 0 else ("http", "local")
        turns += [(first, part), (second, part)]
    return turns


def tree_cpu_seconds(root: int) -> float | None:
    """The CPU time (user and system) process `root` and its descendants have spent so
    far, read from /proc (None where there is none). Each process's count holds the
    children it has waited for, so a process that exits (a server worker replaced by
    its supervisor) takes none of the tree's time with it."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(entry)] = int(fields[1])
                ticks[int(entry)] = sum(int(t) for t in fields[11:15])  # utime stime cutime cstime
    if root not in ticks:
        return None
    tree, i = [root], 0
    while i < len(tree):
        tree += [pid for pid, ppid in parent.items() if ppid == tree[i]]
        i += 1
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


class LocalRecall:
    """`Memory.recall` on `target` in one child process (spawned: nothing of this
    process's heap or threads), as `synthetic._recall` calls it; stopped on exit."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalRecall:
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_open,
            initargs=(self.target,),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.submit(_close).result()
            self._pool.shutdown()
            self._pool = None

    def run(self, texts: list[str]) -> dict[str, Any]:
        """Recall each of `texts` in turn: the latencies in ms and the child's CPU seconds."""
        assert self._pool is not None, "LocalRecall is used inside `with`"
        ms, cpu = self._pool.submit(_recall_all, texts).result()
        return {"ms": ms, "cpu_s": cpu}


_MEM: Any = None


def _open(target: str) -> None:
    from remem.memory.memory import Memory

    global _MEM
    _MEM = Memory.open(target)


def _close() -> None:
    global _MEM
    if _MEM is not None:
        _MEM.close()
        _MEM = None


def _recall_all(texts: list[str]) -> tuple[list[float], float]:
    ms: list[float] = []
    cpu0 = time.process_time()
    for text in texts:
        t0 = time.perf_counter()
        _MEM.recall(actor="bench-main", query=text, k=10, budget=500)
        ms.append((time.perf_counter() - t0) * 1000)
    return ms, time.process_time() - cpu0
