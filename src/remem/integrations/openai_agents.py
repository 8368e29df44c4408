"""The OpenAI Agents SDK on remem: `RememSession`, a session on remem's event log, and
`memory_tools`, the function tools `remember`, `recall` and `forget`.

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

`pop_item` and `clear_session` HIDE items from the session; they erase nothing.
The SDK's guide uses `pop_item` to take back the last turn before correcting it; the
session then replays without it. The events stay in remem's event log, in what
extraction made of them, in exports, and in recall of raw turns; the session keeps
its view (which events it hides, and the time before which it was cleared) in the
actor's thread state, as the checkpoint `oai-view.<digest of the session id>`, so
every session object and process sees the same items. To erase: the `forget` tool
(one memory, by the id recall gave, verified), or `forget(actor=...)` (everything of
the actor, its views included). An identified item added again after it was popped
is shown again; one added again after a clear stays before the clear, hidden.

The mapping (SDK -> remem; refused or not mapped):

- `add_items`: events of (actor, session) in one transaction, each item in its
  event's metadata; an item that is no JSON object or over 32 KB as JSON is
  `InvalidInput`.
- `get_items(limit)`: the session's item events in order, less those its view
  hides; events written by other means (no item in metadata) are left out.
- `pop_item`: hides the last shown item in the session's view and returns it.
- `clear_session`: hides every item so far in the session's view.
- tools `remember`, `recall`: `remember` (confirmed at once), `recall` (the
  packet's items, each with its id).
- tool `forget`: `forget(record_id=)` of one of the actor's memories, verified;
  another actor's id is not found.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

from agents import FunctionTool, function_tool

from remem.errors import ConflictError, InvalidInput, NotFound
from remem.integrations.common import (
    Backend,
    ErasureUnsupported,
    backend,
    checked_k,
    event_fields,
    event_said,
    forget_own,
    listed,
    stable_id,
    thread_state,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.policy.dataclasses import shown
from remem.policy.scope import check_name
from remem.policy.text import MAX_METADATA_BYTES, check_json
from remem.recall.request import RecallAsk
from remem.timeutil import parse_time
from remem.writes.checks import MAX_EVENT_CHARS

__all__ = ["ErasureUnsupported", "RememSession", "memory_tools"]

ITEM_KEY = "openai_agents_item"  # where an event's metadata holds its item
MAX_ITEMS = 100_000  # the events of one session read back
PLACEHOLDER_ID = "__fake_id__"  # the SDK's id for the items of a non-Responses model
VIEW_PREFIX = "oai-view."  # the thread-state checkpoint of a session's view
MAX_HIDDEN = 10_000  # items one view hides one by one (a clear hides any number)
SAVE_TRIES = 20  # saves of a view that lost a race to another writer before giving up


class _View:
    """What a session hides: event ids popped, and the time up to which it was cleared."""

    def __init__(self, data: Mapping[str, Any] | None = None, version: int | None = None):
        data = data or {}
        self.hidden: list[str] = [str(h) for h in data.get("hidden", [])]
        cleared = data.get("cleared_at")
        self.cleared_at = None if cleared is None else parse_time(str(cleared))
        self.version = version

    def shows(self, event_id: str, when: datetime) -> bool:
        return event_id not in self.hidden and (self.cleared_at is None or when > self.cleared_at)

    def state(self, session: str) -> dict[str, Any]:
        cleared = None if self.cleared_at is None else self.cleared_at.isoformat()
        return {"data": {"session": session, "hidden": self.hidden, "cleared_at": cleared}}


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
        self._thread = thread_state(memory)
        self._workflow = VIEW_PREFIX + hashlib.sha256(self.session_id.encode()).hexdigest()[:40]
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
        """Hide the session's last shown item from it and return it (None: no item).
        Not an erasure: the event stays in remem (see the module docstring)."""
        return await asyncio.to_thread(self._change_view, "pop")

    async def clear_session(self) -> None:
        """Hide every item of the session so far from it. Not an erasure: the events
        stay in remem; erase with `forget` (see the module docstring)."""
        await asyncio.to_thread(self._change_view, "clear")

    # -- the session's view ---------------------------------------------------------------

    def _view(self) -> _View:
        try:
            saved = self._thread.checkpoint_load(actor=self.actor, workflow=self._workflow)
        except NotFound:
            return _View()
        return _View(saved.state.data, saved.version)

    def _change_view(self, how: str) -> dict[str, Any] | None:
        """Pop the last shown item or clear them all, saved under the view's version
        (another writer's save in between: read again and retry)."""
        for _ in range(SAVE_TRIES):
            view = self._view()
            rows = self._rows()
            shown_rows = [r for r in rows if view.shows(r[0], r[1])]
            if not shown_rows:
                return None
            popped = None
            if how == "pop":
                event_id, _, popped = shown_rows[-1]
                if len(view.hidden) >= MAX_HIDDEN:
                    raise InvalidInput(
                        f"this session hides {MAX_HIDDEN} popped items already; clear_session() "
                        "hides any number"
                    )
                view.hidden.append(event_id)
            else:
                view.hidden, view.cleared_at = [], max(r[1] for r in rows)
            try:
                self._save(view)
            except ConflictError:
                continue
            return popped
        raise ConflictError(f"the view of session {self.session_id!r} kept changing; try again")

    def _save(self, view: _View) -> None:
        self._thread.checkpoint_save(
            actor=self.actor,
            workflow=self._workflow,
            state=view.state(self.session_id),
            expected_version=view.version,
        )

    # -- the sync flow both coroutines run ---------------------------------------------------

    def _rows(self) -> list[tuple[str, datetime, dict[str, Any]]]:
        """Every item event of the session in order, hidden or not: (event id, time,
        the item it replays); remembers the time of the last."""
        rows = self._mem.events(actor=self.actor, session=self.session_id, limit=MAX_ITEMS)
        out = []
        last: datetime | None = None
        for row in rows:
            event_id, when, metadata = event_fields(row)
            if ITEM_KEY not in metadata:
                continue
            role, text = event_said(row)
            out.append((event_id, when, _replayed(metadata[ITEM_KEY], role, text)))
            last = when
        self._last = (last,)
        return out

    def _events(self) -> list[dict[str, Any]]:
        """The session's items in order, less those its view hides (see the module
        docstring for what is replayed)."""
        view = self._view()
        return [item for event_id, when, item in self._rows() if view.shows(event_id, when)]

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
        self._unhide(ids)

    def _unhide(self, ids: list[str]) -> None:
        """Show again an identified item that was popped and is added again."""
        for _ in range(SAVE_TRIES):
            view = self._view()
            if not set(ids) & set(view.hidden):
                return
            view.hidden = [h for h in view.hidden if h not in ids]
            try:
                self._save(view)
                return
            except ConflictError:
                continue

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
    """The function tools `remember` (an explicit statement, confirmed at once),
    `recall` (the memories that matter for a query) and `forget` (erase one memory by
    its id, verified) on one actor's memory. `recall` hands back the very packet
    `Memory.recall` does with `k` (default, as recall's, 10): pinned fields first, then
    the ranked items, each with the id `forget` takes."""
    mem, _ = backend(memory)
    check_name("actor", actor)
    checked_k(k)

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
        packet = await asyncio.to_thread(mem.ask, RecallAsk(actor=actor, query=query, k=k))
        items = (*packet.pinned, *packet.records)
        found = [{"text": r.text, "kind": r.kind, "id": r.id} for r in items]
        return json.dumps({"memories": found, "conflicts": list(packet.conflicts)})

    @function_tool
    async def forget(record_id: str) -> str:
        """Erase one memory of the user everywhere, when they ask to forget something.

        Args:
            record_id: the memory's id, as recall gave it (e.g. "rec_...").
        """
        try:
            await asyncio.to_thread(forget_own, mem, actor=actor, record_id=record_id)
        except NotFound as exc:  # said to the model, which may have misread an id
            return f"not forgotten: {exc}; recall gives each memory's id"
        return f"forgotten {record_id} (erased everywhere, verified)"

    return [remember, recall, forget]


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
