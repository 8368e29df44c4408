"""The backends an adapter runs on: an embedded `Memory` on SQLite and on PostgreSQL,
an `AsyncMemory`, and a `Client` against a real `remem serve` (uvicorn on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem import AsyncMemory, Memory
from remem.embed import HashEmbedder
from tests.support import pg
from tests.support.adapters import Backend
from tests.support.clock import Clock
from tests.support.servers import running_server

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
