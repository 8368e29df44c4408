"""README and the docs site stay true to the code: every code block runs, every command,
route, tool, setting and variable is documented, and the site builds with `--strict`.

Code blocks by their fence's language:
- `python`: run, in order, one page at a time in a temporary folder with one namespace
  (so a page's steps build on each other), lexical recall (`REMEM_MINILM_DIR` points
  nowhere, as no model download may happen). A ```` ```text title="output" ```` block
  right after it is what the block prints: each of its lines starts a printed line,
  in order (ids, dates and scores may follow).
- `sh` (or `bash`, `shell`): each line is run: `remem ...` through the CLI (exit 0,
  and one JSON document when it says `--json`), `pip install -e '.[extras]'` checked
  against pyproject's extras. Anything else belongs in a `console` block.
- `toml`: parsed; the keys of a memory configuration must exist in its schema.
- `json`: parsed.
- `console`, `text`, `sql`, `js`, `ts`, `yaml`, `dockerfile`, `ini`: shown, not run
  (servers, other machines, output); a `remem ...` line in a `console` block must parse.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest
from pydantic import BaseModel

from remem.cli.kit import Ctx
from remem.cli.main import cli, main
from remem.config.file import ConfigFile
from tests.support import ROOT, SRC, docgen

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
SHELL = {"sh", "bash", "shell"}  # run line by line
SHOWN = {"console", "text", "sql", "js", "ts", "yaml", "dockerfile", "ini"}  # not run
LANGUAGES = {"python", "toml", "json", *SHELL, *SHOWN}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
README_MAX_BYTES = 12 * 1024
# pages whose python runs in a framework's own environment (tests/support/venvs.py), by
# the test named, not in this process
OWN_ENVIRONMENT = {DOCS / "frameworks" / "crewai.md": "tests/integrations/test_crewai.py"}
# "$500" in double quotes is "00" to a shell ($5 is empty), though shlex keeps it
SHELL_EXPANDS = re.compile(r'"[^"]*\$[\w{(][^"]*"')


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def blocks(page: Path) -> list[tuple[str, str, str]]:
    """The fenced blocks of a page as (language, the rest of the info string, code)."""
    out = []
    for info, code in FENCE.findall(page.read_text()):
        language, _, rest = info.strip().partition(" ")
        out.append((language, rest.strip(), code))
    return out


def _pages_with(language: str) -> list[Path]:
    return [p for p in PAGES if any(lang == language for lang, _, _ in blocks(p))]


# --- commands -------------------------------------------------------------------------


@pytest.mark.parametrize("path", [p for p, _ in docgen.command_paths(cli)])
def test_every_command_is_in_the_cli_reference(path: str) -> None:
    page = (DOCS / "reference" / "cli.md").read_text()
    assert f"\n## {path}\n" in page, f"{path} is missing from docs/reference/cli.md"


@pytest.mark.parametrize("path", [p for p, _ in docgen.command_paths(cli)])
def test_every_command_has_help(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path.split()[1:], "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage:" in out and len(out.splitlines()) > 3


@pytest.mark.parametrize("name", sorted(docgen.PAGES))
def test_generated_reference_is_current(name: str) -> None:
    committed = (docgen.REFERENCE / name).read_text()
    assert committed == docgen.PAGES[name](), (
        f"docs/reference/{name} is out of date: run `{docgen.REGENERATE}`"
    )


# --- code blocks ----------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_block_names_a_known_language(page: Path) -> None:
    for language, _, code in blocks(page):
        assert language in LANGUAGES, (
            f"{_name(page)}: a block tagged {language!r} (use one of {sorted(LANGUAGES)}):\n"
            f"{code[:200]}"
        )


@pytest.mark.parametrize(
    "page", [p for p in _pages_with("python") if p not in OWN_ENVIRONMENT], ids=_name
)
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    found = blocks(page)
    for i, (language, _, code) in enumerate(found):
        if language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{_name(page)} block {i + 1}", "exec"), namespace)
        following = found[i + 1] if i + 1 < len(found) else None
        if following is not None and following[:2] == ("text", 'title="output"'):
            _assert_printed(following[2], printed.getvalue(), f"{_name(page)} block {i + 1}")


@pytest.mark.parametrize("page", sorted(OWN_ENVIRONMENT), ids=_name)
def test_a_page_left_to_its_own_environment_is_run_by_its_test(page: Path) -> None:
    test = ROOT / OWN_ENVIRONMENT[page]
    assert f'"{page.name}"' in test.read_text(), f"{test} does not run {_name(page)}"


def _assert_printed(expected: str, printed: str, where: str) -> None:
    """Each expected line starts a printed line, in order."""
    lines = iter(printed.splitlines())
    for want in expected.splitlines():
        if not any(line.startswith(want) for line in lines):
            pytest.fail(f"{where}: {want!r} was not printed (in order); it printed:\n{printed}")


def test_python_example_output_is_checked() -> None:
    """A guard on the guard: a wrong output line fails."""
    with pytest.raises(pytest.fail.Exception):
        _assert_printed("a\nc", "a\nb\n", "here")
    _assert_printed("a\nc 1", "a\nb\nc 1.0\n", "here")


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(b[0] in SHELL for b in blocks(p))], ids=_name
)
def test_shell_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for language, _, code in blocks(page):
        if language not in SHELL:
            continue
        for line in filter(None, (ln.strip() for ln in code.splitlines())):
            assert not SHELL_EXPANDS.search(line), (
                f"{_name(page)}: {line!r}: a shell expands $ inside double quotes; use single"
            )
            args = shlex.split(line)
            if args[:3] == ["pip", "install", "-e"]:
                wanted = re.fullmatch(r"\.(?:\[([a-z0-9,-]+)\])?", args[3])
                assert wanted, f"{_name(page)}: {line!r} installs something else than remem"
                for extra in filter(None, (wanted.group(1) or "").split(",")):
                    assert extra in extras, f"{_name(page)}: no extra {extra!r} in pyproject"
                continue
            assert args[0] == "remem", f"{_name(page)}: {line!r} is not a remem command"
            code_ = main(args[1:])
            out = capsys.readouterr().out
            assert code_ == 0, f"{_name(page)}: {line!r} failed: {out}"
            if "--json" in args:
                json.loads(out)


def _parse(args: list[str]) -> None:
    """Parse a command line as `remem` would, down to its command, without running it."""
    ctx = cli.make_context("remem", args, obj=Ctx(None, "default", False))
    command: click.Command = cli
    while isinstance(command, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, sub, rest = command.resolve_command(ctx, rest)
        assert name is not None and sub is not None, args
        ctx = sub.make_context(name, rest, parent=ctx)
        command = sub


@pytest.mark.parametrize("page", _pages_with("console"), ids=_name)
def test_remem_lines_in_console_blocks_parse(page: Path) -> None:
    """Commands shown, not run (servers, benchmarks, other machines' files), are still
    valid invocations: their commands and options exist and their values parse."""
    for language, _, code in blocks(page):
        if language != "console":
            continue
        for line in (ln.strip().removesuffix("&").strip() for ln in code.splitlines()):
            if not line.startswith("remem "):
                continue
            try:
                _parse(shlex.split(line)[1:])
            except click.BadParameter as exc:  # a file of another machine
                assert "does not exist" in str(exc), f"{_name(page)}: {line!r}: {exc}"
            except click.ClickException as exc:
                pytest.fail(f"{_name(page)}: {line!r}: {exc.format_message()}")


def test_a_wrong_option_in_a_shown_command_fails() -> None:
    with pytest.raises(click.NoSuchOption):
        _parse(["recall", "--actor", "a", "--query", "q", "--topk", "3"])
    _parse(["recall", "--actor", "a", "--query", "q", "--k", "3"])


@pytest.mark.parametrize("page", _pages_with("json"), ids=_name)
def test_json_blocks_parse(page: Path) -> None:
    for language, _, code in blocks(page):
        if language == "json":
            json.loads(code)


@pytest.mark.parametrize("page", _pages_with("toml"), ids=_name)
def test_toml_blocks_are_valid_configuration(page: Path) -> None:
    for language, _, code in blocks(page):
        if language == "toml":
            parsed = tomllib.loads(code)
            _known_keys(parsed, ConfigFile, f"{_name(page)}: ")


def _known_keys(parsed: dict[str, Any], model: type[BaseModel], where: str) -> None:
    for key, value in parsed.items():
        assert key in model.model_fields, f"{where}{key!r} is not a configuration key"
        if key == "strategies":
            from remem.config.file import StrategySection
            from remem.config.sections import STRATEGIES

            for name, section in value.items():
                assert name in STRATEGIES, f"{where}unknown strategy {name!r}"
                _known_keys(section, StrategySection, f"{where}strategies.{name}.")
            continue
        sub = model.model_fields[key].annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            _known_keys(value, sub, f"{where}{key}.")


# --- the configuration reference ------------------------------------------------------

VARIABLE = re.compile(r"\bREMEM_[A-Z0-9_]*[A-Z0-9]\b")


def _variables(text: str) -> set[str]:
    return set(VARIABLE.findall(text))


def test_configuration_reference_lists_every_variable_the_code_reads() -> None:
    code: set[str] = set()
    for path in SRC.rglob("*.py"):
        code |= _variables(path.read_text())
    page = _variables((DOCS / "reference" / "configuration.md").read_text())
    assert code - page == set(), "read by the code, missing from the configuration reference"
    assert page - code == set(), "in the configuration reference, read by no code"


def test_docs_name_only_variables_that_exist() -> None:
    known: set[str] = set()
    for path in [*SRC.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        known |= _variables(path.read_text())
    for page in PAGES:
        assert _variables(page.read_text()) - known == set(), _name(page)


def _section_rows(page: str, heading: str) -> set[str]:
    part = page.split(f"\n### `{heading}`\n", 1)
    assert len(part) == 2, f"no section {heading} in the configuration reference"
    body = part[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", body, re.M))


def test_configuration_reference_lists_every_key_of_the_file() -> None:
    from remem.config.file import StrategySection

    page = (DOCS / "reference" / "configuration.md").read_text()
    for section, field in ConfigFile.model_fields.items():
        if section == "strategies":
            model: Any = StrategySection
            heading = "[strategies.NAME]"
        else:
            model, heading = field.annotation, f"[{section}]"
        assert _section_rows(page, heading) == set(model.model_fields), heading


# --- README as the front page ---------------------------------------------------------


def test_readme_is_a_front_page() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; the manual lives in docs/"


def test_quick_start_has_exactly_the_two_commands() -> None:
    quick = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [ln.strip() for ln in quick.splitlines() if ln.startswith("    ")]
    assert commands == [
        "pip install -e '.[embed]' && remem demo",
        "pip install -e '.[dev]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[dev]'" in ci and "\npython -m pytest\n" in ci


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text()):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


# --- the site -------------------------------------------------------------------------


def test_site_builds_strict_with_llms_txt_and_markdown_copies(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    llms = (site / "llms.txt").read_text()
    nav = re.findall(
        r"^\s*-\s+(?:[^:\n]+:\s+)?([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M
    )
    assert len(nav) > 20
    for page in nav:
        assert f"]({page})" in llms, f"llms.txt does not list {page}"
        assert (site / page).read_text() == (DOCS / page).read_text()
        stem = page.removesuffix(".md")
        html = f"{stem}.html" if stem.split("/")[-1] == "index" else f"{stem}/index.html"
        assert (site / html).exists(), f"{page} was not built"
    assert (
        'class="doc doc-object doc-class"'
        in (site / "reference" / "python" / "index.html").read_text()
    )


def test_click_commands_are_walked_whole() -> None:
    """The reference's walk reaches nested groups (e.g. `remem docs add`)."""
    paths = [p for p, _ in docgen.command_paths(cli)]
    assert "remem docs add" in paths and "remem demo" in paths
    assert all(isinstance(c, click.Command) for _, c in docgen.command_paths(cli))
