"""What the framework adapters share: the backend they are given, and the checks that
hold on every path (an actor's own records only, erasure only when verified).

An adapter takes a `Memory`, an `AsyncMemory` (its `sync` memory is used, each call
run off the event loop by the adapter) or a `Client`; `backend` turns any of them
into the `Backend` the adapter calls and the clock it dates events by (the memory's
own, or the wall clock for a server). No framework is imported here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from remem.errors import InvalidInput, NotFound, RememError, StoreError
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import Packet, PacketItem, Record
from remem.policy.dataclasses import shown
from remem.policy.scope import named
from remem.recall.request import RecallAsk
from remem.store.roles import ForgetReport
from remem.thread.checkpoints import Checkpoint
from remem.timeutil import parse_time

__all__ = [
    "MAX_K",
    "Backend",
    "ErasureUnsupported",
    "backend",
    "checked_k",
    "event_fields",
    "event_said",
    "forget_own",
    "framework_missing",
    "item_metadata",
    "listed",
    "recalled",
    "stable_id",
    "thread_state",
]

MAX_K = 1000  # the most items one recall of an adapter hands back


class ErasureUnsupported(RememError, NotImplementedError):
    """An operation that needs an erasure remem's store does not offer (one event, or
    one session's events): refused rather than hiding what would stay stored."""

    code = "unsupported"


class Backend(Protocol):
    """What the adapters use of a `Memory` or a `Client` (they share these methods)."""

    def add_events(self, rows: Sequence[Mapping[str, Any]]) -> list[bool]: ...

    def events(self, *, actor: str, session: str | None = ..., limit: int = ...) -> Any: ...

    def remember(
        self, *, actor: str, text: str, metadata: Mapping[str, Any] | None = ...
    ) -> Record: ...

    def ask(self, request: RecallAsk) -> Packet: ...

    def get(self, record_id: str) -> Record: ...

    def forget(self, *, record_id: str | None = ...) -> ForgetReport: ...


class ThreadState(Protocol):
    """The thread state (workflow checkpoints) an adapter keeps its own view in: the
    `Client`'s methods, or a `Memory`'s through `remem.thread.api` (`thread_state`)."""

    def checkpoint_save(
        self, *, actor: str, workflow: str, state: Mapping[str, Any],
        expected_version: int | None = ..., retention: timedelta | None = ...,
    ) -> Checkpoint: ...  # fmt: skip

    def checkpoint_load(self, *, actor: str, workflow: str) -> Checkpoint: ...

    def checkpoint_scan(
        self, *, actor: str, prefix: str = ..., before: str | None = ..., limit: int = ...
    ) -> list[Checkpoint]: ...

    def checkpoint_delete(
        self, *, actor: str, workflow: str | None = ..., prefix: str | None = ...
    ) -> int: ...


class _EmbeddedState:
    """A `Memory`'s thread state with the `Client`'s method names."""

    def __init__(self, mem: Memory) -> None:
        from remem.thread import api

        self._mem, self._api = mem, api

    def checkpoint_save(self, **kw: Any) -> Checkpoint:
        return self._api.checkpoint_save(self._mem, **kw)

    def checkpoint_load(self, **kw: Any) -> Checkpoint:
        return self._api.checkpoint_load(self._mem, **kw)

    def checkpoint_scan(self, **kw: Any) -> list[Checkpoint]:
        return self._api.checkpoint_scan(self._mem, **kw)

    def checkpoint_delete(self, **kw: Any) -> int:
        return self._api.checkpoint_delete(self._mem, **kw)


def thread_state(memory: Memory | AsyncMemory | Backend | ThreadState) -> ThreadState:
    """The thread state of what an adapter was given: a `Memory`'s (an `AsyncMemory`'s
    sync one) through `remem.thread.api`, or a `Client` as it is."""
    if isinstance(memory, AsyncMemory):
        memory = memory.sync
    if isinstance(memory, Memory):
        return _EmbeddedState(memory)
    return memory  # type: ignore[return-value]  # a Client: the same methods


