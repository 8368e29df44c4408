"""`remem recall --as-of/--known-at/--valid-at` (issue 21, item 6) through the CLI on
both backends: what the agent believed at one time about another. The HTTP service,
the Python client and the MCP server: tests/surfaces/http/test_service.py and
tests/surfaces/mcp/test_mcp.py."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from remem.cli.main import main
from remem.timeutil import utcnow

QUERY = "Where did she live, or move?"


@pytest.fixture
def target(db: str) -> str:
    """A new database on each backend (the `db` fixture of tests/conftest.py)."""
    return db


def cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> tuple[int, Any]:
    code = main(["--db", db, *args, "--json"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return code, json.loads(lines[0])


def said(capsys: pytest.CaptureFixture[str], db: str, text: str, when: str) -> None:
    """A turn of Ana's dated `when`, extracted at once (written now)."""
    code, _ = cli(capsys, db, "event", "add", "--actor", "ana", "--session", "s1", "--role",
                  "user", "--text", text, "--time", when)  # fmt: skip
    assert code == 0
    assert cli(capsys, db, "process")[0] == 0


def places(packet: dict[str, Any]) -> list[str]:
    return [r["text"].split()[-1] for r in packet["records"]]


def test_recall_as_of_known_at_and_valid_at_on_the_cli(
    capsys: pytest.CaptureFixture[str], target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    said(capsys, target, "I live in Porto.", "2026-01-05T09:00:00Z")
    between = utcnow().isoformat()  # after Porto was written, before Lyon was
    time.sleep(0.02)
    # said on 1 February, reaching remem only now
    said(capsys, target, "I moved to Lyon.", "2026-02-01T10:00:00Z")
    base = ["recall", "--actor", "ana", "--query", QUERY, "--no-events"]

    code, now = cli(capsys, target, *base)
    assert code == 0 and places(now) == ["Lyon"]
    # what the agent believed then about January, and about then
    code, believed = cli(capsys, target, *base, "--known-at", between,
                         "--valid-at", "2026-01-15T00:00:00Z", "--explain")  # fmt: skip
    assert code == 0 and places(believed) == ["Porto"]
    assert believed["explain"]["known_at"] == between
    assert believed["explain"]["valid_at"].startswith("2026-01-15")
    lyon = next(r["id"] for r in now["records"])
    assert {"id": lyon, "reason": "written after known_at"} in believed["explain"]["rejected"]
    code, then = cli(capsys, target, *base, "--as-of", between)
    assert code == 0 and places(then) == ["Porto"]  # Lyon valid then, but not yet known
    # what is known now about mid-February
    code, about = cli(capsys, target, *base, "--valid-at", "2026-02-15T00:00:00Z")
    assert code == 0 and places(about) == ["Lyon"]

    for option, bad in [("--as-of", "soon"), ("--known-at", "\x00"), ("--valid-at", "\ud800"),
                        ("--known-at", "0001-01-01T00:00:00+05:00")]:  # fmt: skip
        code, error = cli(capsys, target, *base, option, bad)
        assert code == 1 and error["error"]["code"] == "invalid_input", error
        assert option.lstrip("-").replace("-", "_") in error["error"]["message"]
