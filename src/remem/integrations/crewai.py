"""CrewAI on remem: `RememMemory`, CrewAI's unified `Memory` (crewai 1.x,
`crewai.memory.Memory`) whose every call goes to remem, for a `Crew(memory=...)`, an
`Agent(memory=...)` or a `Flow`.

    from crewai import Crew
    from remem import Memory
    from remem.integrations.crewai import RememMemory

    memory = RememMemory(Memory.open("memory.db"), actor="alice")
    crew = Crew(agents=[...], tasks=[...], memory=memory)

The memory is bound to one remem actor (a `Client` is bound by its key as well):
every call reads and writes that actor's memory only. It is a subclass of CrewAI's
`Memory` rather than a `StorageBackend` because a storage backend is handed only the
query's embedding, never its text, and remem's recall is lexical and vector search
of the text in the actor's scope. The mapping:

| CrewAI `Memory`                      | remem                                            |
|--------------------------------------|--------------------------------------------------|
| `recall(query, limit)` (before each  | `recall` in the actor's scope, `limit` items as  |
| task, and the "Search memory" tool)  | `MemoryMatch`es: pinned fields, then records     |
| `extract_memories(raw)` + `remember_ | the task's outcome as one event of the actor's   |
| many(..., agent_role)` (after a task)| session, which remem's extraction then reads     |
| `remember(text, metadata)` and the   | `remember`: an explicit statement, confirmed at  |
| "Save to memory" tool                | once, with `metadata` as the record's            |
| `forget(record_ids=[...])`           | erases each of the actor's records, verified     |
| `list_records(limit, offset)`        | the actor's active records, newest first         |
| `drain_writes()`, `close()`          | nothing: every write is done when the call ends  |

- A task's outcome (CrewAI's "Task: ...\\nAgent: ...\\nResult: ..." dump) is not
  turned into memories by CrewAI's LLM: `extract_memories` hands it back whole, and
  `remember_many` with an `agent_role` (what an agent's executor passes) appends it
  as an assistant event, so remem's own extraction makes candidates that
  consolidation accepts or not (the offline extractor reads what the user says of
  themselves: an outcome yields records with an LLM extractor configured).
  `remember_many` without an `agent_role` (the "Save to memory" tool) remembers
  each item as `remember` does, every item screened before one is written.
- `remember` refuses a secret (`RefusedContent`) and a bad metadata (`InvalidInput`,
  `remem.policy.metadata`); nothing is written. CrewAI's `scope`, `categories`,
  `importance`, `source` and `private` are not kept: remem scopes by actor (and
  namespace), and ranks by its own recall.
- `recall`'s `depth` is remem's recall either way (no LLM plans the query);
  `scope`, `categories` and `source` narrowing is refused (`InvalidInput`) rather
  than ignored, since ignoring it would widen what comes back. `metadata=` (a remem
  filter, on the memory) keeps the records whose metadata has those values. Each
  match's record holds remem's id, text, kind (as its one category), source date,
  and the record's metadata with remem's status and flags (these names win).
- `info`, `tree`, `list_scopes` and `list_categories` (CrewAI's own, over its
  storage) are refused with `InvalidInput`.
- `forget` of anything but record ids, `reset()`, `reset_all()` and `update()` are
  refused (`ErasureUnsupported`, `InvalidInput`): erasing all an actor has is
  `Memory.forget(actor=...)` (or `Client.forget(actor=...)`), asked for by name, and a
  correction is a new `remember` that supersedes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal, cast
from uuid import uuid4

from remem.errors import InvalidInput
from remem.integrations.common import (
    Backend,
    ErasureUnsupported,
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
from remem.model import PacketItem, Record
from remem.policy.dataclasses import refuse_secrets
from remem.policy.metadata import check_filter, check_metadata
from remem.policy.scope import check_name
from remem.writes.checks import MAX_EVENT_CHARS

try:
    from crewai.memory.types import MemoryMatch, MemoryRecord
    from crewai.memory.unified_memory import Memory as CrewMemory
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - the message is the point
    raise framework_missing("crewai", "CrewAI", "crewai 1.x", exc) from exc

__all__ = ["ErasureUnsupported", "RememMemory"]

DEFAULT_SESSION = "crewai"  # the remem session a crew's task outcomes are events of


class _NoStorage:
    """CrewAI's storage, which `RememMemory` has none of (so CrewAI builds no LanceDB
    store): what would still reach it (`info`, `tree`, `list_scopes`, ...) is
    refused with `InvalidInput`."""

    def close(self) -> None:
        """Nothing to close."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise InvalidInput(
                f"RememMemory keeps no CrewAI storage: {name} is not mapped; read the "
                "actor's memory with recall or list_records"
            )

        return refuse


