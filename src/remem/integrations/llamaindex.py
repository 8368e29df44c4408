"""LlamaIndex on remem: `RememMemoryBlock`, a memory block
(`llama_index.core.memory.BaseMemoryBlock`) of LlamaIndex's `Memory`, the memory its
agents and chat engines read before each model call and flush old turns into.

    from llama_index.core.memory import Memory as ChatMemory
    from remem import Memory
    from remem.integrations.llamaindex import RememMemoryBlock

    block = RememMemoryBlock(Memory.open("memory.db"), actor="alice")
    memory = ChatMemory.from_defaults(session_id="trip", memory_blocks=[block])
    response = await agent.run("Which seat do I like?", memory=memory)

The block is bound to one remem actor (a `Client` is bound by its key as well):
every call reads and writes that actor's memory only. LlamaIndex keeps the recent
turns itself (its short-term chat history); the block is the long-term part. The
mapping:

| LlamaIndex                        | remem                                                 |
|-----------------------------------|-------------------------------------------------------|
| `aget(messages)` (before a model  | `recall` on the last user message in the actor's      |
| call)                             | scope; the items as text, which `Memory` puts in the  |
|                                   | system message under the block's name                 |
| `aput(messages)` (turns flushed   | each message with text is one event of the actor's    |
| out of the short-term history)    | session (LlamaIndex's `session_id`), which remem's    |
|                                   | extraction then reads                                 |
| `atruncate`                       | LlamaIndex's own: drops the block's text when over    |
|                                   | the token limit (`priority=0`, the default: never)    |
| a message's `additional_kwargs`   | kept in its event's metadata (`{"llamaindex": ...}`)  |
| `RememMemoryBlock(metadata=)`     | the filter of every recall: records whose metadata    |
|                                   | has those values                                      |
| `remember(text, metadata)`        | `remember`: an explicit statement, confirmed at once, |
| (remem's)                         | with `metadata` as the record's                       |
| `forget(memory_id)` (remem's)     | erases one of the actor's records, verified           |

- A flushed message's text is its text blocks (a tool call as `name(arguments)`);
  a system message is not stored (it is the application's prompt, not the
  conversation), nor a message without text. Each call stores each message once,
  under a new id: LlamaIndex archives what it flushes and never flushes it again.
  A secret in a message is kept only redacted, as in any event.
- `remember` refuses a secret with `RefusedContent` (nothing is written), in the
  text or in the metadata (`remem.policy.metadata`: a JSON object, bounded, keys
  checked; a bad one is refused with `InvalidInput`).
- Recall's items are rendered one per line as `- text`, pinned fields first; with
  `include_events=True` raw events that match (not yet extracted) come too.
  Nothing is returned for an empty query, or when nothing matches (the block
  then adds nothing to the prompt).
- A message's `additional_kwargs` (but `session_id`, its event's session, and
  `tool_calls`, part of its text) go into its event's metadata as
  `{"llamaindex": {"block": ..., "position": ..., "additional_kwargs": {...}}}`,
  at most `MAX_KWARGS_BYTES` of JSON a message (more is refused with
  `InvalidInput`, and nothing of the batch is stored); a secret there is kept
  only redacted, as in any event. Events' metadata is no record's: a record
  remem extracts from the turns has none of it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from uuid import uuid4

from remem.errors import InvalidInput
from remem.integrations.common import (
    Backend,
    backend,
    checked_k,
    forget_own,
    framework_missing,
    listed,
    recalled,
    stable_id,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import Record
from remem.policy.metadata import check_filter
from remem.policy.scope import check_name
from remem.policy.text import check_json
from remem.writes.checks import MAX_EVENT_CHARS

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
    from llama_index.core.memory import BaseMemoryBlock
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - the message is the point
    raise framework_missing("llamaindex", "LlamaIndex", "llama-index-core", exc) from exc

__all__ = ["RememMemoryBlock"]

DEFAULT_SESSION = "llamaindex"  # the remem session of messages put without a session id
MAX_KWARGS_BYTES = 4 * 1024  # a message's additional_kwargs, as JSON, in its event
ROLES = {MessageRole.USER: "user", MessageRole.TOOL: "tool", MessageRole.FUNCTION: "tool"}


class RememMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block on one actor of a `Memory`, an `AsyncMemory` or a
    `Client`; see the module docstring for the mapping."""

    actor: str
    k: int = 5
    include_events: bool = False
    metadata: dict[str, Any] | None = None
    _mem: Any = PrivateAttr()
    _clock: Any = PrivateAttr()

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        actor: str,
        k: int = 5,
        include_events: bool = False,
        metadata: Mapping[str, Any] | None = None,
        name: str = "remem",
        description: str | None = "What is known about the user, from remem",
        **fields: Any,
    ) -> None:
        """`k`: the most items a recall hands back (1 to 1000); `metadata`: the filter
        of every recall (records whose metadata has these values); `fields`:
        LlamaIndex's own (`priority`, `accept_short_term_memory`)."""
        own: dict[str, Any] = {
            "actor": check_name("actor", actor),
            "k": checked_k(k),
            "include_events": include_events,
            "metadata": dict(check_filter(metadata)) or None,
        }
        super().__init__(name=name, description=description, **own, **fields)
        self._mem, self._clock = backend(memory)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The actor's memories for the last user message, one per line ("" for none)."""
        asked = next((m for m in reversed(messages or []) if m.role == MessageRole.USER), None)
        query = "" if asked is None else _text(asked)
        if not query.strip():
            return ""
        items = await asyncio.to_thread(
            recalled, self._mem, self.actor, query, self.k, self.include_events, self.metadata
        )
        return "\n".join(f"- {item.text}" for item in items)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Append the messages (turns LlamaIndex flushed) to the actor's events."""
        rows: list[dict[str, Any]] = []
        now = self._clock()
        for i, message in enumerate(listed("messages", messages)):
            if not isinstance(message, ChatMessage):
                raise InvalidInput(f"a message must be a ChatMessage; got {type(message).__name__}")
            text = _text(message)
            if message.role == MessageRole.SYSTEM or not text.strip():
                continue
            session = check_name(
                "session", str(message.additional_kwargs.get("session_id") or DEFAULT_SESSION)
            )
            about: dict[str, Any] = {"block": self.name, "position": i}
            kwargs = _kwargs(message, i)
            if kwargs:
                about["additional_kwargs"] = kwargs
            rows.append(
                {
                    "actor": self.actor,
                    "session": session,
                    "role": ROLES.get(message.role, "assistant"),
                    "text": text[:MAX_EVENT_CHARS],
                    "event_id": stable_id("llamaindex", self.actor, session, uuid4().hex),
                    "time": now + timedelta(microseconds=len(rows)),
                    "metadata": {"llamaindex": about},
                }
            )
        if rows:
            await asyncio.to_thread(self._mem.add_events, rows)

    async def remember(self, text: str, metadata: Mapping[str, Any] | None = None) -> Record:
        """Remember `text` as the actor's explicit statement, confirmed at once, with
        `metadata` as the record's."""
        return await asyncio.to_thread(
            self._mem.remember, actor=self.actor, text=text, metadata=metadata
        )

    async def forget(self, memory_id: str) -> str:
        """Erase one of the actor's memories by its id, verified; `NotFound` when the
        actor has no such memory."""
        report = await asyncio.to_thread(
            forget_own, self._mem, actor=self.actor, record_id=memory_id
        )
        return f"forgot {memory_id} (deletion job {report.job_id}, verified)"


def _kwargs(message: ChatMessage, i: int) -> dict[str, Any]:
    """A message's `additional_kwargs` but those mapped elsewhere, checked as JSON of
    at most `MAX_KWARGS_BYTES`."""
    kept = {
        k: v for k, v in message.additional_kwargs.items() if k not in ("session_id", "tool_calls")
    }
    if kept:
        check_json(f"additional_kwargs of message {i}", kept, max_bytes=MAX_KWARGS_BYTES)
    return kept


def _text(message: ChatMessage) -> str:
    """What remem reads of a message: its text blocks, and its tool calls as
    `name(arguments)`."""
    parts = [b.text for b in message.blocks if isinstance(b, TextBlock)]
    for call in message.additional_kwargs.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            args = function.get("arguments")
            shown_args = args if isinstance(args, str) else json.dumps(args, sort_keys=True)
            parts.append(f"{function.get('name')}({shown_args})")
    return "\n".join(p for p in parts if p.strip())
