"""The HTTP service and API keys on PostgreSQL: what differs by backend.

The cases of `tests/surfaces/http/test_service.py` and `tests/surfaces/mcp/test_mcp.py`
run there on both backends; here the `server` fixture serves a PostgreSQL database (the session's
server, see `tests.support.pg`) through a real uvicorn on loopback, for where the key
hashes live, tenant-bound statements, an unreachable database and the HTTP bench.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest

from tests.support import pg
from tests.support.servers import Server, running_server


@pytest.fixture(scope="module")
def server(pg_admin_dsn: str) -> Iterator[Server]:
    """The HTTP service on a PostgreSQL database of its own, for this module."""
    with pg.fresh_database(pg_admin_dsn) as dsn:
        with running_server(pg.as_url(dsn)) as running:
            yield running


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # `remem keys` opens no model; keep any child light all the same
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def test_only_the_hash_of_a_key_is_stored(server: Server, pg_admin_dsn: str) -> None:
    # read as the server's superuser: every tenant's rows, row-level security aside
    with psycopg.connect(pg.admin_dsn_for(pg_admin_dsn, server.db)) as conn:
        rows = conn.execute("SELECT * FROM api_keys").fetchall()
    stored = repr(rows)
    assert len(rows) >= len(server.keys)
    for secret in server.keys.values():
        assert secret not in stored
        assert hashlib.sha256(secret.encode()).hexdigest() in stored


def test_a_tenant_bound_statement_sees_only_its_own_keys(server: Server) -> None:
    from remem.store.postgres import sql as q

    with psycopg.connect(server.db) as conn, conn.transaction():
        conn.execute(q.SET_TENANT, {"tenant": "globex"})
        tenants = {r[0] for r in conn.execute("SELECT tenant FROM api_keys")}
    assert tenants == {"globex"}


def test_an_unreachable_database_is_a_clear_error(server: Server) -> None:
    from remem.errors import StoreError
    from remem.service.http import create_app
    from remem.service.mcp import McpServer

    gone = server.db.replace("/remem_test_", "/remem_no_such_database_", 1)
    for open_it in (lambda: create_app(gone), lambda: McpServer.open(gone, "rk_x")):
        with pytest.raises(StoreError, match="cannot use the PostgreSQL database") as info:
            open_it()
        assert "remem_app@" not in str(info.value) and "password" not in str(info.value)


def test_http_bench_runs_on_postgresql_and_refuses_a_used_database(pg_admin_dsn: str) -> None:
    from remem.errors import InvalidInput
    from remem.eval.bench.http import run_http_bench

    with pg.fresh_database(pg_admin_dsn) as dsn:
        url = pg.as_url(dsn)
        figures = run_http_bench(db=url, requests=12, concurrency=3, lexical=True, progress=False)
        assert figures["errors"] == 0 and figures["add_per_s"] > 0 and figures["retrieve_per_s"] > 0
        with pytest.raises(InvalidInput, match=r"already holds \d+ records and 12 events"):
            run_http_bench(db=url, requests=12, lexical=True, progress=False)
