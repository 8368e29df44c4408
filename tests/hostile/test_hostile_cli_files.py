"""Every CLI input read from a file or stdin is read within a bound, then refused.

`remem docs add /dev/zero` reached 9.9 GB in 30 s; `event import`, `records import`
and `checkpoint save --state-file` on /dev/zero 6.8-9.6 GB in 15 s; a 1 GB file was
read whole before the character check (issue 33, item 10). Each case runs the real
CLI in a subprocess capped at 3 GB of address space and 60 s, and asserts that it
refused in a few seconds with a few hundred MB at most, naming the limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Bounded, run_bounded

ZERO = "/dev/zero"
MB = 1024 * 1024


def _refused(got: Bounded, limit: int, what: str) -> str:
    assert got.code != 0, got
    error = json.loads(got.out.strip().splitlines()[-1])["error"]
    message = str(error["message"])
    assert error["code"] in ("invalid_input", "config_error"), error
    assert f"over {limit} bytes, the limit for {what}" in message, message
    assert got.max_rss_mb < 250 + 2 * limit / MB, got.max_rss_mb
    assert got.seconds < 30, got.seconds
    return message


def _sparse(tmp_path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no room on disk (zeros, or text with `\\n`)."""
    path = tmp_path / "big.jsonl"
    with path.open("wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("source", [ZERO, "sparse"])
def test_docs_add_reads_no_more_than_a_document_file(tmp_path: Path, source: str) -> None:
    path = ZERO if source == ZERO else str(_sparse(tmp_path, 1024 * MB))
    got = run_bounded(["--db", str(tmp_path / "m.db"), "docs", "add", path, "--json"])
    message = _refused(got, 32 * MB, "a document file")
    assert "split it" in message


@pytest.mark.parametrize("command", [["event", "import"], ["records", "import"]])
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_imports_read_no_more_than_an_import_file(
    tmp_path: Path, command: list[str], source: str
) -> None:
    arg, stdin = (ZERO, None) if source == "file" else ("-", ZERO)
    got = run_bounded(["--db", str(tmp_path / "m.db"), *command, arg, "--json"], stdin=stdin)
    message = _refused(got, 64 * MB, "an import file")
    assert "split -l" in message


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_checkpoint_state_file_reads_no_more_than_a_state(tmp_path: Path, source: str) -> None:
    arg, stdin = (ZERO, None) if source == "file" else ("-", ZERO)
    got = run_bounded(["--db", str(tmp_path / "m.db"), "checkpoint", "save", "--actor", "a",
                       "--workflow", "w", "--state-file", arg, "--json"], stdin=stdin)  # fmt: skip
    message = _refused(got, 1024 * 1024, "a checkpoint's --state-file")
    assert "at most 262144 bytes of JSON" in message


def test_config_and_prompt_files_read_no_more_than_a_config(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    got = run_bounded(["--db", db, "--config", ZERO, "recall", "--actor", "a", "--query", "q",
                       "--json"])  # fmt: skip
    _refused(got, MB, "a configuration or prompt file")
    config = tmp_path / "remem.toml"
    config.write_text(
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n\n'
        '[strategies.semantic]\nprompt_file = "/dev/zero"\n'
    )
    got = run_bounded(["--db", db, "--config", str(config), "recall", "--actor", "a",
                       "--query", "q", "--json"])  # fmt: skip
    assert "strategies.semantic.prompt_file" in _refused(got, MB, "a configuration or prompt file")


@pytest.mark.parametrize("command", [["eval", "locomo"], ["eval", "prefeval"]])
def test_evaluation_sets_are_read_within_a_bound(tmp_path: Path, command: list[str]) -> None:
    got = run_bounded(["--db", str(tmp_path / "m.db"), *command, ZERO, "--json"])
    _refused(got, 256 * MB, "an evaluation set")


def test_a_file_within_the_bound_still_imports(tmp_path: Path) -> None:
    lines = tmp_path / "events.jsonl"
    lines.write_text(json.dumps({"actor": "a", "session": "s", "role": "user", "text": "hi",
                                 "id": "e1"}) + "\n")  # fmt: skip
    got = run_bounded(["--db", str(tmp_path / "m.db"), "event", "import", str(lines), "--json"])
    assert got.code == 0 and json.loads(got.out)["imported"] == 1, got
