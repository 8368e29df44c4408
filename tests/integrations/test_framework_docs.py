"""The framework pages under docs/frameworks/ run as written: each ```python block is
executed in a fresh directory, and what it prints must be the ```text block that
follows it, when one does (a ```text block before any python block is not output)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import ROOT

PAGES = ["autogen.md", "llamaindex.md"]
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)


def examples(page: str) -> list[tuple[str, str | None]]:
    """Each python block of the page, with the text block right after it (or None)."""
    blocks = BLOCK.findall((ROOT / "docs" / "frameworks" / page).read_text())
    out: list[tuple[str, str | None]] = []
    for i, (kind, body) in enumerate(blocks):
        if kind == "python":
            after = blocks[i + 1] if i + 1 < len(blocks) else None
            out.append((body, after[1] if after and after[0] == "text" else None))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_python_examples_run_and_print_what_they_show(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    found = examples(page)
    assert found, f"docs/frameworks/{page} has no python example"
    for n, (code, shown) in enumerate(found, 1):
        exec(compile(code, f"docs/frameworks/{page} (example {n})", "exec"), {})
        printed = capsys.readouterr().out
        if shown is not None:
            assert printed == shown, f"example {n} of {page}"
