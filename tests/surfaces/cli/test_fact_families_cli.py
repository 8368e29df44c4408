"""`remem fact get --field allergies` answers with every allergy the actor stated, in
JSON and in the human form (each value naming its field); written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.cli.main import main
from tests.support.cli import ok


def test_fact_get_of_a_family_names_each_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    said = "I'm allergic to shellfish and peanuts."
    ok(capsys, db, "event", "add", "--actor", "noor", "--session", "s1", "--role", "user",
       "--text", said, "--time", "2026-02-01T09:00:00Z")  # fmt: skip
    ok(capsys, db, "process")
    got = ok(capsys, db, "fact", "get", "--actor", "noor", "--field", "allergies")
    fact = got.get("fact", got)
    assert fact["status"] == "found"
    assert {c["field"] for c in fact["candidates"]} == {"allergy:shellfish", "allergy:peanut"}
    assert main(["--db", str(db), "fact", "get", "--actor", "noor", "--field", "allergy"]) == 0
    out = capsys.readouterr().out
    assert "allergy:shellfish: allergic" in out and "allergy:peanut: allergic" in out
