"""docs/metadata.md stays true to the code: its Python and its `remem` lines run as
written (until the docs site runs every page's blocks)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from remem.cli.main import main
from tests.support import ROOT

PAGE = (ROOT / "docs" / "metadata.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE, re.S)


def test_the_metadata_pages_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    (python,) = blocks("python")
    exec(compile(python, "docs/metadata.md", "exec"), {})
    out = capsys.readouterr().out
    assert "'topic': 'travel'" in out and "Alice cooks vegetarian curry" in out
    (shell,) = blocks("bash")
    lines = [ln for ln in shell.splitlines() if ln.startswith("remem ")]
    assert len(lines) == 3
    for line in lines:
        assert main(shlex.split(line)[1:]) == 0, line
    assert "Alice prefers aisle seats" in capsys.readouterr().out
