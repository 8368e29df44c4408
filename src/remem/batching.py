"""Small calls made at the same time, run as one batch (dynamic batching).

Two passes of a recall cost about as much for several rows as for one, since most of
each is reading a large array once: a forward pass of all-MiniLM-L6-v2 on ONNX
Runtime (a query of 7 tokens about 2.4 ms of CPU alone, about 1.3 ms each in a batch
of 4 to 8; docs/service-speed.md, "Dynamic batching"), and the int8 coarse pass of a
large scope's vector search (`remem.store.sqlite.vectors.coarse`: 1.25 ms for one
query over 100,000 rows, 1.3-1.4 ms for 4 or 8). A server answers several recalls at
once, so `CallBatcher` merges the small calls (at most `SMALL_CALL` rows each) that
arrive while a batch runs.

The rule, as Text Embeddings Inference batches: a call that finds the batcher idle runs
at once on its own thread (no added wait at concurrency 1); calls that arrive while a
batch runs wait, and when it ends the first of them runs the next batch, made of the
waiting calls in their order up to `MAX_ROWS` rows, on its own thread, while the
thread that ran the last one returns. There is no thread of the batcher's own, so
nothing to stop at shutdown. Each caller gets the rows of its own texts. When a merged
batch raises, each of its calls is run again alone, so an error reaches only the calls
that cause it. A call of more than `SMALL_CALL` rows (a write of many records, a
backfill) is not merged: it runs at once beside the batches, as without the batcher, so
a query never waits behind it.

A process forked while a batch ran (`remem serve --workers N`) has none of its parent's
threads: its batchers start idle and empty (`remem.forksafe`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import numpy.typing as npt

from remem.forksafe import ForkSafeLock, after_fork_in_child

__all__ = ["MAX_ROWS", "SMALL_CALL", "CallBatcher"]

T = TypeVar("T")
Out = npt.NDArray[Any]  # one row of output per row of input

SMALL_CALL = 4
"""Calls of at most this many rows are merged (a recall embeds one or two texts)."""

MAX_ROWS = 32
"""The rows of one merged batch at most: a call waits for at most one batch before its own."""

_BATCHERS: weakref.WeakSet[CallBatcher[Any]] = weakref.WeakSet()


class _Call(Generic[T]):
    """One caller's rows, and what became of them."""

    __slots__ = ("batch", "done", "error", "result", "rows")

    def __init__(self, rows: Sequence[T]) -> None:
        self.rows = rows
        self.done = threading.Event()
        self.batch: list[_Call[T]] | None = None  # set when this caller is to run a batch
        self.result: Out | None = None
        self.error: BaseException | None = None


class CallBatcher(Generic[T]):
    """`run(rows)` for many threads at once, the small calls merged (module docstring).

    `run` takes a list of rows (token id arrays, query vectors) and returns an array of
    one row per row, in order; it must be safe to call from any thread, and a merged
    call must give each row what it would give the row alone (up to rounding)."""

    def __init__(self, run: Callable[[list[T]], Out]) -> None:
        self._run = run
        self._lock = ForkSafeLock()
        self._busy = False
        self._waiting: list[_Call[T]] = []
        self.batches = 0  # merged batches run (of two calls or more), for the figures
        _BATCHERS.add(self)

    @property
    def waiting(self) -> int:
        """Calls waiting for a batch to end now."""
        return len(self._waiting)

    def __call__(self, rows: Sequence[T]) -> Out:
        """The rows `run` gives `rows`, merged with other threads' small calls (each
        caller's rows are its own copy)."""
        if len(rows) > SMALL_CALL or not rows:
            return self._run(list(rows))
        with self._lock:
            call = _Call(rows) if self._busy else None
            if call is not None:
                self._waiting.append(call)
            else:
                self._busy = True
        if call is None:  # idle: run at once, alone, then hand on what came meanwhile
            try:
                return self._run(list(rows))
            finally:
                self._hand_on([])
        try:
            call.done.wait()
        except BaseException:  # an interrupt while waiting: leave nobody stranded
            self._abandon(call)
            raise
        if call.batch is None:  # another caller ran it
            return _outcome(call)
        self._lead(call.batch)
        return _outcome(call)

    def _abandon(self, call: _Call[T]) -> None:
        """`call`'s caller stops waiting (an exception in its thread, such as Ctrl-C):
        it leaves the queue; if the batch it was to run was handed to it, it runs it
        first, so that the calls in it and after it are answered."""
        with self._lock:
            if call in self._waiting:
                self._waiting.remove(call)
                return
            batch = call.batch
        if batch is not None:
            self._lead(batch)

    def _lead(self, batch: list[_Call[T]]) -> None:
        """Run `batch` on this thread, then hand the next one to its first caller."""
        try:
            self._run_batch(batch)
        except BaseException as exc:  # an interrupt: every call of the batch ends with it
            for c in batch:
                if c.result is None and c.error is None:
                    c.error = exc
        finally:
            self._hand_on(batch[1:])

    def _hand_on(self, others: list[_Call[T]]) -> None:
        """After a batch: wake the `others` it answered, and hand the next batch to its
        first caller (or go idle)."""
        with self._lock:
            taken = _take(self._waiting)
            if taken:
                self._waiting = self._waiting[len(taken) :]
                taken[0].batch = taken
            else:
                self._busy = False
        for c in others:
            c.done.set()
        if taken:
            taken[0].done.set()

    def _run_batch(self, batch: list[_Call[T]]) -> None:
        if len(batch) > 1:
            self.batches += 1
            rows = [row for c in batch for row in c.rows]
            try:
                out = self._run(rows)
            except Exception:  # whose rows made it fail: each call alone, below
                pass
            else:
                start = 0
                for c in batch:
                    c.result = out[start : start + len(c.rows)].copy()
                    start += len(c.rows)
                return
        for c in batch:
            try:
                c.result = self._run(list(c.rows))
            except Exception as exc:
                c.error = exc

    def _reset(self) -> None:
        """In a forked child: no batch runs and no thread waits."""
        self._busy = False
        self._waiting = []


def _take(waiting: list[_Call[T]]) -> list[_Call[T]]:
    """The next batch: waiting calls in order while they fit in `MAX_ROWS` rows."""
    taken: list[_Call[T]] = []
    rows = 0
    for c in waiting:
        if taken and rows + len(c.rows) > MAX_ROWS:
            break
        taken.append(c)
        rows += len(c.rows)
    return taken


def _outcome(call: _Call[T]) -> Out:
    if call.error is not None:
        raise call.error
    assert call.result is not None
    return call.result


def _reset_all() -> None:
    for batcher in list(_BATCHERS):
        batcher._reset()


after_fork_in_child(_reset_all)
