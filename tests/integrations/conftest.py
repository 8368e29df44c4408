"""The backends an adapter runs on: the `backend` fixture (`tests.support.adapters`), an
embedded `Memory` on SQLite and on PostgreSQL, an `AsyncMemory`, and a `Client` against a
real `remem serve` (uvicorn on loopback)."""

from tests.support.adapters import backend as backend  # the fixture
