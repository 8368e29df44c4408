"""Each adapter's search hands back the packet `recall` does, pinned fields included:
the configuration's `[recall] pin` heads the packet on every face, not only the
library's (before, the adapters read `packet.records` and dropped `packet.pinned`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.integrations.google_adk import RememMemoryService
from remem.integrations.openai_agents import memory_tools
from remem.integrations.strands import RememMemoryStore


def test_pinned_fields_head_every_adapters_search(tmp_path: Path) -> None:
    config = build(ConfigFile.model_validate({"recall": {"pin": ["home"]}}), "test", tmp_path)
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as mem:
        home = mem.remember(actor="ola", text="Lives in Lisbon", field="home", value="Lisbon")
        mem.remember(actor="ola", text="Prefers aisle seats on long flights")
        query = "which seat should I book on long flights?"
        packet = mem.recall(actor="ola", query=query)
        want = [it.id for it in (*packet.pinned, *packet.records)]
        assert want[0] == home.id and len(want) == 2

        adk = asyncio.run(
            RememMemoryService(mem).search_memory(app_name="a", user_id="ola", query=query)
        )
        strands = asyncio.run(RememMemoryStore(mem, actor="ola").search(query))
        tool = {t.name: t for t in memory_tools(mem, actor="ola")}["recall"]
        from agents.tool_context import ToolContext

        args = json.dumps({"query": query})
        ctx = ToolContext(context=None, tool_name="recall", tool_call_id="c", tool_arguments=args)
        openai = json.loads(asyncio.run(tool.on_invoke_tool(ctx, args)))["memories"]
    assert [m.id for m in adk.memories] == want
    assert [(e.metadata or {})["id"] for e in strands] == want
    assert [m["id"] for m in openai] == want
