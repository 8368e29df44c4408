"""The MCP tool `search_documents`, driven through the real stdio server as
tests/surfaces/mcp/test_mcp.py drives it: a key narrowed to one actor finds the tenant's
and its own documents, never another actor's, and out-of-scope asks are tool errors."""

from __future__ import annotations

from pathlib import Path

from mcp import ClientSession

from remem.memory.memory import Memory
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error


def test_search_documents_tool_keeps_to_the_keys_scope(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    keys = mcp_keys(db)
    with Memory.open(db, tenant="acme", embedder=None) as mem:
        shared = mem.add_document(text="The quokka handbook: feed leaves.", title="handbook")
        mine = mem.add_document(text="Alice's quokka notes.", title="mine", scope="actor:alice")
        mem.add_document(text="Bob's secret quokka plan.", title="bob's", scope="actor:bob")
        mem.add_document(text="Team quokka roster.", title="team", scope="namespace:team")

    async def as_alice(s: ClientSession) -> None:
        listed = await s.list_tools()
        assert "search_documents" in {t.name for t in listed.tools}
        found = tool_data(await s.call_tool("search_documents", {"query": "quokka"}))
        ids = {d["document_id"] for d in found["documents"]}
        assert ids == {shared.document.id, mine.document.id}
        top = found["documents"][0]
        assert set(top) >= {"document_id", "title", "position", "span", "text"}
        assert "forbidden" in tool_error(
            await s.call_tool("search_documents", {"query": "quokka", "actor_id": "bob"})
        )
        assert "namespace" in tool_error(
            await s.call_tool("search_documents", {"query": "quokka", "namespaces": ["team"]})
        )
        assert tool_error(await s.call_tool("search_documents", {"query": ""}))

    async def as_globex(s: ClientSession) -> None:
        found = tool_data(await s.call_tool("search_documents", {"query": "quokka"}))
        assert found["documents"] == []

    with open(tmp_path / "err.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
        session_run(db, keys["globex"], errlog, as_globex)
