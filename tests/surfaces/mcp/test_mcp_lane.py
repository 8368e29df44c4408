"""`remem mcp`'s recall lane: at most `recall_threads` recalls and document searches run
at once, the others wait their turn, and the other tools do not wait behind them (as
`remem serve`'s, tests/surfaces/http/test_recall_lane.py). The tools are called on the
server's FastMCP in process; the query embedder (`Gate`) counts the recalls inside it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from remem.errors import InvalidInput
from remem.memory.memory import Memory, open_store
from remem.service.mcp import McpServer
from tests.support.lane import Gate
from tests.support.mcp import mcp_keys, tool_data


def _server(tmp_path: Path, gate: Gate, threads: int | None) -> McpServer:
    db = str(tmp_path / f"lane{threads}.db")
    with Memory.open(db, tenant="acme", embedder=None) as mem:
        mem.remember(actor="alice", text="Alice lives in Faro.")
        mem.add_document(text="The Faro office opens at nine.", title="hours")
    return McpServer(open_store(db), mcp_keys(db)["alice"], embedder=gate, recall_threads=threads)


def _most_at_once(tmp_path: Path, threads: int, tool: str) -> int:
    gate = Gate(hold=0.15)
    server = _server(tmp_path, gate, threads)
    answers: list[bool] = []

    async def call(i: int) -> None:
        got = await server.mcp.call_tool(tool, {"query": f"where does Alice live {i}"})
        answers.append(isinstance(tool_data(got), dict))  # type: ignore[arg-type]

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for i in range(4):
                tasks.start_soon(call, i)

    try:
        anyio.run(main)
    finally:
        server.close()
    assert answers == [True] * 4
    return gate.most


def test_one_recall_thread_runs_the_recalls_one_at_a_time(tmp_path: Path) -> None:
    assert _most_at_once(tmp_path, 1, "recall") == 1
    assert _most_at_once(tmp_path, 3, "recall") >= 2  # the same calls overlap given room


def test_a_document_search_waits_in_the_lane_and_other_tools_do_not(tmp_path: Path) -> None:
    gate = Gate()
    server = _server(tmp_path, gate, 1)
    seen: dict[str, object] = {}

    async def search() -> None:
        got = await server.mcp.call_tool("search_documents", {"query": "office hours"})
        seen["found"] = tool_data(got)  # type: ignore[arg-type]

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            gate.open.clear()
            tasks.start_soon(server.mcp.call_tool, "recall", {"query": "Faro"})
            while gate.inside < 1:  # the one recall thread is held
                await anyio.sleep(0.01)
            tasks.start_soon(search)
            with anyio.fail_after(10):  # answered while the lane is full
                listed = await server.mcp.call_tool("list_memories", {})
                kept = await server.mcp.call_tool("remember", {"text": "Alice swims."})
                seen["listed"], seen["kept"] = tool_data(listed), tool_data(kept)  # type: ignore[arg-type]
            await anyio.sleep(0.3)
            seen["searched early"] = "found" in seen
            gate.open.set()

    try:
        anyio.run(main)
    finally:
        server.close()
    assert seen["searched early"] is False  # it waited for the recall ahead of it
    assert "Faro office" in str(seen["found"])
    assert gate.most == 1
    assert "Faro" in str(seen["listed"]) and "swims" in str(seen["kept"])


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_recall_threads_must_be_a_whole_number_of_at_least_one(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInput, match="recall_threads"):
        _server(tmp_path, Gate(), bad)  # type: ignore[arg-type]