class RememMemory(CrewMemory):  # type: ignore[misc,unused-ignore]  # Any without crewai
    """CrewAI's `Memory` on one actor of a `Memory`, an `AsyncMemory` or a `Client`;
    see the module docstring for the mapping."""

    actor: str
    session: str = DEFAULT_SESSION
    metadata: dict[str, Any] | None = None
    include_events: bool = False
    _mem: Any = PrivateAttr()
    _clock: Any = PrivateAttr()

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        actor: str,
        session: str = DEFAULT_SESSION,
        metadata: Mapping[str, Any] | None = None,
        include_events: bool = False,
        **fields: Any,
    ) -> None:
        """`session`: the remem session a crew's task outcomes are events of;
        `metadata`: the filter of every recall (records whose metadata has these
        values); `include_events`: whether raw events that match (not yet extracted)
        come back beside records; `fields`: CrewAI's own (`read_only`)."""
        own: dict[str, Any] = {
            "actor": check_name("actor", actor),
            "session": check_name("session", session),
            "metadata": dict(check_filter(metadata)) or None,
            "include_events": include_events,
        }
        super().__init__(storage=_NoStorage(), **own, **fields)
        self._mem, self._clock = backend(memory)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> RememMemory:
        """CrewAI copies agents and crews: the copy shares the remem backend."""
        new = cast(RememMemory, super().__deepcopy__(memo))
        new._mem, new._clock = self._mem, self._clock
        return new

    def remember(
        self,
        content: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> MemoryRecord | None:
        """Remember `content` as the actor's explicit statement, confirmed at once,
        with `metadata` as the record's (None when the memory is read-only)."""
        if self.read_only:
            return None
        rec = self._mem.remember(actor=self.actor, text=content, metadata=metadata or None)
        return _record(rec)

    def remember_many(
        self,
        contents: list[str],
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> list[MemoryRecord]:
        """An agent's task outcome (`agent_role` given) as events of the actor's
        session; other items each remembered as `remember` does."""
        items = [str(c) for c in listed("contents", contents)]
        if not items or self.read_only:
            return []
        if agent_role is None:
            # every item screened before any is written: a refusal writes nothing
            empty = [i for i, text in enumerate(items) if not text.strip()]
            if empty:
                raise InvalidInput(f"items {empty} have no text to remember")
            for i, text in enumerate(items):
                refuse_secrets({f"item {i}": text})
            meta = check_metadata(metadata) or None
            return [r for r in (self.remember(c, metadata=meta) for c in items) if r]
        now = self._clock()
        about = {"agent_role": agent_role, "run": uuid4().hex}
        rows = [
            {
                "actor": self.actor,
                "session": self.session,
                "role": "assistant",
                "text": text[:MAX_EVENT_CHARS],
                "event_id": stable_id("crewai", self.actor, self.session, about["run"], str(i)),
                "time": now + timedelta(microseconds=i),
                "metadata": {"crewai": about},
            }
            for i, text in enumerate(items)
            if text.strip()
        ]
        if rows:
            self._mem.add_events(rows)
        return []

    def extract_memories(self, content: str) -> list[str]:
        """`content` whole: remem extracts from it itself, once it is an event."""
        return [content] if content.strip() else []

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int = 10,
        depth: Literal["shallow", "deep"] = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """The actor's memories that matter for `query`, most relevant first."""
        narrowed = {"scope": scope, "categories": categories, "source": source}
        asked = [name for name, value in narrowed.items() if value]
        if asked:
            raise InvalidInput(
                f"RememMemory.recall cannot narrow by {', '.join(asked)}: remem scopes "
                "by actor; filter by record metadata with RememMemory(metadata=...)"
            )
        k = checked_k(limit, "limit")
        if not query.strip():
            return []
        items = recalled(self._mem, self.actor, query, k, self.include_events, self.metadata)
        return [MemoryMatch(record=_item(i), score=i.score, match_reasons=["remem"]) for i in items]

    def forget(
        self,
        scope: str | None = None,
        categories: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
        record_ids: list[str] | None = None,
    ) -> int:
        """Erase the actor's records `record_ids`, each verified; how many. Any other
        criterion is refused (see the module docstring)."""
        if scope or categories or older_than or metadata_filter or not record_ids:
            raise ErasureUnsupported(
                "RememMemory.forget erases records by id (record_ids=[...]); erasing "
                f"everything actor {self.actor!r} has is forget(actor=...) on the Memory "
                "or Client, asked for by name"
            )
        ids = [str(i) for i in listed("record_ids", record_ids)]
        for record_id in ids:
            forget_own(self._mem, actor=self.actor, record_id=record_id)
        return len(ids)

    def list_records(
        self, scope: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """The actor's active records, newest first."""
        if scope:
            raise InvalidInput("RememMemory.list_records cannot narrow by scope")
        recs = self._mem.records(actor=self.actor, limit=offset + limit)
        return [_record(r) for r in recs[offset:]]

    def update(self, record_id: str, *args: Any, **kwargs: Any) -> MemoryRecord:
        """Refused: a correction is a new `remember`, which supersedes in remem."""
        raise InvalidInput(
            "RememMemory.update is refused: remem keeps history; remember the corrected "
            "statement (it supersedes the old one) or forget(record_ids=[...])"
        )

    def reset(self, scope: str | None = None) -> None:
        """Refused: see `forget`."""
        self.forget(scope=scope or "/")

    def reset_all(self) -> None:
        """Refused: see `forget`."""
        self.forget(scope="/")

    def drain_writes(self) -> None:
        """Nothing to wait for: every write is done when its call returns."""

    def close(self) -> None:
        """Nothing to release: the memory or client stays the caller's to close."""


def _record(rec: Record) -> MemoryRecord:
    return MemoryRecord(
        id=rec.id,
        content=rec.text,
        scope=rec.namespace,
        categories=[str(rec.kind)],
        metadata=copy.deepcopy(dict(rec.metadata)),
        created_at=rec.created_at.replace(tzinfo=None),
    )


def _item(item: PacketItem) -> MemoryRecord:
    meta: dict[str, Any] = {**item.metadata, "status": item.status}
    if item.flags:
        meta["flags"] = list(item.flags)
    return MemoryRecord(
        id=item.id,
        content=item.text,
        scope=item.namespace,
        categories=[item.kind],
        metadata=meta,
        created_at=item.source_date.replace(tzinfo=None),
    )
