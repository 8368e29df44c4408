"""`RememMemory` against the real AutoGen: an `AssistantAgent` whose model client is
AutoGen's own `OpenAIChatCompletionClient`, pointed at a scripted OpenAI-compatible
server on loopback (`ScriptedLLM`), queries remem before each model call, on every
backend (`tests/integrations/conftest.py`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_core import CancellationToken
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient

from remem import NotFound, RefusedContent
from remem.errors import Forbidden, InvalidInput
from remem.integrations.autogen import ErasureUnsupported, RememMemory
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.adapters import Backend

# a memory's context goes in as a system message after the user's (as ListMemory's does):
# AutoGen sends that only to a model that takes several system messages, as OpenAI's do
MODEL_INFO: Any = {"vision": False, "function_calling": True, "json_output": False,
                   "family": "unknown", "structured_output": False,
                   "multiple_system_messages": True}  # fmt: skip


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(lambda request: Reply.text("You like aisle seats.")) as server:
        yield server


def run(llm: ScriptedLLM, memory: RememMemory, task: str) -> TaskResult:
    """An AssistantAgent with this memory runs `task` on the scripted model."""

    async def go() -> TaskResult:
        client = OpenAIChatCompletionClient(model="fake-model", base_url=llm.base_url,
                                            api_key="test", model_info=MODEL_INFO,
                                            max_retries=0)  # fmt: skip
        try:
            agent = AssistantAgent("assistant", model_client=client, memory=[memory])
            return await agent.run(task=task)
        finally:
            await client.close()

    return asyncio.run(go())


def text(
    content: str,
    mime: MemoryMimeType | str = MemoryMimeType.TEXT,
    metadata: dict[str, Any] | None = None,
) -> MemoryContent:
    return MemoryContent(content=content, mime_type=mime, metadata=metadata)


def test_the_agent_is_shown_what_remem_recalls_for_its_user(
    backend: Backend, llm: ScriptedLLM
) -> None:
    alices = RememMemory(backend.memory, actor="alice")
    asyncio.run(alices.add(text("Alice prefers aisle seats on long flights")))
    backend.reader.remember(actor="bob", text="Bob prefers window seats on long flights")

    result = run(llm, alices, "Which seat do I like on long flights?")
    assert result.messages[-1].to_text() == "You like aisle seats."
    (request,) = llm.requests
    system = [m["content"] for m in request["messages"] if m["role"] == "system"]
    shown = "\n".join(system)
    assert "Alice prefers aisle seats on long flights" in shown
    assert "window" not in json.dumps(request)  # bob's memory is not alice's
    # AutoGen saw the memory too: a MemoryQueryEvent in the run's messages
    (event,) = [m for m in result.messages if type(m).__name__ == "MemoryQueryEvent"]
    assert event.content[0].metadata["id"].startswith("rec_")


def test_query_hands_back_ids_that_forget_erases(backend: Backend) -> None:
    memory = RememMemory(backend.memory, actor="alice")
    asyncio.run(memory.add(text("Alice's dog is called Rex")))
    asyncio.run(
        memory.add(MemoryContent(content={"food": "vegetarian"}, mime_type="application/json"))
    )
    recs = backend.reader.records(actor="alice")
    assert sorted(r.text for r in recs) == ["Alice's dog is called Rex", '{"food": "vegetarian"}']
    found = asyncio.run(memory.query("what is my dog called?"))
    (dog,) = [r for r in found.results if "Rex" in str(r.content)]
    assert dog.metadata is not None and dog.metadata["status"] == "active"

    # the agent's tool: AutoGen wraps the method as AssistantAgent(tools=[memory.forget])
    # does, and runs it as it runs a model's tool call (the call itself is not scripted)
    tool = FunctionTool(memory.forget, description=memory.forget.__doc__ or "")
    assert list(tool.schema["parameters"]["properties"]) == ["memory_id"]
    said = asyncio.run(tool.run_json({"memory_id": dog.metadata["id"]}, CancellationToken()))
    assert said.startswith(f"forgot {dog.metadata['id']}") and "verified" in said
    with pytest.raises(NotFound):
        backend.reader.get(dog.metadata["id"])
    after = asyncio.run(memory.query("what is my dog called?"))
    assert all("Rex" not in str(r.content) for r in after.results)


def test_a_secret_an_image_and_clear_are_refused_and_nothing_is_lost(backend: Backend) -> None:
    memory = RememMemory(backend.memory, actor="alice")
    with pytest.raises(RefusedContent):
        asyncio.run(memory.add(text("my password is hunter2x7")))
    with pytest.raises(InvalidInput, match="remem remembers text"):
        asyncio.run(memory.add(MemoryContent(content=b"\x89PNG", mime_type=MemoryMimeType.BINARY)))
    assert backend.reader.records(actor="alice", all=True) == []
    asyncio.run(memory.add(text("Alice lives in Lyon")))
    with pytest.raises(ErasureUnsupported, match=r"forget\(actor=\.\.\.\)"):
        asyncio.run(memory.clear())
    assert [r.text for r in backend.reader.records(actor="alice")] == ["Alice lives in Lyon"]


def test_a_memory_reads_and_erases_only_its_own_actor(backend: Backend) -> None:
    bobs = backend.reader.remember(actor="bob", text="Bob plays the cello")
    memory = RememMemory(backend.memory, actor="alice")
    assert asyncio.run(memory.query("who plays the cello?")).results == []
    with pytest.raises(NotFound):
        asyncio.run(memory.forget(bobs.id))
    assert backend.reader.get(bobs.id).text == "Bob plays the cello"
    if backend.server is not None:
        # against a server, the key is the principal: an alice key reads alice only
        stray = RememMemory(backend.server.client("alice"), actor="bob")
        with pytest.raises(Forbidden):
            asyncio.run(stray.query("cello"))


def test_a_secret_inside_json_and_an_empty_or_odd_memory_are_refused(backend: Backend) -> None:
    memory = RememMemory(backend.memory, actor="alice")
    nested = {"login": {"note": "my password is hunter2x7"}}
    with pytest.raises(RefusedContent):
        asyncio.run(memory.add(MemoryContent(content=nested, mime_type="application/json")))
    with pytest.raises(InvalidInput, match="no text"):
        asyncio.run(memory.add(text("   ")))
    with pytest.raises(InvalidInput, match="MemoryContent"):
        asyncio.run(memory.add("Alice likes tea"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="k must be"):
        asyncio.run(memory.query("tea", k=0))
    with pytest.raises(InvalidInput, match="k must be"):
        RememMemory(backend.memory, actor="alice", k=10_000)
    assert backend.reader.records(actor="alice", all=True) == []


def test_add_keeps_the_contents_metadata_and_query_filters_by_it(backend: Backend) -> None:
    memory = RememMemory(backend.memory, actor="alice")
    pets = {"topic": "pets", "source": {"app": "chat"}}
    asyncio.run(memory.add(text("Alice's dog is called Rex", metadata=pets)))
    asyncio.run(memory.add(text("Alice's car is a red Fiat", metadata={"topic": "cars"})))
    (dog,) = [r for r in backend.reader.records(actor="alice") if "Rex" in r.text]
    assert dog.metadata == pets
    asked = "what are Alice's dog and car called?"
    both = asyncio.run(memory.query(asked)).results
    assert {str(c.content) for c in both} == {
        "Alice's dog is called Rex",
        "Alice's car is a red Fiat",
    }
    (hit,) = asyncio.run(memory.query(asked, metadata={"topic": "pets"})).results
    assert hit.content == "Alice's dog is called Rex" and hit.metadata is not None
    # the record's metadata comes back, and remem's own names win over it
    assert hit.metadata["source"] == {"app": "chat"} and hit.metadata["id"] == dog.id
    # a memory made with a filter applies it to every query, update_context's too
    pets_only = RememMemory(backend.memory, actor="alice", metadata={"topic": "pets"})
    assert [str(c.content) for c in asyncio.run(pets_only.query(asked)).results] == [
        "Alice's dog is called Rex"
    ]


def test_a_secret_or_a_bad_key_in_metadata_is_refused_and_nothing_is_written(
    backend: Backend,
) -> None:
    memory = RememMemory(backend.memory, actor="alice")
    with pytest.raises(RefusedContent, match="metadata"):
        asyncio.run(memory.add(text("Alice's cat is Tom", metadata={"password": "hunter2-Horse"})))
    with pytest.raises(InvalidInput, match="invisible format character"):
        asyncio.run(memory.add(text("Alice's cat is Tom", metadata={"to\u200bpic": "pets"})))
    with pytest.raises(InvalidInput, match="metadata"):
        asyncio.run(memory.query("cat", metadata={"topic": ["a", "list"]}))
    with pytest.raises(InvalidInput, match="metadata"):
        RememMemory(backend.memory, actor="alice", metadata="topic=pets")  # type: ignore[arg-type]
    assert backend.reader.records(actor="alice", all=True) == []
