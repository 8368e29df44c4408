"""Running the CLI in-process under --json, for the CLI contract tests, and stopping a
child process the tests started."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from remem.cli import main


def run(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """Run `remem --db DB ARGS --json`; return the exit code and its one JSON document."""
    code = main(["--db", str(db), *args, "--json"])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one JSON document, got {out!r}"
    return code, json.loads(lines[0])


def ok(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, Any]:
    """Run a command that must succeed; return its JSON."""
    code, data = run(capsys, db, *args)
    assert code == 0, data
    return data


def err(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, str]:
    """Run a command that must fail; return its {"code", "message"} error."""
    code, data = run(capsys, db, *args)
    assert code != 0
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message"}
    return dict(data["error"])


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """End a server the test started: terminate it, and kill it if it has not ended
    within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
