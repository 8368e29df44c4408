"""AutoGen on remem: `RememMemory`, an `autogen_core.memory.Memory` that an
AutoGen `AssistantAgent` queries before each model call.

    from autogen_agentchat.agents import AssistantAgent
    from remem import Memory
    from remem.integrations.autogen import RememMemory

    memory = RememMemory(Memory.open("memory.db"), actor="alice")
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])

The memory is bound to one remem actor (a `Client` is bound by its key as well):
every call reads and writes that actor's memory only. The mapping:

| AutoGen                         | remem                                               |
|---------------------------------|-----------------------------------------------------|
| `add(MemoryContent)`            | `remember`: an explicit statement, confirmed at once |
|                                 | `MemoryContent.metadata` as the record's metadata    |
| `query(text or MemoryContent)`  | `recall` in the actor's scope, `k` items; the        |
|                                 | memory's or the call's `metadata=` filter            |
| `update_context(model_context)` | `recall` on the last user message; the items as one  |
|                                 | `SystemMessage`, as AutoGen's `ListMemory` adds them |
| `clear()`                       | refused: `ErasureUnsupported`                        |
| `close()`                       | nothing (the memory or client stays the caller's)    |
| `forget(memory_id)` (remem's)   | erases one of the actor's records, verified          |

- `add` takes text (`text/plain`, `text/markdown`) and JSON (`application/json`, a
  dict written with sorted keys); an image or bytes is refused with `InvalidInput`:
  remem remembers text. A secret is refused with `RefusedContent` (nothing is
  written); the same statement again is the same record (with the metadata it
  was first stored with).
- `MemoryContent.metadata` becomes the record's metadata (`remem.policy.metadata`:
  a JSON object, bounded, keys checked; a secret in it is refused with
  `RefusedContent`, a bad one with `InvalidInput`, and nothing is written).
- `query` and `update_context` return each item as a `MemoryContent` whose metadata
  holds the record's metadata and then its id, kind, status, score, flags and
  source date (these names win); pinned fields come first, then records (raw
  events too with `include_events=True`). `metadata={"topic": "pets"}` (on the
  memory, for every query, or on one `query` call) keeps only the records whose
  metadata has those values (equality on top-level keys).
- `forget` is an agent's tool as it is: `AssistantAgent(..., tools=[memory.forget])`.
- `clear()` is refused rather than mapped: AutoGen calls it to empty a list, and
  the remem equivalent is the erasure of everything the actor has, which is
  `Memory.forget(actor=...)` (or `Client.forget(actor=...)`), asked for by name.
- The conversation itself is not stored: AutoGen's `Memory` has no hook for the
  turns. Write them with `add_events` to have remem extract from them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from remem.errors import InvalidInput
from remem.integrations.common import (
    Backend,
    ErasureUnsupported,
    backend,
    checked_k,
    forget_own,
    framework_missing,
    item_metadata,
    recalled,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import PacketItem
from remem.policy.metadata import check_filter
from remem.policy.scope import check_name

try:
    from autogen_core import CancellationToken
    from autogen_core.memory import Memory as AutoGenMemory
    from autogen_core.memory import (
        MemoryContent,
        MemoryMimeType,
        MemoryQueryResult,
        UpdateContextResult,
    )
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import SystemMessage, UserMessage
except ImportError as exc:  # pragma: no cover - the message is the point
    raise framework_missing("autogen", "AutoGen", "autogen-core", exc) from exc

__all__ = ["ErasureUnsupported", "RememMemory"]

TEXT_TYPES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value}
HEADER = "Relevant memories of the user (from remem), most relevant first:"


class RememMemory(AutoGenMemory):
    """AutoGen's `Memory` on one actor of a `Memory`, an `AsyncMemory` or a `Client`;
    see the module docstring for the mapping."""

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        actor: str,
        k: int = 5,
        include_events: bool = False,
        metadata: Mapping[str, Any] | None = None,
        name: str = "remem",
    ) -> None:
        """`k`: the most items a query returns (1 to 1000); `include_events`: whether
        raw events that match (not yet extracted) come back beside records; `metadata`:
        the filter every query applies (records whose metadata has these values)."""
        self._mem, _ = backend(memory)
        self.actor = check_name("actor", actor)
        self.k = checked_k(k)
        self.include_events = include_events
        self.metadata = _filter(metadata)
        self.name = name

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Remember the content's text as the actor's explicit statement, with its
        metadata as the record's."""
        text = _text(content)
        meta = content.metadata or None  # _text checked it is a MemoryContent
        await asyncio.to_thread(self._mem.remember, actor=self.actor, text=text, metadata=meta)

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The actor's memories that matter for `query`, most relevant first (`k=` and
        `metadata=` override the memory's own)."""
        text = query if isinstance(query, str) else _text(query)
        k = checked_k(kwargs.get("k", self.k))
        wanted = _filter(kwargs["metadata"]) if "metadata" in kwargs else self.metadata
        if not text.strip():
            return MemoryQueryResult(results=[])
        items = await asyncio.to_thread(
            recalled, self._mem, self.actor, text, k, self.include_events, wanted
        )
        return MemoryQueryResult(results=[_content(i) for i in items])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall on the last user message and add what comes back to the model
        context as one `SystemMessage` (nothing is added when nothing comes back)."""
        messages = await model_context.get_messages()
        asked = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        query = "" if asked is None else _said(asked.content)
        found = await self.query(query)
        if found.results:
            said = [c.content for c in found.results if isinstance(c.content, str)]
            lines = [f"{i}. {text}" for i, text in enumerate(said, 1)]
            await model_context.add_message(SystemMessage(content="\n".join([HEADER, *lines])))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Refused: see the module docstring."""
        raise ErasureUnsupported(
            "RememMemory.clear() would erase everything actor "
            f"{self.actor!r} has; ask for that by name with forget(actor=...) on the "
            "Memory or Client, or erase one memory with RememMemory.forget(memory_id)"
        )

    async def close(self) -> None:
        """Nothing to release: the memory or client stays the caller's to close."""

    async def forget(self, memory_id: str) -> str:
        """Erase one of the actor's memories by the id a query returned, verified;
        `NotFound` when the actor has no such memory."""
        report = await asyncio.to_thread(
            forget_own, self._mem, actor=self.actor, record_id=memory_id
        )
        return f"forgot {memory_id} (deletion job {report.job_id}, verified)"


def _text(content: object) -> str:
    """The text remem remembers of a `MemoryContent`, or InvalidInput."""
    if not isinstance(content, MemoryContent):
        raise InvalidInput(f"a memory must be a MemoryContent; got {type(content).__name__}")
    mime = content.mime_type
    mime = mime.value if isinstance(mime, MemoryMimeType) else str(mime)
    value = content.content
    if mime == MemoryMimeType.JSON.value and isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if mime in TEXT_TYPES | {MemoryMimeType.JSON.value} and isinstance(value, str):
        if not value.strip():
            raise InvalidInput("the memory has no text to remember")
        return value
    raise InvalidInput(
        f"remem remembers text: a {mime} memory of {type(value).__name__} is refused; "
        "use text/plain, text/markdown or application/json"
    )


def _filter(value: object) -> dict[str, Any] | None:
    """A metadata filter (None for none), or InvalidInput before anything is read."""
    if value is None:
        return None
    return dict(check_filter(value)) or None


def _said(content: object) -> str:
    """The text of a user message (its string parts when it is a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p for p in content if isinstance(p, str))
    return ""


def _content(item: PacketItem) -> MemoryContent:
    return MemoryContent(
        content=item.text, mime_type=MemoryMimeType.TEXT, metadata=item_metadata(item)
    )
