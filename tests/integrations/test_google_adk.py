"""`RememMemoryService` against the real Google ADK: an ADK `Runner` drives an
`LlmAgent` whose model is a scripted `BaseLlm` (ADK's own model extension point),
with ADK's in-memory session service and its `load_memory` tool, on every backend
(`tests/integrations/conftest.py`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models._capabilities import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.tools import load_memory
from google.genai import types
from pydantic import Field

from remem import InvalidInput, Memory, NotFound, RefusedContent
from remem.errors import Forbidden
from remem.integrations.google_adk import ErasureUnsupported, RememMemoryService
from tests.support.adapters import APP, Backend, settle, stored, user_says
from tests.support.clock import Clock


@pytest.fixture
def clock() -> Clock:
    """ADK dates its events by the wall clock; the memory's clock must not lag behind it
    (recall leaves out events dated after its now)."""
    return Clock(datetime.now(UTC) + timedelta(minutes=5))


class ScriptedLlm(BaseLlm):
    """Calls `load_memory` when asked a question, answers with what it returned, and
    acknowledges anything else; keeps every request it was given."""

    model: str = "scripted"
    requests: list[LlmRequest] = Field(default_factory=list)

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        last = llm_request.contents[-1]
        answers = [p.function_response for p in last.parts or () if p.function_response]
        said = " ".join(p.text for p in last.parts or () if p.text)
        if answers:
            part = types.Part(text="From memory: " + json.dumps(answers[0].response, default=str))
        elif said.endswith("?"):
            call = types.FunctionCall(name="load_memory", args={"query": said})
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="Noted.")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def turn(runner: Runner, session: Session, text: str) -> str:
    """One user turn; the agent's last text."""
    out = ""
    async for event in runner.run_async(
        user_id=session.user_id, session_id=session.id, new_message=user_says(text)
    ):
        if event.content and event.content.parts and event.content.parts[0].text:
            out = event.content.parts[0].text
    return out


def test_a_runner_adds_its_session_to_memory_and_loads_it_in_the_next(backend: Backend) -> None:
    service = RememMemoryService(backend.memory, include_events=False)  # records only
    model = ScriptedLlm()
    agent = LlmAgent(name="assistant", model=model, tools=[load_memory])
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=service)

    async def first() -> Session:
        s = await sessions.create_session(app_name=APP, user_id="alice")
        assert await turn(runner, s, "I prefer aisle seats on long flights.") == "Noted."
        done = await sessions.get_session(app_name=APP, user_id="alice", session_id=s.id)
        assert done is not None
        await service.add_session_to_memory(done)
        await service.add_session_to_memory(done)  # again: nothing is stored twice
        return done

    done = asyncio.run(first())
    assert [e["role"] for e in stored(backend, done.id)] == ["user", "assistant"]
    # a search that includes raw events finds what was said, extracted or not yet
    raw = RememMemoryService(backend.memory).search_memory
    found = asyncio.run(raw(app_name=APP, user_id="alice", query="aisle seats"))
    top = found.memories[0]
    assert top.custom_metadata["kind"] in ("event", "preference")
    assert "aisle seats" in str((top.content.parts or [])[0].text)
    settle(backend)
    records = backend.reader.records(actor="alice")
    assert [r.text for r in records] == ["Prefers aisle seats on long flights"]

    async def second() -> str:
        s = await sessions.create_session(app_name=APP, user_id="alice")
        return await turn(runner, s, "Which seat do I like?")

    answer = asyncio.run(second())
    assert answer.startswith("From memory:") and "Prefers aisle seats" in answer
    # the tool's answer reached the model, with the record's id
    seen = model.requests[-1].contents[-1].parts[0].function_response
    assert seen is not None and records[0].id in json.dumps(seen.response, default=str)


