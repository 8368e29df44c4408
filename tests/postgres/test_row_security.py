"""A PostgreSQL role that row-level security does not bind is found, said and refused.

The session's server (`tests.support.pg`) has a superuser, its admin DSN, and
the ordinary role `remem_app` that owns each test database: opening as the
superuser must warn on every surface (the store, CLI stderr, `/healthz`, the
service's startup log, the MCP server's stderr), `remem serve` and `remem mcp
--transport http` must refuse it without `--allow-rls-bypass`, and as
`remem_app` nothing is said.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient

from remem.cli.main import main
from remem.errors import RlsBypassed
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.sqlite.store import SQLiteStore
from tests.support import pg
from tests.support.processes import child_env, free_port, stop

WARNING = "remem: warning: the PostgreSQL role is a superuser"


@pytest.fixture
def urls(pg_admin_dsn: str) -> Iterator[tuple[str, str]]:
    """A fresh database's URLs: as the superuser, and as the ordinary app role."""
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        admin = pg.admin_dsn_for(pg_admin_dsn, app_dsn)
        yield pg.as_url(admin), pg.as_url(app_dsn)


def test_the_store_says_whether_row_level_security_binds_it(
    urls: tuple[str, str], tmp_path: Path
) -> None:
    admin, app = urls
    store = open_store(admin)
    try:
        assert store.row_security and store.rls_bypassed
        (line,) = store.warnings()
        assert "is a superuser" in line and "tenant wall is off" in line
        assert "password" not in line and "remem_app" not in line
    finally:
        store.close()
    store = open_store(app)
    try:
        assert store.row_security and not store.rls_bypassed and store.warnings() == []
    finally:
        store.close()
    lite = SQLiteStore(tmp_path / "m.db")  # no row-level security at all, and it says so
    try:
        assert not lite.row_security and not lite.rls_bypassed and lite.warnings() == []
    finally:
        lite.close()


def test_an_owner_of_an_unforced_table_bypasses_it(urls: tuple[str, str]) -> None:
    admin, app = urls
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("ALTER TABLE records NO FORCE ROW LEVEL SECURITY")
    store = open_store(app)  # remem_app owns the tables
    try:
        assert store.rls_bypassed
        assert "without FORCE ROW LEVEL SECURITY (records)" in store.warnings()[0]
    finally:
        store.close()


def test_the_cli_warns_on_stderr_for_every_command_that_opens_the_store(
    urls: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    admin, app = urls
    for args in (["jobs", "list"], ["keys", "list"], ["event", "list", "--actor", "alice"]):
        assert main(["--db", admin, *args, "--json"]) == 0
        out, err = capsys.readouterr()
        json.loads(out)  # stdout is still one JSON document
        assert err.count(WARNING) == 1, (args, err)
        assert main(["--db", app, *args, "--json"]) == 0
        assert "warning" not in capsys.readouterr().err


def test_serve_refuses_a_bypassing_role_without_the_flag(
    urls: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    admin, _app = urls
    code = main(["--db", admin, "serve", "--lexical", "--no-worker", "--json"])
    out, _err = capsys.readouterr()
    assert code != 0
    error = json.loads(out.strip().splitlines()[-1])["error"]
    assert error["code"] == "rls_bypassed" and "--allow-rls-bypass" in error["message"]
    with pytest.raises(RlsBypassed):
        create_app(admin, worker=False)


def test_allowed_it_is_in_the_startup_log_and_healthz(
    urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    admin, app = urls
    with (
        caplog.at_level(logging.WARNING, logger="remem.service"),
        TestClient(create_app(admin, worker=False, allow_rls_bypass=True)) as client,
    ):
        health = client.get("/healthz").json()
    assert health["status"] == "ok"
    (line,) = health["warnings"]
    assert "is a superuser" in line
    assert any(WARNING in r.getMessage() for r in caplog.records)
    with TestClient(create_app(app, worker=False)) as client:
        assert client.get("/healthz").json() == {"status": "ok"}


def _start(cmd: list[str], log: Path, url: str) -> subprocess.Popen[bytes]:
    with open(log, "w") as errlog:
        proc = subprocess.Popen(cmd, env=child_env(), stdout=errlog, stderr=errlog)
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            httpx.get(url, timeout=2)
            return proc
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)


def test_serve_with_the_flag_starts_and_warns(urls: tuple[str, str], tmp_path: Path) -> None:
    admin, _app = urls
    port = free_port()
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", admin, "serve", "--port", str(port)]
    cmd += ["--lexical", "--no-worker", "--allow-rls-bypass"]
    log = tmp_path / "serve.log"
    proc = _start(cmd, log, f"http://127.0.0.1:{port}/healthz")
    try:
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
        assert "is a superuser" in health["warnings"][0]
    finally:
        stop(proc)
    assert WARNING in log.read_text()


def test_mcp_over_http_refuses_it_without_the_flag(urls: tuple[str, str], tmp_path: Path) -> None:
    admin, _app = urls
    store = open_store(admin)
    key = keyring.create_key(store.keys, tenant="acme", actor="alice")[1]
    store.close()
    port = free_port()
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", admin, "mcp", "--key", key, "--lexical"]
    cmd += ["--transport", "http", "--port", str(port)]
    refused = subprocess.run(
        [*cmd, "--json"], env=child_env(), capture_output=True, text=True, timeout=60
    )
    assert refused.returncode != 0
    assert json.loads(refused.stdout)["error"]["code"] == "rls_bypassed"
    assert WARNING in refused.stderr
    from remem.service.mcp import McpServer

    server = McpServer.open(admin, key, port=port)  # the library refuses it the same way
    try:
        with pytest.raises(RlsBypassed, match="--allow-rls-bypass"):
            server.run("http")
    finally:
        server.close()
    log = tmp_path / "mcp.log"
    proc = _start([*cmd, "--allow-rls-bypass"], log, f"http://127.0.0.1:{port}/mcp")
    try:
        assert httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=5).status_code == 401
    finally:
        stop(proc)
    assert WARNING in log.read_text()
