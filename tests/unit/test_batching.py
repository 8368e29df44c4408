"""CallBatcher: small embedding calls made at once run as one batch (`remem.batching`).

The run function here is a real one over real numbers (each row's vector is a
function of the row alone), so a caller can tell its own rows from another's.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from remem.batching import MAX_ROWS, SMALL_CALL, CallBatcher

F32 = np.float32


def _vector(row: int) -> list[float]:
    return [float(row), float(row) ** 0.5, -float(row)]


class Forward:
    """A forward pass: row n gives `_vector(n)`; a row of -1 raises ValueError.
    `hold` blocks the passes that hold row 0 until `gate` is set, so the test can
    make calls arrive while a batch runs."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.running = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, rows: list[int]) -> np.ndarray:
        with self.lock:
            self.calls.append(list(rows))
            self.threads.append(threading.current_thread().name)
        if 0 in rows:
            self.running.set()
            assert self.gate.wait(10), "the test never opened the gate"
        if -1 in rows:
            raise ValueError(f"row -1 cannot be embedded (in a pass of {len(rows)})")
        return np.asarray([_vector(r) for r in rows], dtype=F32)


def _same(got: np.ndarray, rows: list[int]) -> bool:
    return bool(np.array_equal(got, np.asarray([_vector(r) for r in rows], dtype=F32)))


def _until(ok: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _start(batcher: CallBatcher[int], rows: list[int], out: dict[int, object]) -> threading.Thread:
    def call() -> None:
        try:
            out[rows[0]] = batcher(rows)
        except Exception as exc:
            out[rows[0]] = exc

    thread = threading.Thread(target=call, name=f"caller-{rows[0]}", daemon=True)
    thread.start()
    return thread


def _blocked(
    batcher: CallBatcher[int], forward: Forward, out: dict[int, object]
) -> threading.Thread:
    """A first call (row 0) whose pass runs and blocks until `forward.gate` opens."""
    first = _start(batcher, [0], out)
    assert forward.running.wait(10)
    return first


def test_a_lone_call_runs_at_once_on_its_own_thread() -> None:
    forward = Forward()
    forward.gate.set()
    batcher = CallBatcher(forward)
    got = batcher([3, 5])
    np.testing.assert_array_equal(got, np.asarray([_vector(3), _vector(5)], dtype=F32))
    assert forward.threads == [threading.current_thread().name]
    assert batcher.batches == 0 and batcher.waiting == 0


def test_calls_that_arrive_during_a_batch_run_as_the_next_batch_each_its_own_rows() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    callers = [_start(batcher, [n, n + 100], out) for n in range(1, 7)]
    _until(lambda: batcher.waiting == 6)
    forward.gate.set()
    for t in [first, *callers]:
        t.join(10)
        assert not t.is_alive()
    # the first pass alone, then the six calls that waited as one pass of 12 rows
    assert forward.calls[0] == [0]
    assert sorted(forward.calls[1]) == sorted(r for n in range(1, 7) for r in (n, n + 100))
    assert len(forward.calls) == 2 and batcher.batches == 1
    for n in range(1, 7):
        np.testing.assert_array_equal(out[n], np.asarray([_vector(n), _vector(n + 100)], F32))
    assert batcher.waiting == 0


def test_the_next_batch_runs_on_a_waiting_callers_thread_not_the_finished_ones() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    second = _start(batcher, [1], out)
    _until(lambda: batcher.waiting == 1)
    forward.gate.set()
    first.join(10)
    second.join(10)
    assert forward.threads == ["caller-0", "caller-1"]


def test_an_error_reaches_only_the_call_whose_rows_cause_it() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    callers = [_start(batcher, rows, out) for rows in ([1], [-1, 2], [3])]
    _until(lambda: batcher.waiting == 3)
    forward.gate.set()
    for t in [first, *callers]:
        t.join(10)
    assert isinstance(out[-1], ValueError) and "row -1" in str(out[-1])
    np.testing.assert_array_equal(out[1], np.asarray([_vector(1)], F32))
    np.testing.assert_array_equal(out[3], np.asarray([_vector(3)], F32))
    # and the batcher is idle again: a lone call runs at once
    assert _same(batcher([4]), [4]) and batcher.waiting == 0


def test_a_failing_lone_call_leaves_the_batcher_idle() -> None:
    forward = Forward()
    forward.gate.set()
    batcher = CallBatcher(forward)
    with pytest.raises(ValueError, match="row -1"):
        batcher([-1])
    assert _same(batcher([2]), [2])


def test_a_large_call_never_waits_behind_a_batch() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    big = list(range(10, 11 + SMALL_CALL))  # more than SMALL_CALL rows
    got = batcher(big)  # would hang here if it waited for row 0's pass
    assert got.shape == (len(big), 3)
    forward.gate.set()
    first.join(10)


def test_a_batch_holds_at_most_max_rows() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    n = MAX_ROWS // SMALL_CALL + 2
    callers = [_start(batcher, [1000 + 10 * i + j for j in range(SMALL_CALL)], out)
               for i in range(n)]  # fmt: skip
    _until(lambda: batcher.waiting == n)
    forward.gate.set()
    for t in [first, *callers]:
        t.join(10)
        assert not t.is_alive()
    assert max(len(c) for c in forward.calls) <= MAX_ROWS
    for i in range(n):
        rows = [1000 + 10 * i + j for j in range(SMALL_CALL)]
        np.testing.assert_array_equal(out[rows[0]], np.asarray([_vector(r) for r in rows], F32))


def test_many_threads_many_calls_all_answered_and_none_stuck() -> None:
    forward = Forward()
    forward.gate.set()
    batcher = CallBatcher(forward)
    wrong: list[int] = []

    def caller(w: int) -> None:
        for i in range(200):
            row = 1 + w * 1000 + i
            if not _same(batcher([row]), [row]):
                wrong.append(row)

    threads = [threading.Thread(target=caller, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads) and not wrong
    assert sum(len(c) for c in forward.calls) == 8 * 200
    assert batcher.waiting == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_batch_runs_finds_the_batcher_idle() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)
    waiter = _start(batcher, [1], out)
    _until(lambda: batcher.waiting == 1)
    pid = os.fork()
    if pid == 0:  # the child: no thread runs row 0's pass here
        signal.alarm(10)  # a batcher waiting for its parent's threads hangs: killed
        forward.gate.set()
        ok = _same(batcher([7]), [7]) and batcher.waiting == 0
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    forward.gate.set()
    first.join(10)
    waiter.join(10)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


class _Interrupted(Exception):
    pass


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_a_caller_interrupted_while_waiting_strands_no_one() -> None:
    forward = Forward()
    batcher = CallBatcher(forward)
    out: dict[int, object] = {}
    first = _blocked(batcher, forward, out)

    def interrupt(signum: int, frame: object) -> None:
        raise _Interrupted

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(_Interrupted):
            batcher([1])  # waits behind row 0's pass, in the main thread: interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert batcher.waiting == 0
    later = _start(batcher, [2], out)
    forward.gate.set()
    first.join(10)
    later.join(10)
    assert not later.is_alive() and _same(out[2], [2])  # type: ignore[arg-type]
    assert _same(batcher([3]), [3])  # idle again, not waiting for the interrupted caller
