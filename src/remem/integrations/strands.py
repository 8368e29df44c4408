"""Strands Agents on remem: `RememMemoryStore`, a Strands `MemoryStore`
(`strands.memory.types`) that its `MemoryManager` searches, writes and extracts into.

    from strands import Agent
    from strands.memory import ExtractionConfig, InvocationTrigger, MemoryManager
    from remem import Memory
    from remem.integrations.strands import RememMemoryStore

    store = RememMemoryStore(Memory.open("memory.db"), actor="alice",
                             extraction=ExtractionConfig(trigger=InvocationTrigger()))
    agent = Agent(model=model, memory_manager=MemoryManager(stores=[store],
                                                            add_tool_config=True))

The store is bound to one remem actor (a `Client` is bound by its key as well):
every call reads and writes that actor's memory only. What each method does:

- `search(query, options)`: remem's recall in the actor's scope, the very packet
  `recall(include_events=False)` hands back with `k` = `max_search_results`
  (pinned fields first, then records; raw events too with `include_events`: the
  manager stores the conversation itself as events, which would otherwise come
  back beside the records extracted from them), each with the record's own
  metadata and then its id, kind, status, score, flags and source date (these
  names win) in `metadata`. `options["metadata"]` (`RememSearchOptions`, this
  store's extension of Strands' options) keeps only the records whose metadata
  has those values (`remem.policy.metadata`: equality on top-level keys).
- `add(content, metadata)`: an explicit statement, written confirmed at once
  through `remember`, with Strands' metadata as the record's (bounded, keys
  checked; a secret in the text or the metadata is refused with
  `RefusedContent`; the same statement again is the same record, with the
  metadata it was first stored with).
- `add_messages(messages, context)`: each message is one event of the actor's
  `session` (its text blocks, a tool use as `name(input)`, a tool result's
  text), which remem's extraction then reads: the server-side extraction of
  Strands' `MemoryManager`. It returns `{"added": n}`, with `"repeated": n`
  for messages already stored (a retry) and `"empty": n` for messages with no
  text (skipped) when there are any.

  The idempotency rule: a retry (the same call again after it failed) stores
  nothing twice; a new message is always stored, whatever it repeats. With
  Strands' sequence numbers, an event id is a digest of the actor, the session,
  the `run_id`, this store object's current *run* (a random token) and the
  number. Strands re-sends a number only to retry a batch that failed, and
  restarts its numbers with each agent run, so a number this store object has
  already stored starts a new run (a new token): a second agent on the same
  store, or a new store after a restart with the same `run_id`, never has its
  messages taken for the first one's. Without sequence numbers each message
  gets a random id, and the same batch sent again right after it failed reuses
  the failed batch's ids. Either way a batch sent again after it *succeeded* is
  stored again: a repeat is kept rather than a message lost.
- `get_tools()`: `forget_memory`, which erases one of the actor's memories by
  the id a search returned, through remem's deletion job, verified.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, cast
from uuid import uuid4

from strands import tool
from strands.memory.extraction.types import ExtractionConfig
from strands.memory.types import AddMessagesContext, MemoryEntry, MemoryStore, SearchOptions
from strands.types.content import Message
from strands.types.tools import AgentTool

from remem.errors import InvalidInput
from remem.integrations.common import (
    Backend,
    backend,
    checked_k,
    forget_own,
    item_metadata,
    listed,
    recalled,
    stable_id,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import PacketItem
from remem.policy.scope import check_name
from remem.writes.checks import MAX_EVENT_CHARS

__all__ = ["RememMemoryStore", "RememSearchOptions"]


class RememSearchOptions(SearchOptions, total=False):
    """Strands' search options, and remem's metadata filter (`{"topic": "travel"}`)."""

    metadata: dict[str, Any]


class RememMemoryStore(MemoryStore):
    """A Strands `MemoryStore` on one actor of a `Memory`, an `AsyncMemory` or a
    `Client`; see the module docstring."""

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        actor: str,
        session: str = "strands",
        name: str = "remem",
        description: str | None = "What is known about the user, from remem",
        max_search_results: int = 10,
        writable: bool = True,
        extraction: ExtractionConfig | bool | None = None,
        include_events: bool = False,
        run_id: str | None = None,
    ) -> None:
        """`extraction`: Strands' extraction configuration; without an extractor the
        manager hands the conversation to `add_messages` and remem extracts from it."""
        self._mem, self._clock = backend(memory)
        self.actor = check_name("actor", actor)
        self.session = check_name("session", session)
        self.name = name
        self.description = description
        self.max_search_results = checked_k(max_search_results, "max_search_results")
        self.writable = writable
        self.extraction = extraction
        self.include_events = include_events
        self.run_id = run_id or uuid4().hex
        self._run = uuid4().hex  # this object's current run of sequence numbers
        self._numbers: set[int] = set()  # the numbers stored in that run
        self._failed: tuple[str, list[str]] | None = None  # an unnumbered batch and its ids

    async def search(self, query: str, options: SearchOptions | None = None) -> list[MemoryEntry]:
        """The actor's memories that matter for `query`, most relevant first."""
        k = (options or {}).get("max_search_results") or self.max_search_results
        k = checked_k(k, "max_search_results")
        wanted = cast(RememSearchOptions, options or {}).get("metadata")
        items = await asyncio.to_thread(
            recalled, self._mem, self.actor, query, k, self.include_events, wanted
        )
        return [_entry(item) for item in items]

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> Any:
        """Remember `content` as the actor's explicit statement, with `metadata` as the
        record's; the record's id."""
        rec = await asyncio.to_thread(
            self._mem.remember, actor=self.actor, text=content, metadata=metadata
        )
        return {"id": rec.id}

    async def add_messages(
        self, messages: list[Message], context: AddMessagesContext | None = None
    ) -> Any:
        """Append the messages to the actor's session as events, a retried batch once
        (see the module docstring for the rule); how many were added, repeated and
        empty."""
        messages = [_message(m) for m in listed("messages", messages)]
        numbers = None if context is None else context.sequence_numbers
        if numbers is not None and (
            len(numbers) != len(messages) or len(set(numbers)) != len(numbers)
        ):
            raise InvalidInput(
                f"{len(numbers)} sequence numbers for {len(messages)} messages: one each, "
                "each number once"
            )
        keys = self._keys(messages, numbers)
        now = self._clock()
        rows = []
        for i, message in enumerate(messages):
            text = _text(message)
            if not text.strip():
                continue
            about: dict[str, Any] = {"store": self.name, "run_id": self.run_id}
            if numbers is not None:
                about["seq"] = numbers[i]
            rows.append(
                {
                    "actor": self.actor,
                    "session": self.session,
                    "role": _role(message),
                    "text": text[:MAX_EVENT_CHARS],
                    "event_id": keys[i],
                    "time": now + timedelta(microseconds=i),
                    "metadata": {"strands": about},
                }
            )
        empty = len(messages) - len(rows)
        created = await asyncio.to_thread(self._mem.add_events, rows) if rows else []
        # stored: a retry of these numbers, or of this batch, is a new call
        self._failed = None
        self._numbers.update(numbers or ())
        added = sum(created)
        out = {"added": added, "repeated": len(created) - added, "empty": empty}
        return {k: n for k, n in out.items() if n or k == "added"}

    def _keys(self, messages: list[Message], numbers: Sequence[int] | None) -> list[str]:
        """The event ids of a batch, by the module docstring's rule."""
        base = ("strands", self.actor, self.session, self.run_id)
        if numbers is not None:
            if self._numbers.intersection(numbers):  # a new agent run: its own token
                self._run, self._numbers = uuid4().hex, set()
            return [stable_id(*base, self._run, str(n)) for n in numbers]
        body = json.dumps(messages, sort_keys=True, default=str)
        if self._failed is None or self._failed[0] != body:
            self._failed = (body, [stable_id(*base, uuid4().hex) for _ in messages])
        return list(self._failed[1])

    def get_tools(self) -> list[AgentTool]:
        """`forget_memory`: erase one of the actor's memories, verified."""
        mem, actor = self._mem, self.actor

        @tool
        async def forget_memory(memory_id: str) -> str:
            """Erase one memory of the user for good, when the user asks to forget it.

            Args:
                memory_id: the id of the memory, as a memory search returned it.
            """
            report = await asyncio.to_thread(forget_own, mem, actor=actor, record_id=memory_id)
            return f"forgot {memory_id} (deletion job {report.job_id}, verified)"

        return [forget_memory]


