"""Google's Agent Development Kit on remem: `RememMemoryService`, an ADK
`BaseMemoryService` (`google.adk.memory`).

    from google.adk.runners import Runner
    from google.adk.tools import load_memory
    from remem import Memory
    from remem.integrations.google_adk import RememMemoryService

    memory = RememMemoryService(Memory.open("memory.db"))   # or an AsyncMemory, or a Client
    agent = LlmAgent(..., tools=[load_memory], after_agent_callback=memory.save_turn)
    runner = Runner(app_name="travel", agent=agent, session_service=sessions,
                    memory_service=memory)

The mapping: ADK's `user_id` is the remem actor (bind one with `user_id=`, and a
call for another user is refused with `Forbidden`; a `Client` is bound by its key
as well); an ADK session is a remem session; `app_name` is kept in each event's
metadata (remem's memory is the user's across the apps of a tenant).

- `add_session_to_memory` / `add_events_to_memory`: each event with content is
  one remem event (its text parts, a function call as `name(args)`, a function
  response as JSON), dated by its own timestamp, with an id made from the app,
  user, session and ADK event id: adding a session again, or the same events
  again, stores nothing twice. Extraction then works on them as on any event
  (secrets are kept only redacted). `custom_metadata` goes into the events'
  metadata. No `process()` step is needed: on a `Memory`, a search's recall
  first runs the user's pending extraction jobs (`Memory(catch_up=...)`), so what
  was said is a record by the next search; through a `Client`, the server's
  worker runs them as they come (a search in the same instant may come first,
  and finds the raw turn when `include_events`).
- `save_turn`: an `after_agent_callback` (`LlmAgent(after_agent_callback=
  memory.save_turn)`) that adds the events of the turn just run (this
  invocation's) to memory, as other ADK memory services' callbacks do; each is
  stored once, so `add_session_to_memory` afterwards adds only what a failed
  turn left out.
- `add_memory`: each entry's text is an explicit statement, written confirmed
  at once through `remember`, with the call's `custom_metadata` and then the
  entry's own (and the app under "adk") as the record's metadata
  (`remem.policy.metadata`: bounded, keys checked, secrets refused); a secret or
  a bad metadata in any entry refuses them all, before one is written.
- `search_memory`: remem's recall in the user's scope, the very packet `recall`
  hands back (pinned fields first, then the ranked items); each item is a
  `MemoryEntry` whose id is the record's (or a raw event's) id, with the
  record's metadata and then remem's kind, status, score, flags, namespace and
  source (these names win) in `custom_metadata`.
- `delete_memory`: erases the record through remem's deletion job, verified
  (else `StoreError`); an id that is no record of this user is `NotFound`. A
  raw event's id is refused with `ErasureUnsupported` (remem erases no single
  event). This ADK version has no `delete_memories`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from remem.errors import Forbidden, InvalidInput
from remem.integrations.common import (
    Backend,
    ErasureUnsupported,
    backend,
    checked_k,
    forget_own,
    recalled,
    stable_id,
)
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import PacketItem
from remem.policy.dataclasses import refuse_secrets
from remem.policy.metadata import check_metadata
from remem.policy.scope import check_name, named
from remem.writes.checks import MAX_EVENT_CHARS

__all__ = ["ErasureUnsupported", "RememMemoryService"]

DEFAULT_SESSION = "adk"  # the remem session of events added without a session id


class RememMemoryService(BaseMemoryService):
    """ADK's `BaseMemoryService` on a `Memory`, an `AsyncMemory` or a `Client`; see the
    module docstring for the mapping."""

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        user_id: str | None = None,
        k: int = 10,
        include_events: bool = True,
    ) -> None:
        """`user_id`: the only user (remem actor) this service serves; `k`: the most
        memories a search returns; `include_events`: whether raw events that match
        (not yet extracted) are returned beside records."""
        self._mem, self._clock = backend(memory)
        self.user_id = None if user_id is None else check_name("actor", user_id)
        self.k = checked_k(k)
        self.include_events = include_events

    # -- the BaseMemoryService interface ----------------------------------------------

    async def add_session_to_memory(self, session: Session) -> None:
        """Add the session's events (again: only those not added before)."""
        await self.add_events_to_memory(
            app_name=session.app_name,
            user_id=session.user_id,
            events=session.events,
            session_id=session.id,
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Add these events (a delta) to the user's event log, each once."""
        actor = self._actor(user_id)
        session = check_name("session", session_id or DEFAULT_SESSION)
        extra = dict(custom_metadata or {})
        rows = [
            row
            for event in events
            if (row := _row(app_name, actor, session, event, extra)) is not None
        ]
        if rows:
            await asyncio.to_thread(self._mem.add_events, rows)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Write each entry's text as an explicit, confirmed statement of the user, with
        `custom_metadata` and the entry's own as the record's metadata."""
        actor = self._actor(user_id)
        for i, m in enumerate(memories):
            if not isinstance(m, MemoryEntry):
                raise InvalidInput(f"memories[{i}] must be a MemoryEntry; got {type(m).__name__}")
        texts = [_content_text(m.content) for m in memories]
        empty = [i for i, t in enumerate(texts) if not t.strip()]
        if empty:
            raise InvalidInput(f"memories {empty} have no text to remember")
        kept = []
        for i, (text, entry) in enumerate(zip(texts, memories, strict=True)):
            # every entry screened before any is written
            refuse_secrets({f"text of memory {i}": text})
            meta = {**(custom_metadata or {}), **(entry.custom_metadata or {})}
            meta.setdefault("adk", {"app_name": app_name})
            kept.append(check_metadata(meta, f"metadata of memory {i}"))
        for text, meta in zip(texts, kept, strict=True):
            await asyncio.to_thread(self._mem.remember, actor=actor, text=text, metadata=meta)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """remem's recall for the query, in the user's scope."""
        actor = self._actor(user_id)
        # the packet as `recall` hands it back
        items = await asyncio.to_thread(
            recalled, self._mem, actor, query, self.k, self.include_events
        )
        return SearchMemoryResponse(memories=[_entry(item) for item in items])

    async def save_turn(self, callback_context: CallbackContext) -> None:
        """An ADK `after_agent_callback`: add the events of the turn just run (those of
        this invocation; the whole session when none is marked) to memory. Returns
        None, so the agent's answer stands."""
        session = callback_context.session
        mine = [e for e in session.events if e.invocation_id == callback_context.invocation_id]
        await self.add_events_to_memory(
            app_name=session.app_name,
            user_id=session.user_id,
            events=mine or session.events,
            session_id=session.id,
        )

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Erase one of the user's records, verified; see the module docstring."""
        actor = self._actor(user_id)
        if not memory_id:
            raise InvalidInput("delete_memory needs the memory_id a search returned")
        if memory_id.startswith("adk_"):
            raise ErasureUnsupported(
                f"{memory_id!r} is a raw event: remem's deletion job erases records (and the "
                "events they came from) or a whole user (forget(actor=...)), not one event"
            )
        await asyncio.to_thread(forget_own, self._mem, actor=actor, record_id=memory_id)

    # -- helpers ----------------------------------------------------------------------------

    def _actor(self, user_id: str) -> str:
        actor = check_name("actor", user_id)
        if self.user_id is not None and actor != self.user_id:
            raise Forbidden(
                f"this memory service serves user {self.user_id!r} only, not {named(actor)}"
            )
        return actor


def _row(
    app: str, actor: str, session: str, event: Event, extra: dict[str, Any]
) -> dict[str, Any] | None:
    """The remem event of an ADK event, or None for one with nothing to remember."""
    if event.partial or event.content is None or not event.content.parts:
        return None
    text = _content_text(event.content)
    if not text.strip():
        return None
    key = event.id or stable_id("body", text, str(event.timestamp), event.author)
    return {
        "actor": actor,
        "session": session,
        "role": _role(event),
        "text": text[:MAX_EVENT_CHARS],
        "event_id": stable_id("adk", app, actor, session, key),
        "time": _time(event),
        "metadata": {
            **extra,
            "adk": {
                "app_name": app,
                "event_id": event.id,
                "author": event.author,
                "invocation_id": event.invocation_id,
            },
        },
    }


def _time(event: Event) -> datetime:
    """An ADK event's time (seconds since the epoch) as a datetime; InvalidInput for one
    no calendar holds (NaN, infinite, beyond year 9999)."""
    try:
        return datetime.fromtimestamp(event.timestamp, UTC)
    except (OverflowError, ValueError, OSError):
        raise InvalidInput(
            f"ADK event {event.id!r} has timestamp {event.timestamp!r}, which is no time "
            "remem can store (seconds since 1970, before the year 10000)"
        ) from None


def _role(event: Event) -> str:
    content = event.content
    assert content is not None and content.parts
    if any(p.function_response is not None for p in content.parts):
        return "tool"
    return "user" if event.author == "user" else "assistant"


def _content_text(content: types.Content) -> str:
    """What remem reads of a content: text parts, function calls and responses."""
    parts: list[str] = []
    for part in content.parts or ():
        if part.text:
            parts.append(part.text)
        elif part.function_call is not None:
            args = json.dumps(part.function_call.args or {}, ensure_ascii=False, sort_keys=True)
            parts.append(f"{part.function_call.name}({args})")
        elif part.function_response is not None:
            body = json.dumps(part.function_response.response, ensure_ascii=False, default=str)
            parts.append(f"{part.function_response.name} -> {body}")
    return "\n".join(parts)


def _entry(item: PacketItem) -> MemoryEntry:
    """The ADK memory entry of a recalled item."""
    return MemoryEntry(
        id=item.id,
        content=types.Content(role="user", parts=[types.Part(text=item.text)]),
        author="user" if item.kind == "event" else "memory",
        timestamp=item.source_date.isoformat(),
        custom_metadata={
            **item.metadata,
            "kind": item.kind,
            "status": item.status,
            "score": item.score,
            "flags": list(item.flags),
            "namespace": item.namespace,
            "source": item.source,
        },
    )
