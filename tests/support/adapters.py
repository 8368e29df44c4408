"""What the adapter tests share: the `Backend` an adapter runs on (the `backend` fixture
makes one per backend; tests/integrations/conftest.py and the hostile adapter tests
import it), settling its jobs, and the small calls each adapter's tests make."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from remem import AsyncMemory, Memory
from remem.embed import HashEmbedder
from tests.support import pg
from tests.support.clock import Clock
from tests.support.servers import running_server

if TYPE_CHECKING:  # each adapter's framework is imported only by the tests that use it
    from google.genai import types

    from remem.integrations.langgraph import RememStore
    from remem.integrations.strands import RememMemoryStore


@dataclass
class Backend:
    """What an adapter is given (`memory`), and what the test reads remem back through
    (`reader`: the `Memory` or the `Client`), with the memory's clock where the test
    owns it (None for a server, whose clock is the wall clock)."""

    name: str
    memory: Any
    reader: Any
    clock: Clock | None
    tenant: str | None = None  # what a Client's adapter is told
    server: Any = None  # the running `remem serve` of a Client (`tests.support.servers.Server`)

    @property
    def is_async(self) -> bool:
        return self.name == "async"


BACKENDS = ["sqlite", "postgres", "async", "client"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Backend]:
    name = request.param
    if name in ("sqlite", "async"):
        mem = Memory.open(tmp_path / "memory.db", embedder=HashEmbedder(), clock=clock)
        memory: Any = AsyncMemory(mem) if name == "async" else mem
        yield Backend(name, memory, mem, clock)
        mem.close()
    elif name == "postgres":
        admin = request.getfixturevalue("pg_admin_dsn")
        with pg.fresh_database(admin) as dsn:
            url = pg.as_url(dsn)
            mem = Memory.open(url, embedder=HashEmbedder(), clock=clock)
            yield Backend(name, mem, mem, clock)
            mem.close()
    else:
        with running_server(str(tmp_path / "service.db")) as server:
            client = server.client("admin")
            yield Backend(name, client, client, None, tenant="acme", server=server)


def settle(backend: Backend, timeout: float = 20) -> None:
    """Run extraction to the end: the embedded memory's jobs now, or wait until the
    server's own worker has none pending."""
    if backend.server is None:
        backend.reader.process()
        return
    deadline = time.monotonic() + timeout
    while True:
        jobs = backend.reader.jobs()
        if jobs.get("pending", 0) == 0 and jobs.get("running", 0) == 0:
            return
        assert time.monotonic() < deadline, f"jobs still pending: {jobs}"
        time.sleep(0.05)


APP = "travel"


def user_says(text: str) -> types.Content:
    """A user's turn, as Google ADK takes it."""
    from google.genai import types

    return types.Content(role="user", parts=[types.Part(text=text)])


def stored(backend: Backend, session: str | None = None) -> list[dict[str, Any]]:
    """alice's events as remem holds them: role, text and metadata."""
    rows = backend.reader.events(actor="alice", session=session)
    return [
        r if isinstance(r, dict) else {"role": r.role.value, "text": r.text, "metadata": r.metadata}
        for r in rows
    ]


NS = ("users", "alice", "memories")


def make(backend: Backend, **options: Any) -> RememStore:
    """A LangGraph `RememStore` on the backend."""
    from remem.integrations.langgraph import RememStore

    return RememStore(backend.memory, tenant=backend.tenant, **options)


def call(backend: Backend, store: RememStore, method: str, *args: Any, **kw: Any) -> Any:
    """`store.method(...)`, or on an AsyncMemory `await store.amethod(...)`."""
    if backend.is_async:
        return asyncio.run(getattr(store, "a" + method)(*args, **kw))
    return getattr(store, method)(*args, **kw)


def versions(backend: Backend, actor: str = "alice") -> list[Any]:
    """The actor's records as remem holds them, every status, oldest first."""
    recs = backend.reader.records(actor=actor, all=True)
    return sorted(recs, key=lambda r: r.created_at)


def make_store(backend: Backend, **kw: Any) -> RememMemoryStore:
    """A Strands `RememMemoryStore` for alice, extracting at each invocation."""
    from strands.memory import ExtractionConfig, InvocationTrigger

    from remem.integrations.strands import RememMemoryStore

    return RememMemoryStore(
        backend.memory,
        actor="alice",
        extraction=ExtractionConfig(trigger=InvocationTrigger()),
        **kw,
    )
