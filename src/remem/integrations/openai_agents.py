"""The OpenAI Agents SDK on remem: `RememSession`, a session on remem's event log, and
`memory_tools`, the function tools `remember` and `recall`.

    from agents import Agent, Runner
    from remem import Memory
    from remem.integrations.openai_agents import RememSession, memory_tools

    mem = Memory.open("memory.db")
    agent = Agent(name="assistant", tools=memory_tools(mem, actor="alice"))
    session = RememSession("s1", mem, actor="alice")
    result = await Runner.run(agent, "I prefer aisle seats", session=session)

Each item is one event of (actor, session): its text is what extraction reads (a
message's text, a tool call's name and arguments, a tool's output), its metadata
holds the item exactly as given (a secret in it is kept only redacted, as in
every event).

Event ids: an item the SDK identifies (its `id`, or a tool call's or tool
output's `call_id`; never the SDK's placeholder `__fake_id__`) has an id made
from the actor, the session, that identity and the item, so the same item added
again, by any session object, is stored once. Any other item gets a random id:
two equal messages ("yes", then "yes") are two items, whichever objects add
them; only `add_items` called again with the same items right after it failed,
on the same session object, reuses the failed call's ids, so that retry stores
nothing twice.

What `get_items` replays: an event whose metadata item matches the event itself
(the role and the text the adapter derives from the item are the event's own)
comes back as that item. Any other event of the session carrying an item in its
metadata comes back from its own text, as a user message (an assistant one when
its role is assistant): never as a system or developer item, whatever the
metadata claims. Events without an item (written by other means) are left out.

Refused: `pop_item` and `clear_session` would need the erasure of one event or of
one session's events. remem's deletion job erases a record (with the text of the
events it came from, the events themselves staying) or a whole actor, and nothing
in between; so they raise `ErasureUnsupported` (a `NotImplementedError`) rather
than hide an item that would stay in the log. To erase a conversation's content,
`forget(actor=...)` erases everything of the actor, verified.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

from agents import FunctionTool, function_tool

from remem.errors import InvalidInput
from remem.integrations.common import (
    Backend,
    ErasureUnsupported,
    backend,
    event_fields,
    event_said,
    listed,
    stable_id,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.policy.dataclasses import shown
from remem.policy.scope import check_name
from remem.policy.text import MAX_METADATA_BYTES, check_json
from remem.writes.checks import MAX_EVENT_CHARS

__all__ = ["ErasureUnsupported", "RememSession", "memory_tools"]

ITEM_KEY = "openai_agents_item"  # where an event's metadata holds its item
MAX_ITEMS = 100_000  # the events of one session read back
PLACEHOLDER_ID = "__fake_id__"  # the SDK's id for the items of a non-Responses model


class RememSession:
    """An Agents SDK `Session` (`agents.memory.session`) on the event log of one remem
    actor and session; see the module docstring."""

    session_settings = None

    def __init__(
        self, session_id: str, memory: Memory | AsyncMemory | Backend, *, actor: str
    ) -> None:
        self.session_id = check_name("session", session_id)
        self.actor = check_name("actor", actor)
        self._mem, self._clock = backend(memory)
        # the time of the session's last item, once read (None inside: no item)
        self._last: tuple[datetime | None] | None = None
        self._failed: tuple[str, list[str]] | None = None  # a batch that failed, its ids

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's items in order; with `limit`, the latest `limit` of them."""
        return await asyncio.to_thread(self._items, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append items, each one event, in one transaction."""
        await asyncio.to_thread(self._add, listed("session items", items))

    async def pop_item(self) -> dict[str, Any] | None:
        """Refused (`ErasureUnsupported`): see the module docstring."""
        raise ErasureUnsupported(
            "pop_item needs the erasure of one event, which remem's deletion job does not "
            "offer (it erases a record or a whole actor: forget(actor=...))"
        )

    async def clear_session(self) -> None:
        """Refused (`ErasureUnsupported`): see the module docstring."""
        raise ErasureUnsupported(
            "clear_session needs the erasure of one session's events, which remem's deletion "
            "job does not offer; forget(actor=...) erases everything of the actor"
        )

    # -- the sync flow both coroutines run ---------------------------------------------------

    def _events(self) -> list[dict[str, Any]]:
        """The session's items in order (see the module docstring for what is replayed);
        remembers the time of the last."""
        rows = self._mem.events(actor=self.actor, session=self.session_id, limit=MAX_ITEMS)
        out = []
        last: datetime | None = None
        for row in rows:
            _, when, metadata = event_fields(row)
            if ITEM_KEY not in metadata:
                continue
            role, text = event_said(row)
            out.append(_replayed(metadata[ITEM_KEY], role, text))
            last = when
        self._last = (last,)
        return out

    def _items(self, limit: int | None) -> list[dict[str, Any]]:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidInput(f"limit must be None or an integer of 0 or more; got {shown(limit)}")
        items = self._events()
        return items if limit is None else items[len(items) - limit :] if limit else []

    def _add(self, items: list[Any]) -> None:
        if not items:
            return
        if self._last is None:
            self._events()
        assert self._last is not None
        (last,) = self._last
        now = self._clock()
        if last is not None and now <= last:
            now = last + timedelta(microseconds=1)  # an item never sorts before the last
        plain = [_plain(raw) for raw in items]
        bodies = [
            check_json("a session item", item, max_bytes=MAX_METADATA_BYTES // 2) for item in plain
        ]
        ids = self._ids(plain, bodies)
        rows = [
            {
                "actor": self.actor,
                "session": self.session_id,
                "role": _role(item),
                "text": _text(item),
                "event_id": event_id,
                "metadata": {ITEM_KEY: item},
                "time": now + timedelta(microseconds=i),
            }
            for i, (item, event_id) in enumerate(zip(plain, ids, strict=True))
        ]
        self._mem.add_events(rows)
        self._failed = None
        self._last = (now + timedelta(microseconds=len(rows) - 1),)

    def _ids(self, items: list[dict[str, Any]], bodies: list[str]) -> list[str]:
        """The event ids of a batch, by the module docstring's rule; kept as the failed
        batch's until `add_events` returns."""
        batch = "\n".join(bodies)
        if self._failed is not None and self._failed[0] == batch:
            return list(self._failed[1])
        ids = []
        for item, body in zip(items, bodies, strict=True):
            known = _identity(item)
            if known is None:
                ids.append(stable_id("oai", uuid4().hex))
            else:
                ids.append(stable_id("oai", self.actor, self.session_id, *known, body))
        self._failed = (batch, ids)
        return ids


def memory_tools(
    memory: Memory | AsyncMemory | Backend, *, actor: str, k: int = 10
) -> list[FunctionTool]:
    """The function tools `remember` (an explicit statement, confirmed at once) and
    `recall` (the memories that matter for a query) on one actor's memory. `recall`
    hands back the very packet `Memory.recall` does with `k` (default, as recall's, 10):
    pinned fields first, then the ranked items."""
    mem, _ = backend(memory)
    check_name("actor", actor)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
        raise InvalidInput(f"k must be an integer from 1 to 1000; got {shown(k)}")

    @function_tool
    async def remember(text: str) -> str:
        """Remember a statement about the user for later conversations.

        Args:
            text: the statement, in the user's words (e.g. "I prefer aisle seats").
        """
        rec = await asyncio.to_thread(mem.remember, actor=actor, text=text)
        return f"remembered {rec.id}"

    @function_tool
    async def recall(query: str) -> str:
        """Recall what is known about the user that matters for a question.

        Args:
            query: the question or topic.
        """
        packet = await asyncio.to_thread(mem.recall, actor=actor, query=query, k=k)
        items = (*packet.pinned, *packet.records)
        found = [{"text": r.text, "kind": r.kind, "id": r.id} for r in items]
        return json.dumps({"memories": found, "conflicts": list(packet.conflicts)})

    return [remember, recall]


def _identity(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """What the SDK identifies an item by: its `id` (a Responses item's), else a tool
    call's or tool output's `call_id`, with the item's type; None for an item it gives
    no identity (a user message, a chat-completions model's placeholder id)."""
    kind = str(item.get("type", "message"))
    for key in ("id", "call_id"):
        value = item.get(key)
        if isinstance(value, str) and value and value != PLACEHOLDER_ID:
            return (f"{kind}:{key}", value)
    return None


def _replayed(item: object, role: str, text: str) -> dict[str, Any]:
    """The item an event of `role` and `text` replays: the metadata's item when the role
    and text the adapter derives from it are the event's own; else the event's own
    text, as a user message (an assistant one for an assistant event), never as a
    system item."""
    if isinstance(item, dict) and _role(item) == role and _text(item) == text:
        return item
    return {"role": "assistant" if role == "assistant" else "user", "content": text}


def _plain(item: Any) -> dict[str, Any]:
    """An item as a JSON object (the SDK's pydantic items dumped as JSON)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, Mapping):
        raise InvalidInput(f"a session item must be a dict; got {type(item).__name__}")
    return dict(item)


def _role(item: Mapping[str, Any]) -> str:
    role = item.get("role")
    if role in ("user", "assistant", "system"):
        return str(role)
    if role == "developer":
        return "system"
    kind = str(item.get("type", ""))
    return "tool" if kind.endswith("_output") else "assistant"


def _text(item: Mapping[str, Any]) -> str:
    """What extraction reads of an item: its text, never empty."""
    content = item.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(str(p["text"]) for p in content if isinstance(p, Mapping) and "text" in p)
    if not parts and item.get("type") == "function_call":
        parts.append(f"{item.get('name')}({item.get('arguments', '')})")
    if not parts and "output" in item:
        out = item["output"]
        parts.append(out if isinstance(out, str) else json.dumps(out, ensure_ascii=False))
    text = "\n".join(p for p in parts if p.strip())
    if not text:
        text = json.dumps(item, ensure_ascii=False, sort_keys=True)
    return text[:MAX_EVENT_CHARS]
