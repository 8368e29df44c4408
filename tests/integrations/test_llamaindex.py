"""`RememMemoryBlock` against the real LlamaIndex: its `Memory` (short-term chat
history plus memory blocks) under its `SimpleChatEngine`, whose model is a LlamaIndex
`CustomLLM` that sends each chat over HTTP to a scripted OpenAI-compatible server on
loopback (`ScriptedLLM`; llama-index-llms-openai pins openai<3, which remem's [llm]
extra is past), on every backend (`tests/integrations/conftest.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import openai
import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
)
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import CustomLLM
from llama_index.core.memory import Memory as ChatMemory
from sqlalchemy.ext.asyncio import create_async_engine

from remem import NotFound, RefusedContent
from remem.errors import Forbidden, InvalidInput
from remem.integrations.llamaindex import RememMemoryBlock
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.adapters import Backend, settle, stored


class OpenAICompatible(CustomLLM):
    """A LlamaIndex LLM on any OpenAI-compatible chat-completions endpoint."""

    base_url: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True, model_name="fake-model")

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        with openai.OpenAI(base_url=self.base_url, api_key="test", max_retries=0) as client:
            done = client.chat.completions.create(
                model="fake-model",
                messages=[{"role": m.role.value, "content": m.content or ""} for m in messages],  # type: ignore[misc]
            )
        said = done.choices[0].message.content or ""
        return ChatResponse(message=ChatMessage(role="assistant", content=said))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await asyncio.to_thread(self.chat, messages)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("the chat engine chats")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError("the chat engine chats")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(lambda request: Reply.text("Noted.")) as server:
        yield server


def chat(
    llm: ScriptedLLM,
    block: RememMemoryBlock,
    turns: list[str],
    session: str = "trip",
    **limits: Any,
) -> list[str]:
    """A chat engine with a LlamaIndex `Memory` holding the block answers each turn
    in one event loop; its chat store (SQLite in memory, aiosqlite) is closed after."""

    async def go() -> list[str]:
        store = create_async_engine("sqlite+aiosqlite:///:memory:")
        try:
            memory = ChatMemory.from_defaults(session_id=session, memory_blocks=[block],
                                              async_engine=store, **limits)  # fmt: skip
            llm_ = OpenAICompatible(base_url=llm.base_url)
            engine = SimpleChatEngine.from_defaults(llm=llm_, memory=memory)
            return [str(await engine.achat(turn)) for turn in turns]
        finally:
            await store.dispose()

    return asyncio.run(go())


def system_prompt(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def test_the_chat_engine_is_shown_what_remem_recalls_for_its_user(
    backend: Backend, llm: ScriptedLLM
) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    asyncio.run(block.remember("Alice prefers aisle seats on long flights"))
    backend.reader.remember(actor="bob", text="Bob prefers window seats on long flights")

    assert chat(llm, block, ["Which seat do I like on long flights?"]) == ["Noted."]
    (request,) = llm.requests
    shown = system_prompt(request)
    assert "<remem>" in shown and "- Alice prefers aisle seats on long flights" in shown
    assert "window" not in str(request["messages"])  # bob's memory is not alice's


def test_flushed_turns_become_events_remem_extracts_and_a_later_chat_recalls(
    backend: Backend, llm: ScriptedLLM
) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    # a short-term history of ~20 tokens: older turns are flushed into the block
    turns = ["I prefer aisle seats on long flights.", "I am flying to Lisbon in May.",
             "Please book the hotel near the venue."]  # fmt: skip
    chat(llm, block, turns, token_limit=40, chat_history_token_ratio=0.5, token_flush_size=10)
    said = [(e["role"], e["text"]) for e in stored(backend, session="trip")]
    # the two oldest turns left the ~20-token history (the test's clock stands still,
    # and the log orders the events of one instant by id: compared sorted)
    assert sorted(said) == sorted([("user", turns[0]), ("assistant", "Noted."),
                                   ("user", turns[1]), ("assistant", "Noted.")])  # fmt: skip
    settle(backend)
    assert "Prefers aisle seats on long flights" in [
        r.text for r in backend.reader.records(actor="alice")
    ]

    # a new session (no short-term history): the block brings the extracted record
    later = RememMemoryBlock(backend.memory, actor="alice")
    chat(llm, later, ["Which seat do I like?"], session="later")
    assert "Prefers aisle seats on long flights" in system_prompt(llm.requests[-1])


def test_remember_refuses_a_secret_and_forget_erases_the_actors_record(backend: Backend) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    with pytest.raises(RefusedContent):
        asyncio.run(block.remember("my password is hunter2x7"))
    assert backend.reader.records(actor="alice", all=True) == []
    rec = asyncio.run(block.remember("Alice's dog is called Rex"))
    said = asyncio.run(block.forget(rec.id))
    assert said.startswith(f"forgot {rec.id}") and "verified" in said
    with pytest.raises(NotFound):
        backend.reader.get(rec.id)
    got = asyncio.run(block.aget([ChatMessage(role="user", content="what is my dog called?")]))
    assert "Rex" not in got


def test_a_secret_in_a_flushed_turn_is_kept_only_redacted(backend: Backend) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    leak = [ChatMessage(role="user", content="my password is hunter2x7"),
            ChatMessage(role="system", content="You are a travel agent."),
            ChatMessage(role="assistant", content="")]  # fmt: skip
    asyncio.run(block.aput(leak, from_short_term_memory=True, session_id="trip"))
    (event,) = backend.reader.events(actor="alice")
    text = event["text"] if isinstance(event, dict) else event.text
    assert "hunter2x7" not in text and "[REDACTED:password]" in text


def test_a_block_reads_and_erases_only_its_own_actor(backend: Backend) -> None:
    bobs = backend.reader.remember(actor="bob", text="Bob plays the cello")
    block = RememMemoryBlock(backend.memory, actor="alice")
    asked = [ChatMessage(role="user", content="who plays the cello?")]
    assert asyncio.run(block.aget(asked)) == ""
    with pytest.raises(NotFound):
        asyncio.run(block.forget(bobs.id))
    assert backend.reader.get(bobs.id).text == "Bob plays the cello"
    if backend.server is not None:
        # against a server, the key is the principal: an alice key reads alice only
        stray = RememMemoryBlock(backend.server.client("alice"), actor="bob")
        with pytest.raises(Forbidden):
            asyncio.run(stray.aget(asked))


def test_a_batch_with_a_stranger_in_it_stores_nothing(backend: Backend) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    batch: Any = [ChatMessage(role="user", content="I like tea"), {"role": "user"}]
    with pytest.raises(InvalidInput, match="ChatMessage"):
        asyncio.run(block.aput(batch))
    with pytest.raises(InvalidInput, match="must be a list"):
        asyncio.run(block.aput("I like tea"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="k must be"):
        RememMemoryBlock(backend.memory, actor="alice", k=0)
    assert backend.reader.events(actor="alice") == []


def test_remember_keeps_metadata_and_a_block_with_a_filter_recalls_only_those(
    backend: Backend,
) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    pets = {"topic": "pets", "source": {"app": "chat"}}
    dog = asyncio.run(block.remember("Alice's dog is called Rex", metadata=pets))
    asyncio.run(block.remember("Alice's car is a red Fiat", metadata={"topic": "cars"}))
    assert backend.reader.get(dog.id).metadata == pets
    asked = [ChatMessage(role="user", content="what are Alice's dog and car called?")]
    both = asyncio.run(block.aget(asked))
    assert "Rex" in both and "Fiat" in both
    pets_only = RememMemoryBlock(backend.memory, actor="alice", metadata={"topic": "pets"})
    assert asyncio.run(pets_only.aget(asked)) == "- Alice's dog is called Rex"
    with pytest.raises(RefusedContent, match="metadata"):
        asyncio.run(block.remember("Alice's cat is Tom", metadata={"password": "hunter2-Horse"}))
    with pytest.raises(InvalidInput, match="metadata filter"):
        RememMemoryBlock(backend.memory, actor="alice", metadata={"topic": ["a", "list"]})
    assert len(backend.reader.records(actor="alice", all=True)) == 2


def test_a_flushed_messages_additional_kwargs_are_kept_in_its_event(backend: Backend) -> None:
    block = RememMemoryBlock(backend.memory, actor="alice")
    kwargs = {"channel": "sms", "note": "my password is hunter2x7"}
    said = ChatMessage(role="user", content="I moved to Lyon", additional_kwargs=kwargs)
    asyncio.run(block.aput([said], from_short_term_memory=True, session_id="trip"))
    (event,) = backend.reader.events(actor="alice")
    meta = event["metadata"] if isinstance(event, dict) else event.metadata
    kept = meta["llamaindex"]["additional_kwargs"]
    # LlamaIndex's own session id is the event's session, not a kwarg kept twice
    assert kept["channel"] == "sms" and "session_id" not in kept
    assert "hunter2x7" not in str(meta)  # a secret is kept only redacted, as in any event
    huge = ChatMessage(role="user", content="I like tea", additional_kwargs={"blob": "x" * 9000})
    with pytest.raises(InvalidInput, match="additional_kwargs"):
        asyncio.run(block.aput([huge], from_short_term_memory=True, session_id="trip"))
    assert len(backend.reader.events(actor="alice")) == 1