def test_events_are_a_delta_stored_once_with_their_metadata(backend: Backend) -> None:
    service = RememMemoryService(backend.memory)
    now = datetime.now(UTC).timestamp()
    events = [
        Event(id="e1", author="user", timestamp=now - 2, content=user_says("I live in Lyon")),
        Event(id="e2", author="assistant", timestamp=now - 1,
              content=types.Content(role="model", parts=[types.Part(text="Nice city")])),
        Event(id="e3", author="assistant", timestamp=now - 1),  # no content: nothing to keep
    ]  # fmt: skip
    add = service.add_events_to_memory
    meta = {"channel": "web"}
    asyncio.run(add(app_name=APP, user_id="alice", events=events[:2], custom_metadata=meta))
    asyncio.run(add(app_name=APP, user_id="alice", events=events, custom_metadata=meta))
    rows = stored(backend, "adk")
    assert len(rows) == 2
    first = rows[0]
    assert first["text"] == "I live in Lyon" and first["metadata"]["channel"] == "web"
    assert first["metadata"]["adk"]["app_name"] == APP
    assert first["metadata"]["adk"]["event_id"] == "e1"


def test_add_memory_writes_confirmed_and_refuses_a_secret(backend: Backend) -> None:
    service = RememMemoryService(backend.memory)
    entry = MemoryEntry(content=user_says("Alice's dog is called Rex"))
    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[entry]))
    (rec,) = backend.reader.records(actor="alice")
    assert rec.text == "Alice's dog is called Rex" and rec.authority.value == "confirmed"
    secret = MemoryEntry(content=user_says("my password is hunter2x7"))
    fine = MemoryEntry(content=user_says("Alice's cat is called Tom"))
    with pytest.raises(RefusedContent, match="memory 1"):  # none of the batch is written
        asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[fine, secret]))
    assert [r.id for r in backend.reader.records(actor="alice", all=True)] == [rec.id]
    # a text where an entry goes: a clear error (an AttributeError before), nothing written
    with pytest.raises(InvalidInput, match=r"memories\[1\] must be a MemoryEntry"):
        asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[fine, "x"]))  # type: ignore[list-item]
    assert [r.id for r in backend.reader.records(actor="alice", all=True)] == [rec.id]
    # in an event, a secret is kept only redacted
    leak = Event(id="e9", author="user", content=user_says("my password is hunter2x7"))
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="alice", events=[leak]))
    (event,) = stored(backend)
    assert "hunter2x7" not in event["text"] and "[REDACTED:password]" in event["text"]


def test_delete_memory_erases_a_record_verified_and_refuses_what_it_cannot(
    backend: Backend,
) -> None:
    service = RememMemoryService(backend.memory)
    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[
        MemoryEntry(content=user_says("Alice's gate code is the blue door"))]))  # fmt: skip
    backend.reader.remember(actor="bob", text="Bob plays the cello")
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="alice", events=[
        Event(id="e1", author="user", content=user_says("the blue door is new"))]))  # fmt: skip

    found = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="blue door"))
    kinds = {m.custom_metadata["kind"]: m for m in found.memories}
    assert set(kinds) == {"semantic", "event"}
    record, event = kinds["semantic"], kinds["event"]
    assert record.id is not None and event.id is not None

    with pytest.raises(ErasureUnsupported, match="raw event"):
        asyncio.run(service.delete_memory(app_name=APP, user_id="alice", memory_id=event.id))
    (bobs,) = backend.reader.records(actor="bob")
    with pytest.raises(NotFound):  # another user's record is not this user's to erase
        asyncio.run(service.delete_memory(app_name=APP, user_id="alice", memory_id=bobs.id))
    assert backend.reader.get(bobs.id).text == "Bob plays the cello"

    asyncio.run(service.delete_memory(app_name=APP, user_id="alice", memory_id=record.id))
    with pytest.raises(NotFound):
        backend.reader.get(record.id)
    again = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="blue door"))
    assert record.id not in [m.id for m in again.memories]
    if isinstance(backend.reader, Memory):
        (job,) = backend.reader.deletions()
        assert job["result"]["verified"] and job["key"] == record.id


