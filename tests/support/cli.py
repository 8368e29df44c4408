"""Running the CLI in-process under --json, for the CLI contract tests, and as a child
process under bounds of memory and time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.cli.main import main
from tests.support import SRC


def run(
    capsys: pytest.CaptureFixture[str], db: Path | str, *args: str
) -> tuple[int, dict[str, Any]]:
    """Run `remem --db DB ARGS --json`; return the exit code and its one JSON document."""
    code = main(["--db", str(db), *args, "--json"])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one JSON document, got {out!r}"
    return code, json.loads(lines[0])


def ok(capsys: pytest.CaptureFixture[str], db: Path | str, *args: str) -> dict[str, Any]:
    """Run a command that must succeed; return its JSON."""
    code, data = run(capsys, db, *args)
    assert code == 0, data
    return data


def err(capsys: pytest.CaptureFixture[str], db: Path | str, *args: str) -> dict[str, str]:
    """Run a command that must fail; return its {"code", "message"} error."""
    code, data = run(capsys, db, *args)
    assert code != 0
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message"}
    return dict(data["error"])


@dataclass(frozen=True)
class Bounded:
    """How a `run_bounded` command ended: exit code, output, peak memory and time."""

    code: int
    out: str
    err: str
    max_rss_mb: float
    seconds: float


# `python -m remem` that writes its peak resident size (VmHWM, in kB) to the file
# REMEM_TEST_PEAK_FILE names as it exits
_PEAK_AT_EXIT = """
import atexit, os, runpy

def _peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["REMEM_TEST_PEAK_FILE"], "w") as out:
        out.write(kb)

atexit.register(_peak)
runpy.run_module("remem", run_name="__main__", alter_sys=True)
"""


def run_bounded(
    args: list[str], *, stdin: str | None = None, timeout: float = 60, memory_mb: int = 3000
) -> Bounded:
    """`python -m remem ARGS` in a subprocess whose address space is capped at
    `memory_mb` (RLIMIT_AS) and killed after `timeout` seconds, with its own peak RSS.

    The peak is the child's `VmHWM` as it exits, which counts from its `exec`: the
    `ru_maxrss` of `wait4` also counts the pages the child shared with this process
    between fork and exec, so a test process that had grown to 1 GB made every child
    look 1 GB large. Where the child could not write it (killed), `ru_maxrss` stands in,
    which only errs high. `stdin` names a file to read standard input from."""
    import resource

    def cap() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    peak = Path(tempfile.mkdtemp()) / "peak"
    env = {**os.environ, "PYTHONPATH": str(SRC), "REMEM_TEST_PEAK_FILE": str(peak)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err_file:
        source = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _PEAK_AT_EXIT, *args], stdin=source,
                                stdout=out, stderr=err_file, env=env, preexec_fn=cap)  # fmt: skip
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            if stdin is not None:
                source.close()  # type: ignore[union-attr]
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err_file.seek(0)
        peak_kb = int(peak.read_text()) if peak.exists() else usage.ru_maxrss
        shutil.rmtree(peak.parent, ignore_errors=True)
        return Bounded(code, out.read().decode(errors="replace"),
                       err_file.read().decode(errors="replace"), peak_kb / 1024,
                       seconds)  # fmt: skip