def _message(message: object) -> Message:
    """A Strands message (a dict whose content is a list of blocks), or InvalidInput: one
    of another shape would be skipped as if it had no text."""
    if not isinstance(message, Mapping):
        raise InvalidInput(f"a message must be a dict; got {type(message).__name__}")
    content = message.get("content")
    if content is not None and not isinstance(content, list):
        raise InvalidInput(
            f"a message's content must be a list of content blocks; got {type(content).__name__}"
        )
    return cast(Message, message)


def _role(message: Mapping[str, Any]) -> str:
    blocks = message.get("content") or []
    if any(isinstance(b, Mapping) and "toolResult" in b for b in blocks):
        return "tool"
    return "user" if message.get("role") == "user" else "assistant"


def _text(message: Mapping[str, Any]) -> str:
    """What remem reads of a message: text blocks, tool uses and tool results' text."""
    parts: list[str] = []
    for block in message.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block.get("toolUse"), Mapping):
            use = block["toolUse"]
            args = json.dumps(use.get("input"), ensure_ascii=False, sort_keys=True, default=str)
            parts.append(f"{use.get('name')}({args})")
        elif isinstance(block.get("toolResult"), Mapping):
            result: Sequence[Any] = block["toolResult"].get("content") or []
            parts.extend(str(c["text"]) for c in result if isinstance(c, Mapping) and "text" in c)
    return "\n".join(p for p in parts if p.strip())


def _entry(item: PacketItem) -> MemoryEntry:
    return MemoryEntry(content=item.text, metadata=item_metadata(item))
