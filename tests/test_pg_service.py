"""The HTTP service, API keys and the MCP server on PostgreSQL.

The cases are those of `tests/test_service.py` and `tests/test_mcp.py`,
imported and run again here: pytest collects them in this module, where the
`server` fixture serves a PostgreSQL database (the session's server, see
`tests.pg_helpers`) through a real uvicorn on loopback, and `mcp_db` is a
PostgreSQL URL. Only what differs by backend is written here: where the key
hashes live, and the `remem keys` commands on a database of their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest

from tests import pg_helpers
from tests.test_mcp import (
    test_mcp_and_http_refuse_out_of_scope_calls_in_the_same_words,
    test_stdio_facts_profile_and_pins,
    test_stdio_recall_as_of_known_at_and_valid_at,
    test_stdio_tenant_key_and_bad_key,
    test_stdio_tools_scope_and_forget,
    test_streamable_http_needs_the_key,
)
from tests.test_service import (
    Server,
    check_keys_commands,
    running_server,
    test_a_key_from_the_cli_works_until_the_cli_revokes_it,
    test_a_revoked_key_is_401,
    test_admin_keys_over_http_stay_in_their_tenant,
    test_an_actor_key_cannot_widen_its_scope,
    test_another_tenant_sees_nothing,
    test_batch_create_update_delete_are_idempotent,
    test_client_mirrors_memory,
    test_eight_concurrent_writers_lose_nothing,
    test_event_to_extraction_to_retrieve,
    test_events_page_with_a_cursor,
    test_facts_and_profile_over_http,
    test_forget_and_export_a_subject,
    test_health_and_openapi_need_no_key,
    test_procedures_need_a_reviewer,
    test_recall_as_of_known_at_and_valid_at_over_http_and_the_client,
    test_roles_gate_erasure_review_and_keys,
    test_without_a_valid_key_is_401,
)

# run here again, on PostgreSQL (named so that the imports are used, not lint noise)
__all__ = [
    "test_a_key_from_the_cli_works_until_the_cli_revokes_it",
    "test_a_revoked_key_is_401",
    "test_admin_keys_over_http_stay_in_their_tenant",
    "test_an_actor_key_cannot_widen_its_scope",
    "test_another_tenant_sees_nothing",
    "test_batch_create_update_delete_are_idempotent",
    "test_client_mirrors_memory",
    "test_eight_concurrent_writers_lose_nothing",
    "test_event_to_extraction_to_retrieve",
    "test_events_page_with_a_cursor",
    "test_facts_and_profile_over_http",
    "test_forget_and_export_a_subject",
    "test_health_and_openapi_need_no_key",
    "test_mcp_and_http_refuse_out_of_scope_calls_in_the_same_words",
    "test_procedures_need_a_reviewer",
    "test_recall_as_of_known_at_and_valid_at_over_http_and_the_client",
    "test_roles_gate_erasure_review_and_keys",
    "test_stdio_facts_profile_and_pins",
    "test_stdio_recall_as_of_known_at_and_valid_at",
    "test_stdio_tenant_key_and_bad_key",
    "test_stdio_tools_scope_and_forget",
    "test_streamable_http_needs_the_key",
    "test_without_a_valid_key_is_401",
]


@pytest.fixture(scope="module")
def server(pg_admin_dsn: str) -> Iterator[Server]:
    """The HTTP service on a PostgreSQL database of its own, for this module."""
    with pg_helpers.fresh_database(pg_admin_dsn) as dsn:
        with running_server(pg_helpers.as_url(dsn)) as running:
            yield running


@pytest.fixture
def mcp_db(pg_admin_dsn: str) -> Iterator[str]:
    """`remem mcp --db` for the MCP tests: a fresh PostgreSQL database's URL."""
    with pg_helpers.fresh_database(pg_admin_dsn) as dsn:
        yield pg_helpers.as_url(dsn)


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # `remem keys` opens no model; keep any child light all the same
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def test_only_the_hash_of_a_key_is_stored(server: Server, pg_admin_dsn: str) -> None:
    # read as the server's superuser: every tenant's rows, row-level security aside
    with psycopg.connect(pg_helpers.admin_dsn_for(pg_admin_dsn, server.db)) as conn:
        rows = conn.execute("SELECT * FROM api_keys").fetchall()
    stored = repr(rows)
    assert len(rows) >= len(server.keys)
    for secret in server.keys.values():
        assert secret not in stored
        assert hashlib.sha256(secret.encode()).hexdigest() in stored


def test_keys_commands_on_postgresql(pg_admin_dsn: str) -> None:
    with pg_helpers.fresh_database(pg_admin_dsn) as dsn:
        check_keys_commands(pg_helpers.as_url(dsn))


def test_a_tenant_bound_statement_sees_only_its_own_keys(server: Server) -> None:
    from remem.store import postgres_sql as q

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
    from remem.service.bench_http import run_http_bench

    with pg_helpers.fresh_database(pg_admin_dsn) as dsn:
        url = pg_helpers.as_url(dsn)
        figures = run_http_bench(db=url, requests=12, concurrency=3, lexical=True, progress=False)
        assert figures["errors"] == 0 and figures["add_per_s"] > 0 and figures["retrieve_per_s"] > 0
        with pytest.raises(InvalidInput, match=r"already holds \d+ records and 12 events"):
            run_http_bench(db=url, requests=12, lexical=True, progress=False)
