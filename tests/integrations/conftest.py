"""The backends an adapter runs on: an embedded `Memory` on SQLite and on PostgreSQL,
an `AsyncMemory`, and a `Client` against a real `remem serve` (uvicorn on loopback)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem import AsyncMemory, Memory
from remem.embed import HashEmbedder
from tests import pg_helpers
from tests.conftest import Clock
from tests.test_service import running_server

BACKENDS = ["sqlite", "postgres", "async", "client"]


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
    server: Any = None  # the running `remem serve` of a Client (`tests.test_service.Server`)

    @property
    def is_async(self) -> bool:
        return self.name == "async"


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
        with pg_helpers.fresh_database(admin) as dsn:
            url = pg_helpers.as_url(dsn)
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
