"""`AsyncMemory`: every `Memory` method has a coroutine twin that runs off the loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from remem import AsyncMemory, Memory, NotFound
from remem.embed.base import HashEmbedder, Vectors


class ThreadNoting(HashEmbedder):
    """HashEmbedder that notes which threads it embedded on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.threads.add(threading.get_ident())
        return super().embed(texts)


def test_every_public_memory_method_has_an_async_twin() -> None:
    public = {
        name
        for name, attr in vars(Memory).items()
        if not name.startswith("_") and callable(attr) and not isinstance(attr, classmethod)
    }
    missing = {name for name in public if not callable(getattr(AsyncMemory, name, None))}
    assert public and not missing
    for name in public - {"export"}:  # export is listed whole, the one adapted twin
        assert getattr(AsyncMemory, name).__wrapped__ is vars(Memory)[name]
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name))


def test_the_async_api_remembers_recalls_exports_and_forgets(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncMemory.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
            said = "I prefer aisle seats on long flights"
            await mem.add_event(actor="alice", session="s1", role="user", text=said)
            done = await mem.process()
            assert done.records_added == 1
            packet = await mem.recall(actor="alice", query="aisle seat", k=3)
            assert "aisle" in packet.records[0].text.lower()
            rows = await mem.export(actor="alice")
            assert {r["type"] for r in rows} >= {"event", "record"}
            report = await mem.forget(actor="alice")
            assert report.verified
            assert await mem.records(actor="alice") == []

    asyncio.run(main())


def test_calls_run_in_worker_threads_and_can_overlap(tmp_path: Path) -> None:
    embedder = ThreadNoting()
    mem = AsyncMemory(Memory.open(tmp_path / "m.db", embedder=embedder))

    async def main() -> set[bool]:
        loop_thread = threading.get_ident()
        await asyncio.gather(*[
            mem.add_event(actor="alice", session="s1", role="user",
                          text=f"I like city number {i}", event_id=f"e{i}")
            for i in range(20)
        ])  # fmt: skip
        await mem.process()
        await asyncio.gather(*[mem.recall(actor="alice", query=f"city {i}") for i in range(8)])
        await mem.close()
        return {t == loop_thread for t in embedder.threads}

    on_loop = asyncio.run(main())
    assert on_loop == {False}  # every embedding ran off the event loop's thread
    with Memory.open(tmp_path / "m.db", embedder=None) as check:
        assert len(check.events(actor="alice")) == 20


def test_errors_come_back_through_the_await(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncMemory.open(tmp_path / "m.db", embedder=None) as mem:
            with pytest.raises(NotFound):
                await mem.get("rec_missing")

    asyncio.run(main())
