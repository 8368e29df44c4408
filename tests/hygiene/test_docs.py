"""README and --help stay true to the code: every command documented, examples run."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest

from remem.cli.main import cli, main
from tests.support import ROOT

README = (ROOT / "README.md").read_text()


def command_paths(group: click.Group, prefix: str = "remem") -> list[str]:
    out = []
    for name, cmd in group.commands.items():
        path = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            out.extend(command_paths(cmd, path))
        else:
            out.append(path)
    return out


@pytest.mark.parametrize("path", command_paths(cli))
def test_every_command_is_documented_in_readme(path: str) -> None:
    assert f"`{path}" in README, f"{path} is missing from README's command table"


@pytest.mark.parametrize("path", command_paths(cli))
def test_every_command_has_help(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path.split()[1:], "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage:" in out and len(out.splitlines()) > 3


def test_readme_cli_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    lines = [
        ln.strip() for ln in README.splitlines() if ln.strip().startswith("remem --db demo.db")
    ]
    assert len(lines) >= 5
    for line in lines:
        args = shlex.split(line)[1:]
        code = main(args)
        out = capsys.readouterr().out
        assert code == 0, f"{line!r} failed: {out}"
        if "--json" in args:
            json.loads(out)
    assert (tmp_path / "demo.db").exists()


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    sync, asynchronous, documents = _python_blocks(README.replace(_frameworks(), ""))
    exec(compile(sync, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "passport" in out.lower() or "aisle" in out.lower()
    exec(compile(asynchronous, "README.md", "exec"), {})
    assert "window" in capsys.readouterr().out.lower()
    exec(compile(documents, "README.md", "exec"), {})
    assert "Refunds take 5 working days." in capsys.readouterr().out


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _frameworks() -> str:
    """README's section on the framework adapters (remem.integrations)."""
    return README.split("## Inside agent frameworks", 1)[1].split("\n## ", 1)[0]


def test_readme_framework_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    langgraph, checkpointer, openai_agents, google_adk, strands = _python_blocks(_frameworks())
    exec(compile(langgraph, "README.md", "exec"), {})
    assert capsys.readouterr().out == "Carol prefers aisle seats\n"
    exec(compile(checkpointer, "README.md", "exec"), {})
    assert capsys.readouterr().out == "{'approved': 'yes'}\n"
    exec(compile(openai_agents, "README.md", "exec"), {})
    assert capsys.readouterr().out == "[{'role': 'user', 'content': 'I prefer window seats'}]\n"
    exec(compile(google_adk, "README.md", "exec"), {})
    assert capsys.readouterr().out == "[('preference', 'Prefers vegetarian meals')]\n"
    exec(compile(strands, "README.md", "exec"), {})
    assert capsys.readouterr().out == "['Frank is allergic to peanuts']\n"


def test_quick_start_has_exactly_the_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [ln.strip() for ln in quick.splitlines() if ln.startswith("    ")]
    assert commands == [
        "pip install -e '.[embed]' && remem demo",
        "pip install -e '.[dev]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[dev]'" in ci and "\npython -m pytest\n" in ci
