"""`RememMemoryStore` against the real Strands Agents SDK: a Strands `Agent` whose
model is a scripted `strands.models.Model` (the SDK's model extension point) runs
with Strands' `MemoryManager` (injection, its `add_memory` tool, server-side
extraction into `add_messages`) and the store's own `forget_memory` tool, on every
backend (`tests/integrations/conftest.py`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from strands import Agent
from strands.memory import AddMessagesContext, MemoryManager
from strands.models import Model

from remem import InvalidInput, NotFound, RefusedContent
from remem.errors import Forbidden
from remem.integrations.strands import RememMemoryStore, RememSearchOptions
from tests.support.adapters import Backend, make_store, settle

Script = Callable[[list[dict[str, Any]]], dict[str, Any]]


class ScriptedModel(Model):
    """Answers each call with `script(messages)`: {"text": ...} or {"tool": name, "input":
    {...}}; keeps the messages of every call."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[list[dict[str, Any]]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests ask for no structured output")

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.calls.append(json.loads(json.dumps(messages, default=str)))
        answer = self.script(self.calls[-1])
        yield {"messageStart": {"role": "assistant"}}
        if "tool" in answer:
            use = {"name": answer["tool"], "toolUseId": f"t{len(self.calls)}"}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {
                "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(answer["input"])}}}
            }
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": answer["text"]}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}


def texts(messages: list[dict[str, Any]]) -> str:
    """Every text the model was shown, tool results included."""
    return json.dumps(messages)


def last_tool_result(messages: list[dict[str, Any]]) -> str | None:
    for block in messages[-1]["content"]:
        if "toolResult" in block:
            return " ".join(c.get("text", "") for c in block["toolResult"]["content"])
    return None


def agent(store: RememMemoryStore, script: Script) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    manager = MemoryManager(stores=[store], add_tool_config=True)
    return Agent(model=model, memory_manager=manager, tools=store.get_tools(),
                 callback_handler=None), model  # fmt: skip


def test_an_agent_extracts_into_remem_and_recalls_it_in_a_later_run(backend: Backend) -> None:
    store = make_store(backend)
    first, _ = agent(store, lambda m: {"text": "Noted."})
    assert str(first("I prefer aisle seats on long flights.")).strip() == "Noted."
    # the manager handed the turn to add_messages: two events of the store's session
    events = backend.reader.events(actor="alice", session="strands")
    assert len(events) == 2
    settle(backend)
    (rec,) = backend.reader.records(actor="alice")
    assert rec.text == "Prefers aisle seats on long flights"

    # a new agent and store (a later run): injection brings the memory into the prompt
    later = make_store(backend)
    second, model = agent(later, lambda m: {"text": "You like aisle seats."})
    second("Which seat do I like?")
    shown = texts(model.calls[0])
    assert "Prefers aisle seats on long flights" in shown


def test_the_memory_tools_add_search_and_forget_through_remem(backend: Backend) -> None:
    store = make_store(backend)

    def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
        result = last_tool_result(messages)
        asked = " ".join(b.get("text", "") for b in messages[-1]["content"])
        if result is None and "Remember" in asked:
            return {"tool": "add_memory", "input": {"entries": ["Alice's dog is called Rex"]}}
        if result is None and "Forget" in asked:
            return {"tool": "search_memory", "input": {"query": "dog"}}
        if result is not None and "rec_" in result and "forgot" not in result:
            memory_id = "rec_" + result.split("rec_")[1][:26]
            return {"tool": "forget_memory", "input": {"memory_id": memory_id}}
        return {"text": f"done: {result}"}

    bot, _ = agent(store, script)
    bot("Remember that my dog is called Rex.")
    (rec,) = backend.reader.records(actor="alice")
    assert rec.text == "Alice's dog is called Rex" and rec.authority.value == "confirmed"
    found = asyncio.run(store.search("what is my dog called?"))
    assert [e.metadata["id"] for e in found if e.metadata] == [rec.id]

    answer = str(bot("Forget my dog's name."))
    assert f"forgot {rec.id}" in answer and "verified" in answer
    with pytest.raises(NotFound):
        backend.reader.get(rec.id)
    assert asyncio.run(store.search("what is my dog called?")) == []
    for bad in (-1, 2.5, True):  # accepted silently before
        with pytest.raises(InvalidInput, match="max_search_results"):
            asyncio.run(store.search("dog", {"max_search_results": bad}))  # type: ignore[typeddict-item]


