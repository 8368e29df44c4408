"""`AsyncMemory`: the library for asyncio code, derived from `Memory` in one place.

Every method of `AsyncMemory` is the `Memory` method of the same name, run
in a worker thread (`asyncio.to_thread`) so that the event loop keeps serving
while SQLite, PostgreSQL or the embedder work. Nothing is written twice: the
class body below only lists which methods exist, and `_off_loop` makes each
one; a test checks that every public method of `Memory` has its twin here.
`Memory` is safe to share between threads, which is what makes this enough.

    async with AsyncMemory.open("memory.db") as mem:
        await mem.add_event(actor="alice", session="s1", role="user", text="...")
        await mem.process()
        packet = await mem.recall(actor="alice", query="...")
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from remem.memory.memory import Memory

P = ParamSpec("P")
R = TypeVar("R")


def _off_loop(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Awaitable[R]]:
    """The coroutine twin of a `Memory` method: the same call, in a worker thread."""

    @functools.wraps(method)
    async def twin(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self.sync, *args, **kwargs)

    return twin


def _export(mem: Memory, *, actor: str) -> list[dict[str, Any]]:
    """Everything of a subject as a list (the sync `export` yields it lazily)."""
    return list(mem.export(actor=actor))


class AsyncMemory:
    """`Memory` for asyncio: the same methods, awaited; see the module docstring."""

    def __init__(self, memory: Memory) -> None:
        self.sync = memory  # the `Memory` every call runs on

    @classmethod
    def open(cls, *args: Any, **kwargs: Any) -> AsyncMemory:
        """`Memory.open` with the same arguments, wrapped. It runs on the calling thread:
        on PostgreSQL that includes connecting and checking migrations, so open once
        at start-up, not per request."""
        return cls(Memory.open(*args, **kwargs))

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # events and extraction
    add_event = _off_loop(Memory.add_event)
    add_events = _off_loop(Memory.add_events)
    import_events = _off_loop(Memory.import_events)
    ask_import = _off_loop(Memory.ask_import)
    events = _off_loop(Memory.events)
    events_page = _off_loop(Memory.events_page)
    process = _off_loop(Memory.process)
    jobs = _off_loop(Memory.jobs)
    retry_jobs = _off_loop(Memory.retry_jobs)
    # records and recall
    remember = _off_loop(Memory.remember)
    ask_remember = _off_loop(Memory.ask_remember)
    write_records = _off_loop(Memory.write_records)
    update = _off_loop(Memory.update)
    recall = _off_loop(Memory.recall)
    ask = _off_loop(Memory.ask)
    records = _off_loop(Memory.records)
    fact = _off_loop(Memory.fact)
    profile = _off_loop(Memory.profile)
    ask_fact = _off_loop(Memory.ask_fact)
    ask_profile = _off_loop(Memory.ask_profile)
    ask_records = _off_loop(Memory.ask_records)
    get = _off_loop(Memory.get)
    history = _off_loop(Memory.history)
    # procedures
    propose_procedure = _off_loop(Memory.propose_procedure)
    procedures = _off_loop(Memory.procedures)
    approve = _off_loop(Memory.approve)
    reject = _off_loop(Memory.reject)
    # documents
    add_document = _off_loop(Memory.add_document)
    list_documents = _off_loop(Memory.list_documents)
    get_document = _off_loop(Memory.get_document)
    search_documents = _off_loop(Memory.search_documents)
    remove_document = _off_loop(Memory.remove_document)
    # export and deletion
    export = _off_loop(_export)
    forget = _off_loop(Memory.forget)
    deletions = _off_loop(Memory.deletions)
    fresh_start = _off_loop(Memory.fresh_start)
    # re-embedding with another embedder
    reindex = _off_loop(Memory.reindex)
    cancel_reindex = _off_loop(Memory.cancel_reindex)
    # lifecycle
    close = _off_loop(Memory.close)
    close_models = _off_loop(Memory.close_models)