def backend(memory: Memory | AsyncMemory | Backend) -> tuple[Backend, Callable[[], datetime]]:
    """The sync backend of what an adapter was given, and the clock to date events by."""
    if isinstance(memory, AsyncMemory):
        memory = memory.sync
    if isinstance(memory, Memory):
        return memory, memory.deps.clock
    return memory, _utcnow


def framework_missing(adapter: str, framework: str, package: str, exc: ImportError) -> ImportError:
    """The error an adapter's import raises when its framework is not installed: which
    extra of remem installs it (`remem[adapter]`, the `package` it pins) and why not."""
    return ImportError(
        f"remem.integrations.{adapter} needs {framework}: pip install 'remem[{adapter}]' "
        f"({package}); importing it failed: {exc}"
    )


def checked_k(value: object, what: str = "k") -> int:
    """How many items a recall of an adapter hands back (an adapter's `k`, or the
    framework's name for it): an integer from 1 to `MAX_K`, or InvalidInput."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_K:
        raise InvalidInput(f"{what} must be an integer from 1 to {MAX_K}; got {shown(value)}")
    return value


def recalled(
    mem: Backend,
    actor: str,
    query: str,
    k: int,
    include_events: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[PacketItem, ...]:
    """The items of one adapter's recall, as the framework gets them: one `RecallAsk`
    answered by the backend's one entry point (`ask`), pinned fields first, then the
    ranked items."""
    request = RecallAsk(
        actor=actor, query=query, k=k, include_events=include_events, metadata=metadata
    )
    packet = mem.ask(request)
    return (*packet.pinned, *packet.records)


def item_metadata(item: PacketItem) -> dict[str, Any]:
    """A recalled item's metadata as a framework's entry carries it: the application's
    own keys, then remem's (id, kind, status, score, flags, source date), which win."""
    return {
        **item.metadata,
        "id": item.id,
        "kind": item.kind,
        "status": item.status,
        "score": item.score,
        "flags": list(item.flags),
        "source_date": item.source_date.isoformat(),
    }


def listed(what: str, value: object) -> list[Any]:
    """`value` as a list, or InvalidInput: a framework hands a list of items, and a
    string, a mapping or None is refused rather than iterated."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidInput(f"{what} must be a list; got {type(value).__name__}")
    return list(value)


def stable_id(prefix: str, *parts: str) -> str:
    """An event id made from what identifies the event, so a retried write is the same
    event (remem stores an event id once)."""
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return f"{prefix}_{digest[:40]}"


def event_fields(row: Any) -> tuple[str, datetime, dict[str, Any]]:
    """An event's id, time and metadata, from a `Memory` (an `Event`) or a `Client` (JSON)."""
    if isinstance(row, Mapping):
        event_id = str(row.get("event_id") or row.get("id"))
        return event_id, parse_time(row["time"]), dict(row.get("metadata") or {})
    return str(row.id), row.time, dict(row.metadata)


def event_said(row: Any) -> tuple[str, str]:
    """An event's own role and text, from a `Memory` (an `Event`) or a `Client` (JSON)."""
    if isinstance(row, Mapping):
        return str(row.get("role")), str(row.get("text"))
    return str(row.role), str(row.text)


def forget_own(mem: Backend, *, actor: str, record_id: str) -> ForgetReport:
    """Erase one record of `actor` through remem's deletion job; `NotFound` when the
    actor has no such record (another actor's is not named as existing), `StoreError`
    unless reading every surface back verified the erasure."""
    try:
        rec = mem.get(record_id)
    except NotFound:
        rec = None
    if rec is None or rec.actor != actor:
        raise NotFound(f"actor {named(actor)} has no memory {named(record_id)}")
    report = mem.forget(record_id=record_id)
    if not report.verified:
        raise StoreError(
            f"the erasure of {record_id} was not verified (deletion job {report.job_id}, "
            f"left: {report.remaining}); run it again"
        )
    return report


def _utcnow() -> datetime:
    return datetime.now(UTC)
