"""`one_blas_thread`: one BLAS thread while any caller is inside, however several
threads enter and leave. Run in a fresh interpreter: once a process's main thread has
set OpenBLAS's count (an earlier test may have), OpenBLAS 0.3.31 often ignores a count
another thread sets, so the scenario needs a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

SCENARIO = """
import threading
import numpy  # loads OpenBLAS
import threadpoolctl
from remem.blas import one_blas_thread

def threads():
    info = threadpoolctl.threadpool_info()
    return sorted({lib["num_threads"] for lib in info if lib["user_api"] == "blas"})

if threads() != [2] and min(threads() or [1]) < 2:
    print("skip")
    raise SystemExit
a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
seen = {}

def first():
    with one_blas_thread():
        a_in.set()
        b_in.wait(5)
    a_out.set()

def second():
    a_in.wait(5)
    with one_blas_thread():
        b_in.set()
        a_out.wait(5)
        seen["inside, after the first left"] = threads()

workers = [threading.Thread(target=first), threading.Thread(target=second)]
for t in workers:
    t.start()
for t in workers:
    t.join(10)
print(seen["inside, after the first left"])
"""


def test_interleaved_callers_keep_the_limit_until_the_last_leaves() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    if run.stdout.strip() == "skip":
        pytest.skip("no BLAS library on more than one thread is loaded")
    assert run.stdout.strip() == "[1]"


# a scenario's start: OpenBLAS loaded, `threads()`, and "skip" where no BLAS library
# runs on more than one thread (nothing to limit)
ON_TWO = """
import json, tempfile, threading
import numpy  # loads OpenBLAS
import threadpoolctl

def threads():
    info = threadpoolctl.threadpool_info()
    return sorted({lib["num_threads"] for lib in info if lib["user_api"] == "blas"})

before = threads()
if min(before or [1]) < 2:
    print("skip")
    raise SystemExit
"""

RECALL = (
    ON_TWO
    + """
from remem import Memory
from remem.embed import HashEmbedder
seen = []

class Watching(HashEmbedder):
    def embed_query(self, texts):
        seen.append(threads())
        return self.embed(texts)

with tempfile.TemporaryDirectory() as tmp:
    with Memory.open(f"{tmp}/m.db", embedder=Watching()) as mem:
        mem.remember(actor="ann", text="I keep the kayak in the garage")
        seen.clear()
        mem.recall(actor="ann", query="where is the kayak")
        print(json.dumps({"before": before, "during": seen, "after": threads()}))
"""
)


def test_a_recall_runs_on_one_blas_thread_and_gives_the_count_back() -> None:
    """The query is embedded while the recall's word search runs, outside the vector
    search's own limit: the whole recall holds it (`remem.recall.engine.recall`)."""
    run = subprocess.run(
        [sys.executable, "-c", RECALL], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    if run.stdout.strip() == "skip":
        pytest.skip("no BLAS library on more than one thread is loaded")
    got = json.loads(run.stdout)
    assert got["during"] and all(t == [1] for t in got["during"]), got
    assert got["after"] == got["before"]  # given back when the recall ended


KEPT = (
    ON_TWO
    + """
from fastapi.testclient import TestClient
from remem.service.http import create_app
with tempfile.TemporaryDirectory() as tmp:
    made = threads()
    with TestClient(create_app(f"{tmp}/m.db", worker=False, metrics=False)):
        started = threads()
        from remem.blas import one_blas_thread
        def leave():
            with one_blas_thread():
                pass
        t = threading.Thread(target=leave)
        t.start()
        t.join(10)
        print(json.dumps({"before": before, "made": made, "started": started,
                          "after a caller left": threads()}))
"""
)


def test_a_server_keeps_one_blas_thread_from_its_start() -> None:
    """A server's process sets one BLAS thread on its main thread when it starts and
    never gives the count back (`remem.blas.keep_one_blas_thread`): a limit set on a
    worker thread alone may not hold, and OpenBLAS's idle thread spins."""
    run = subprocess.run([sys.executable, "-c", KEPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    if run.stdout.strip() == "skip":
        pytest.skip("no BLAS library on more than one thread is loaded")
    got = json.loads(run.stdout)
    assert got["made"] == got["before"]  # building the app changes nothing
    assert got["started"] == [1]
    assert got["after a caller left"] == [1]