def test_numbered_batches_store_each_message_and_equal_messages_stay_two(
    backend: Backend,
) -> None:
    store = make_store(backend)
    batch: list[Any] = [
        {"role": "user", "content": [{"text": "ok"}]},
        {"role": "assistant", "content": [{"text": "ok"}]},
        {"role": "user", "content": [{"text": "ok"}]},
    ]
    ctx = AddMessagesContext(sequence_numbers=[4, 5, 7])
    assert asyncio.run(store.add_messages(batch, ctx)) == {"added": 3}
    later = AddMessagesContext(sequence_numbers=[8, 9, 10])
    assert asyncio.run(store.add_messages(batch, later)) == {"added": 3}
    # Strands re-sends numbers only to retry a batch that failed: numbers this store
    # already stored are a new agent run's, new messages (a retry after a failure is
    # tests/hostile/test_hostile_adapters.py's, on a response lost between client and server)
    assert asyncio.run(store.add_messages(batch, ctx)) == {"added": 3}
    # the same numbers from another store object (another agent's run) are new messages
    other = make_store(backend)
    assert asyncio.run(other.add_messages(batch[:1], AddMessagesContext([4]))) == {"added": 1}
    assert len(backend.reader.events(actor="alice", session="strands")) == 10


def test_a_secret_is_refused_or_kept_redacted(backend: Backend) -> None:
    store = make_store(backend)
    with pytest.raises(RefusedContent):
        asyncio.run(store.add("my password is hunter2x7"))
    assert backend.reader.records(actor="alice", all=True) == []
    leak: list[Any] = [{"role": "user", "content": [{"text": "my password is hunter2x7"}]}]
    asyncio.run(store.add_messages(leak, AddMessagesContext([0])))
    (event,) = backend.reader.events(actor="alice")
    text = event["text"] if isinstance(event, dict) else event.text
    assert "hunter2x7" not in text and "[REDACTED:password]" in text


def test_a_store_reads_and_erases_only_its_own_actor(backend: Backend) -> None:
    bobs = backend.reader.remember(actor="bob", text="Bob plays the cello")
    store = make_store(backend)
    (forget,) = store.get_tools()
    assert asyncio.run(store.search("cello")) == []
    with pytest.raises(NotFound):
        asyncio.run(forget(memory_id=bobs.id))  # type: ignore[misc]
    assert backend.reader.get(bobs.id).text == "Bob plays the cello"
    if backend.server is not None:
        # against a server, the key is the principal: an alice key reads alice only
        stray = RememMemoryStore(backend.server.client("alice"), actor="bob")
        with pytest.raises(Forbidden):
            asyncio.run(stray.search("cello"))


def test_add_keeps_strands_metadata_and_search_filters_by_it(backend: Backend) -> None:
    store = make_store(backend)
    pets = {"topic": "pets", "source": {"app": "chat"}}
    first = asyncio.run(store.add("Alice's dog is called Rex", metadata=pets))
    asyncio.run(store.add("Alice's car is a red Fiat", metadata={"topic": "cars"}))
    assert backend.reader.get(first["id"]).metadata == pets
    found = asyncio.run(store.search("what are Alice's dog and car called?"))
    assert {e.content for e in found} == {"Alice's dog is called Rex", "Alice's car is a red Fiat"}
    only: RememSearchOptions = {"metadata": {"topic": "pets"}}
    (hit,) = asyncio.run(store.search("what are Alice's dog and car called?", only))
    assert hit.content == "Alice's dog is called Rex" and hit.metadata is not None
    assert hit.metadata["topic"] == "pets" and hit.metadata["id"] == first["id"]
    with pytest.raises(RefusedContent, match="metadata"):
        asyncio.run(store.add("Alice's cat is Tom", metadata={"password": "hunter2-Horse"}))
    with pytest.raises(InvalidInput, match="invisible format character"):
        asyncio.run(store.add("Alice's cat is Tom", metadata={"to\u200bpic": "pets"}))
    assert len(backend.reader.records(actor="alice", all=True)) == 2
