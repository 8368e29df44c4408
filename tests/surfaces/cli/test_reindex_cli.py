"""`remem reindex` (issue 36): dry run, a run in batches with progress on stderr, refusal of
a third model while one is pending, and `--cancel`; one JSON document under --json."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from tests.support.cli import ok


def _filled(tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    with Memory.open(db, embedder=HashEmbedder(64)) as mem:
        mem.remember(actor="ann", text="Ann is allergic to peanuts")
        mem.remember(actor="ann", text="Ann plays the cello on Sundays")
        mem.add_event(actor="ann", session="s1", role="user", text="I moved to Lisbon")
        mem.process()
    return db


def test_dry_run_then_reindex_then_nothing_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _filled(tmp_path)
    dry = ok(capsys, db, "reindex", "--embedder", "hash", "--dry-run")
    assert dry["dry_run"] and not dry["switched"] and dry["model"] == "hash-256"
    assert dry["old_models"] == [{"model": "hash-64", "dim": 64}]
    assert dry["counts"]["records"]["todo"] >= 2 and dry["counts"]["events"]["todo"] == 1
    assert ok(capsys, db, "reindex", "--embedder", "hash", "--dry-run") == dry  # unchanged
    done = ok(capsys, db, "reindex", "--embedder", "hash", "--batch", "1")
    assert done["switched"] and done["batches"] == sum(c["todo"] for c in dry["counts"].values())
    again = ok(capsys, db, "reindex", "--embedder", "hash")
    assert not again["switched"] and "nothing to re-embed" in again["message"]


def test_progress_goes_to_stderr_and_a_run_can_stop_and_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from remem.cli.main import main

    db = _filled(tmp_path)
    assert main(["--db", str(db), "reindex", "--embedder", "hash", "--max-batches", "1",
                 "--batch", "1"]) == 0  # fmt: skip
    out = capsys.readouterr()
    assert "re-embedded 1 in 1 batch(es)" in out.out and "not finished" in out.out
    assert "remem: reindex: records 1/" in out.err
    with Memory.open(db, embedder=HashEmbedder()) as mem:  # the new model: by words
        assert any("lexical only" in n for n in mem.recall(actor="ann", query="cello").notes)
    assert ok(capsys, db, "reindex", "--cancel") == {"cancelled": True}
    assert ok(capsys, db, "reindex", "--cancel") == {"cancelled": False}
    assert ok(capsys, db, "reindex", "--embedder", "hash")["switched"]
