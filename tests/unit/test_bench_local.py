"""How `remem bench --http` sets the library beside the service (`eval.bench.local`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from remem.eval.bench import local


def test_both_sides_take_turns_on_the_same_queries() -> None:
    turns = local.plan(120, block=50)
    sides = [side for side, _ in turns]
    # ABBA: neither side is always the one measured first after a pause
    assert sides == ["local", "http", "http", "local", "local", "http"]
    for side in ("local", "http"):
        timed = [i for s, part in turns if s == side for i in part]
        assert timed == list(range(120)), side
    for n in range(0, len(turns), 2):
        assert turns[n][1] == turns[n + 1][1]


def test_no_text_is_timed_twice_nor_warmed_up_on() -> None:
    """The embedders keep recent query vectors: a text warmed up on, or timed in an
    earlier run of the same server, would be a cache hit and flatter that run."""
    warm = {local.warm_query(i) for i in range(local.WARM)}
    runs = [{local.query(i, run) for i in range(400)} for run in range(4)]
    assert all(len(texts) == 400 for texts in runs)
    assert len(warm) == local.WARM
    seen = set(warm)
    for texts in runs:
        assert not texts & seen
        seen |= texts


def test_the_cpu_of_a_process_tree_is_read() -> None:
    spent = local.tree_cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert local.tree_cpu_seconds(2**22 + 7) is None  # above the kernel's pid_max


def test_a_child_that_exits_keeps_its_cpu_in_the_tree() -> None:
    # a server worker replaced by its supervisor must not take its time with it: the
    # figures of `remem bench --http` would go down, below zero (seen under load)
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    child = subprocess.Popen([sys.executable, "-c", burn])
    child.wait()  # waited for: its time is now this process's children's
    spent = local.tree_cpu_seconds(os.getpid())
    assert spent is not None and spent >= time.process_time() + 0.25  # ticks of 10 ms
