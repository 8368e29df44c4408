"""JSON lines the CLI reads: a number past Python's 4,300 digits, and line separators
inside strings.

Found by a fuzz run (2026-12-07): `records import`, `event import` and `checkpoint
save` ended in a ValueError traceback on a number of 5,000 digits; and a line whose
text held U+2028, U+2029 or U+0085 raw (valid JSON, as `remem export` writes it) was
cut there by `str.splitlines` and refused as unterminated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import err, ok

HUGE = "9" * 5000


@pytest.mark.parametrize("command", [["records", "import"], ["event", "import"]])
def test_a_number_too_long_to_read_is_refused_naming_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    row = '{"actor": "dave", "text": "Dave keeps bees", "metadata": {"x": ' + HUGE + "}}"
    path = tmp_path / "rows.jsonl"
    path.write_text(row + "\n", encoding="utf-8")
    refused = err(capsys, tmp_path / "m.db", *command, str(path))
    assert refused["code"] == "invalid_input" and "line 1" in refused["message"], refused
    assert "4,300 digits" in refused["message"]


def test_a_state_with_a_number_too_long_to_read_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    who = ["--actor", "dave", "--workflow", "w1"]
    refused = err(capsys, tmp_path / "m.db", "checkpoint", "save", *who, "--state",
                  '{"x": ' + HUGE + "}")  # fmt: skip
    assert refused["code"] == "invalid_input" and "--state" in refused["message"], refused


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c"])
def test_a_line_separator_inside_a_string_keeps_the_line_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, separator: str
) -> None:
    db = tmp_path / "m.db"
    text = f"Dave drinks tea{separator}and coffee"
    rows = [{"op": "create", "request_id": "r1", "actor": "dave", "text": text}]
    path = tmp_path / "rows.jsonl"
    with path.open("w", encoding="utf-8", newline="") as f:  # as written, \r\n ends included
        f.write("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n")
    done = ok(capsys, db, "records", "import", str(path))
    assert done["succeeded"] == 1, done
    (record,) = ok(capsys, db, "records", "list", "--actor", "dave")["records"]
    assert record["text"] == "Dave drinks tea and coffee"  # whole; stored text's spaces are one
