"""A process that forks after opening a `Memory` leaves its child nothing to import for a
recall's catch-up (`remem.memory.catch_up`).

A thread importing the pipeline while another thread forks leaves that module's import
lock held in the child, whose first catch-up would then wait for ever. The modules a
catch-up needs are imported before the fork instead (`remem.forksafe.import_before_fork`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FORKED = """
import os, sys
from remem import Memory
from remem.embed import HashEmbedder

mem = Memory.open(sys.argv[1], embedder=HashEmbedder(), catch_up=int(sys.argv[2]))
pid = os.fork()
if pid == 0:  # the child: the modules a catch-up imports, not yet imported
    lazy = [m for m in ("remem.pipeline.factory", "remem.pipeline.worker") if m not in sys.modules]
    os._exit(len(lazy))
_, status = os.waitpid(pid, 0)
mem.close()
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _forked(tmp_path: Path, catch_up: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(tmp_path / "m.db"), str(catch_up)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1, 2), done.stderr
    return done.returncode


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_has_what_a_catch_up_imports(tmp_path: Path) -> None:
    assert _forked(tmp_path, catch_up=64) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_memory_that_never_catches_up_imports_nothing_for_it(tmp_path: Path) -> None:
    assert _forked(tmp_path, catch_up=0) == 2  # the service's Memory: a worker drains
