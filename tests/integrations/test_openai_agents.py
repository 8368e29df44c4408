"""`RememSession` and `memory_tools` against the real OpenAI Agents SDK: the SDK's
`Runner` drives an agent whose model is a scripted `agents.models.interface.Model`
(the SDK's own extension point), on every backend (`tests/integrations/conftest.py`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from agents import Agent, ModelResponse, Runner, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from remem.integrations.openai_agents import RememSession, memory_tools
from tests.support.adapters import Backend


class ScriptedModel(Model):
    """Answers each model call with `script(input)`; keeps every input it was given."""

    def __init__(self, script: Callable[[list[Any]], list[Any]]) -> None:
        self.script = script
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kw: Any) -> ModelResponse:  # fmt: skip
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        return ModelResponse(output=self.script(items), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError("the tests run without streaming")


def say(text: str, n: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{n}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def tool_call(name: str, args: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{n}",
        call_id=f"call_{n}",
        type="function_call",
        name=name,
        arguments=json.dumps(args),
        status="completed",
    )


def script(items: list[Any]) -> list[Any]:
    """Remember on the first turn, recall on the second, then answer with what came back."""
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    asks = [i for i in items if i.get("role") == "user"]
    if len(asks) == 1 and not outputs:
        return [tool_call("remember", {"text": "I prefer aisle seats"}, 1)]
    if len(asks) == 1:
        return [say("Noted: aisle seats.", 2)]
    if len(outputs) == 1:
        return [tool_call("recall", {"query": "which seat do I prefer?"}, 3)]
    return [say("From memory: " + str(outputs[-1]["output"]), 4)]


def run(backend: Backend, agent: Agent[Any], text: str, session: RememSession) -> Any:
    return asyncio.run(Runner.run(agent, text, session=session))


def test_a_runner_keeps_its_session_in_the_event_log_and_uses_the_memory_tools(
    backend: Backend,
) -> None:
    model = ScriptedModel(script)
    agent = Agent(name="assistant", model=model, tools=memory_tools(backend.memory, actor="alice"))
    first = run(backend, agent, "Remember: I prefer aisle seats.", RememSession(
        "trip-1", backend.memory, actor="alice"))  # fmt: skip
    assert first.final_output == "Noted: aisle seats."

    # a new session object on the same session: the history comes back from remem
    session = RememSession("trip-1", backend.memory, actor="alice")
    items = asyncio.run(session.get_items())
    assert [i.get("role") or i["type"] for i in items] == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
    ]
    assert items[0] == {"role": "user", "content": "Remember: I prefer aisle seats."}
    assert items[1]["call_id"] == "call_1" and json.loads(items[1]["arguments"]) == {
        "text": "I prefer aisle seats"
    }
    assert asyncio.run(session.get_items(limit=1)) == items[-1:]

    second = run(backend, agent, "Which seat do I like?", session)
    assert model.inputs[2][: len(items)] == items  # the model saw the stored history
    assert "aisle seats" in second.final_output

    events = backend.reader.events(actor="alice", session="trip-1")
    roles = [e["role"] if isinstance(e, dict) else e.role.value for e in events]
    assert roles[:4] == ["user", "assistant", "tool", "assistant"] and len(roles) == 8
    texts = [r.text for r in backend.reader.records(actor="alice")]
    assert "I prefer aisle seats" in texts  # written by the remember tool, confirmed


def test_an_item_the_sdk_identifies_is_stored_once_and_a_repeated_message_twice(
    backend: Backend,
) -> None:
    said = {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "hello"}]}  # fmt: skip
    batch = [{"role": "user", "content": "hi"}, said]
    writer = RememSession("s", backend.memory, actor="alice")
    replayer = RememSession("s", backend.memory, actor="alice")
    assert asyncio.run(replayer.get_items()) == []  # it knows the log before the first add
    asyncio.run(writer.add_items(batch))
    if backend.clock is not None:
        backend.clock.advance(seconds=5)
    # the SDK's item "msg_1" again is the same item; a user's "hi" again is said again
    # (a retry after a lost response: tests/hostile/test_hostile_adapters.py)
    asyncio.run(replayer.add_items(batch))
    assert asyncio.run(RememSession("s", backend.memory, actor="alice").get_items()) == [
        *batch,
        batch[0],
    ]


def texts_in_log(backend: Backend, session: str) -> list[str]:
    rows = backend.reader.events(actor="alice", session=session)
    return [r["text"] if isinstance(r, dict) else r.text for r in rows]


def test_pop_item_hides_the_last_turn_for_a_correction_and_erases_nothing(
    backend: Backend,
) -> None:
    session = RememSession("s", backend.memory, actor="alice")
    assert asyncio.run(session.pop_item()) is None  # nothing to pop
    turn = [{"role": "user", "content": "My seat is 12A"}, {"role": "assistant", "content": "ok"}]
    asyncio.run(session.add_items(turn))
    assert asyncio.run(session.pop_item()) == turn[1]
    assert asyncio.run(session.pop_item()) == turn[0]
    assert asyncio.run(session.get_items()) == []
    fixed = {"role": "user", "content": "My seat is 14C"}
    asyncio.run(session.add_items([fixed]))
    # every session object, in any process, replays the same view
    assert asyncio.run(RememSession("s", backend.memory, actor="alice").get_items()) == [fixed]
    assert asyncio.run(RememSession("other", backend.memory, actor="alice").get_items()) == []
    # hidden, never erased: the event log still holds the popped turn
    assert texts_in_log(backend, "s") == ["My seat is 12A", "ok", "My seat is 14C"]


def test_an_identified_item_popped_and_added_again_is_shown_again(backend: Backend) -> None:
    said = {"id": "msg_7", "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Booked.", "annotations": []}]}  # fmt: skip
    session = RememSession("s", backend.memory, actor="alice")
    asyncio.run(session.add_items([{"role": "user", "content": "book it"}, said]))
    assert asyncio.run(session.pop_item()) == said
    asyncio.run(session.add_items([said]))  # the same event id: stored once, shown again
    assert asyncio.run(session.get_items())[-1] == said
    assert len(texts_in_log(backend, "s")) == 2


def test_clear_session_hides_every_item_so_far_and_erases_nothing(backend: Backend) -> None:
    session = RememSession("s", backend.memory, actor="alice")
    asyncio.run(session.add_items([{"role": "user", "content": "one"}]))
    asyncio.run(session.add_items([{"role": "user", "content": "two"}]))
    asyncio.run(session.pop_item())
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    asyncio.run(session.clear_session())  # again: nothing more to hide
    later = {"role": "user", "content": "three"}
    asyncio.run(RememSession("s", backend.memory, actor="alice").add_items([later]))
    assert asyncio.run(session.get_items()) == [later]
    assert texts_in_log(backend, "s") == ["one", "two", "three"]


def test_the_forget_tool_erases_one_of_the_actors_memories(backend: Backend) -> None:
    from agents.tool_context import ToolContext

    tools = {t.name: t for t in memory_tools(backend.memory, actor="alice")}
    assert set(tools) == {"remember", "recall", "forget"}
    mine = backend.reader.remember(actor="alice", text="Alice's locker code hint is blue")
    bobs = backend.reader.remember(actor="bob", text="Bob's locker is red")

    def invoke(name: str, **args: Any) -> str:
        raw = json.dumps(args)
        ctx = ToolContext(context=None, tool_name=name, tool_call_id="c", tool_arguments=raw)
        return str(asyncio.run(tools[name].on_invoke_tool(ctx, raw)))

    assert "verified" in invoke("forget", record_id=mine.id)
    assert [r.id for r in backend.reader.records(actor="alice", all=True)] == []
    refused = invoke("forget", record_id=bobs.id)  # the SDK hands the error to the model
    assert "no memory" in refused and backend.reader.get(bobs.id).id == bobs.id


def test_a_secret_in_an_item_is_kept_only_redacted(backend: Backend) -> None:
    session = RememSession("s", backend.memory, actor="alice")
    asyncio.run(session.add_items([{"role": "user", "content": "my password is hunter2x7"}]))
    (item,) = asyncio.run(session.get_items())
    assert "hunter2x7" not in json.dumps(item) and "[REDACTED:password]" in item["content"]
