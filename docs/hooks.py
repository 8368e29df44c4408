"""MkDocs hooks: a Markdown copy of every page and `llms.txt`, written into the built site.

Each page's source (`docs/X.md`) is copied as-is to `X.md` beside its HTML in the
site, so a model or a script can read the page without its theme; `llms.txt`
(https://llmstxt.org) lists the pages of the navigation, by section, each linking
to that Markdown copy with the page's first paragraph cut to one line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

_SUMMARY = (
    "Long-term memory for AI agents that a team runs itself: a Python library on one "
    "SQLite file, and the same engine as an HTTP service, MCP server and web console "
    "on PostgreSQL. Governed records, scope-first recall, forgetting that reaches "
    "every index."
)


def on_post_build(config: Any, **_: Any) -> None:
    docs, site = Path(config["docs_dir"]), Path(config["site_dir"])
    for source in docs.rglob("*.md"):
        target = site / source.relative_to(docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    lines = [f"# {config['site_name']}", "", f"> {_SUMMARY}", ""]
    for title, entries in _sections(config["nav"]):
        lines += [f"## {title}", ""]
        for name, path in entries:
            lines.append(f"- [{name}]({path}): {_first_paragraph(docs / path)}")
        lines.append("")
    (site / "llms.txt").write_text("\n".join(lines))


def _sections(nav: list[Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The navigation as (section, [(title, path)]); top-level pages form "Docs"."""
    top: list[tuple[str, str]] = []
    out: list[tuple[str, list[tuple[str, str]]]] = [("Docs", top)]
    for item in nav:
        if isinstance(item, str):
            top.append((_title(item), item))
            continue
        ((name, value),) = item.items()
        if isinstance(value, str):
            top.append((name, value))
        else:
            out.append((name, [_entry(v) for v in value]))
    return out


def _entry(item: Any) -> tuple[str, str]:
    if isinstance(item, str):
        return _title(item), item
    ((name, value),) = item.items()
    return name, value


def _title(path: str) -> str:
    return path.removesuffix(".md").rsplit("/", 1)[-1].replace("-", " ").capitalize()


def _first_paragraph(path: Path) -> str:
    """The page's first prose paragraph, one line, at most 200 characters."""
    for block in re.split(r"\n\s*\n", path.read_text()):
        text = " ".join(block.split())
        skip = text.startswith(("#", "```", "|", "-", "!", "::")) or text[:1].isdigit()
        if text and not skip:
            return text if len(text) <= 200 else text[:197].rsplit(" ", 1)[0] + "..."
    return ""
