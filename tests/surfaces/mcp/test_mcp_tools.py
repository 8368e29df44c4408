"""MCP tools a model uses well: each says when to call it, answers with compact text beside
the data, and the tool list, the server's instructions, `remem mcp --help` and the docs
agree (issue 38, item 4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import ClientSession

from remem.cli.main import cli as remem_cli
from remem.memory.memory import Memory
from remem.service.mcp import INSTRUCTIONS, TOOLS
from tests.support import ROOT
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_text

SAID = [  # about 200 characters of memory, as in the issue
    "Ana lives in Faro.",
    "Ana prefers aisle seats on flights.",
    "Ana is vegetarian.",
    "Ana works in the Europe/Lisbon timezone.",
    "Ana works as a nurse on night shifts.",
    "Ana's sister Rita lives in Porto.",
]


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "mcp.db")
    with Memory.open(path, tenant="acme", embedder=None) as mem:
        for text in SAID:
            mem.remember(actor="alice", text=text)
    return path


def test_tools_say_when_to_call_them_and_agree_with_help_and_readme(
    tmp_path: Path, db: str
) -> None:
    keys = mcp_keys(db)
    listed: list[tuple[str, str]] = []

    async def body(s: ClientSession) -> None:
        listed.extend((t.name, t.description or "") for t in (await s.list_tools()).tools)

    with (tmp_path / "err.log").open("w") as errlog:
        session_run(db, keys["alice"], errlog, body)
    assert tuple(name for name, _ in listed) == TOOLS
    for name, description in listed:
        first = " ".join(description.split()).split(".")[0]
        assert re.match(r"Call (when|before) ", first), (name, first)
        assert len(first) < 200, name  # a sentence, not a page
        assert f"`{name}`" in INSTRUCTIONS
    help_text = " ".join(CliRunner().invoke(remem_cli, ["mcp", "--help"]).output.split())
    docs_row = next(
        line for line in (ROOT / "docs" / "guide" / "command-line.md").read_text().splitlines()
        if line.startswith("| `remem mcp ")
    )  # fmt: skip
    mcp_page = " ".join((ROOT / "docs" / "mcp.md").read_text().split())
    for said in (help_text, docs_row, mcp_page):  # every tool, in the order the server lists them
        assert ", ".join(TOOLS) in said, said


def test_recall_answers_compact_text_beside_the_data(tmp_path: Path, db: str) -> None:
    keys = mcp_keys(db)
    got: dict[str, object] = {}

    async def body(s: ClientSession) -> None:
        result = await s.call_tool("recall", {"query": "Ana"})
        got["data"], got["text"] = tool_data(result), tool_text(result)
        listed = await s.call_tool("list_memories", {})
        got["list_text"] = tool_text(listed)

    with (tmp_path / "err.log").open("w") as errlog:
        session_run(db, keys["alice"], errlog, body)
    data, text = got["data"], str(got["text"])
    assert isinstance(data, dict) and len(data["records"]) == len(SAID)
    assert text == data["context"]
    memory_chars = sum(len(r["text"]) for r in data["records"])
    # one token about four characters, as the packet counts them
    assert len(text) / 4 < 2 * data["tokens"], (len(text), data["tokens"], memory_chars)
    assert "\n  " not in str(got["list_text"])  # one-line JSON, not indented
