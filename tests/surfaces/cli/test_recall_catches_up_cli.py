"""`remem recall` on an embedded database runs the actor's pending jobs first
(`remem.memory.catch_up`), and `--explain` and the notes say what is still pending."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remem.cli.main import main
from remem.memory.catch_up import CATCH_UP_JOBS
from tests.support.cli import ok


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")  # lexical: the jobs matter here


def _add(capsys: pytest.CaptureFixture[str], db: Path, text: str) -> None:
    ok(capsys, db, "event", "add", "--actor", "ola", "--session", "s1", "--role", "user",
       "--text", text)  # fmt: skip


def test_recall_without_process_hands_back_the_records(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    _add(capsys, db, "I'm vegetarian, so please no meat.")
    packet = ok(capsys, db, "recall", "--actor", "ola", "--query", "vegetarian", "--explain")
    kinds = [r["kind"] for r in packet["records"]]
    assert kinds and kinds[0] != "event", packet["records"]
    assert packet["explain"]["pending"] == {"ran": 1, "left": 0}
    assert ok(capsys, db, "jobs", "list")["jobs"][0]["status"] == "done"


def test_explain_and_notes_say_what_is_still_pending(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    for i in range(CATCH_UP_JOBS + 2):
        _add(capsys, db, f"I visited museum number {i} in Lisbon.")
    code = main(["--db", str(db), "recall", "--actor", "ola", "--query", "museums", "--explain"])
    out, errs = capsys.readouterr()
    assert code == 0
    # CATCH_UP_JOBS ran, or fewer when CATCH_UP_SECONDS ran out first (a slow machine)
    left = int(re.search(r'"left": (\d+)', out).group(1))  # type: ignore[union-attr]
    ran = int(re.search(r'"ran": (\d+)', out).group(1))  # type: ignore[union-attr]
    assert 0 < ran <= CATCH_UP_JOBS and ran + left == CATCH_UP_JOBS + 2
    assert f"note: {left} extraction job(s) of actor 'ola' still pending" in errs