def test_a_service_bound_to_one_user_cannot_read_another(backend: Backend) -> None:
    backend.reader.remember(actor="bob", text="Bob plays the cello")
    bound = RememMemoryService(backend.memory, user_id="alice")
    with pytest.raises(Forbidden):
        asyncio.run(bound.search_memory(app_name=APP, user_id="bob", query="cello"))
    if backend.server is not None:
        # against a server, the key is the principal: an alice key reads alice only
        unbound = RememMemoryService(backend.server.client("alice"))
        with pytest.raises(Forbidden):
            asyncio.run(unbound.search_memory(app_name=APP, user_id="bob", query="cello"))
        mine = asyncio.run(unbound.search_memory(app_name=APP, user_id="alice", query="cello"))
        assert mine.memories == []


# -- behaving natively (issue 40 item 4) -----------------------------------------------


def test_a_search_finds_what_was_said_as_a_record_without_a_process_step(
    backend: Backend,
) -> None:
    service = RememMemoryService(backend.memory, include_events=False)  # records only
    said = Event(id="p1", author="user", timestamp=datetime.now(UTC).timestamp(),
                 content=user_says("I prefer aisle seats on long flights."))  # fmt: skip
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="alice", events=[said]))
    if backend.server is not None:
        settle(backend)  # waits for the server's own worker; runs nothing
    found = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="aisle seat"))
    texts = [str((m.content.parts or [])[0].text) for m in found.memories]
    assert texts == ["Prefers aisle seats on long flights"]
    assert found.memories[0].custom_metadata["kind"] == "preference"


def test_custom_metadata_is_kept_on_records_and_comes_back_from_search(
    backend: Backend,
) -> None:
    service = RememMemoryService(backend.memory)
    entry = MemoryEntry(content=user_says("Alice's dog is called Rex"),
                        custom_metadata={"topic": "pets", "kind": "theirs"})  # fmt: skip
    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[entry],
                                   custom_metadata={"channel": "web", "topic": "x"}))  # fmt: skip
    (rec,) = backend.reader.records(actor="alice")
    want = {"channel": "web", "topic": "pets", "kind": "theirs", "adk": {"app_name": APP}}
    assert rec.metadata == want
    found = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="dog Rex"))
    meta = found.memories[0].custom_metadata
    assert meta["topic"] == "pets" and meta["channel"] == "web"
    assert meta["kind"] == "semantic"  # remem's names win over the application's
    bad = [
        MemoryEntry(content=user_says("Alice's cat is Tom"), custom_metadata={"ok": 1}),
        MemoryEntry(content=user_says("Alice's fish is Bo"), custom_metadata={"pin": "zwj\u200d"}),
        MemoryEntry(content=user_says("Alice's bird is Ki"), custom_metadata={"pa\u200bss": 1}),
    ]
    with pytest.raises(InvalidInput, match="metadata of memory 2 key"):
        asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=bad))
    leak = MemoryEntry(content=user_says("Alice's cat is Tom"),
                       custom_metadata={"password": "hunter2-Horse"})  # fmt: skip
    with pytest.raises(RefusedContent, match="metadata of memory 0"):
        asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[leak]))
    assert [r.id for r in backend.reader.records(actor="alice", all=True)] == [rec.id]


def test_the_save_turn_callback_saves_each_turn_for_the_next_session(backend: Backend) -> None:
    service = RememMemoryService(backend.memory, include_events=False)  # records only
    model = ScriptedLlm()
    agent = LlmAgent(name="assistant", model=model, tools=[load_memory],
                     after_agent_callback=service.save_turn)  # fmt: skip
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=service)

    async def ask(text: str) -> str:
        session = await sessions.create_session(app_name=APP, user_id="alice")
        return await turn(runner, session, text)

    assert asyncio.run(ask("I prefer aisle seats on long flights.")) == "Noted."
    if backend.server is not None:
        settle(backend)  # waits for the server's own worker; runs nothing
    answer = asyncio.run(ask("Which seat do I like?"))  # no add_session_to_memory, no process()
    assert answer.startswith("From memory:") and "Prefers aisle seats" in answer
    rows = stored(backend)
    assert [r["role"] for r in rows][:2] == ["user", "assistant"]
    assert rows[0]["text"] == "I prefer aisle seats on long flights."
