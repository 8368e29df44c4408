"""Backend choice: which store a database name opens.

A PostgreSQL URL (`postgresql://...`, `postgres://...`) or libpq keyword DSN
(`host=... dbname=...`) opens `PostgresStore` (with the postgres extra);
`sqlite:///path` or a plain path opens `SQLiteStore`. `Memory.open`, the HTTP
service, the MCP server and `remem keys` all open through `open_store`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from remem.errors import InvalidInput
from remem.store.roles import Clock, Store

# a libpq keyword/value connection string, e.g. "host=/tmp dbname=remem user=app"
_KEYWORD_DSN = re.compile(r"\s*(?:host|dbname|user|port|service)=\S*(?:\s+\w+=\S*)*\s*")


def default_db_path() -> Path:
    """Where `Memory.open()` and the CLI keep the database when none is named."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("remem")) / "remem.db"


def database_name(target: object) -> str:
    """A database named by the caller, as text; InvalidInput for a name that is not
    text, is empty (which would open the default database unasked), or holds a NUL."""
    raw = os.fspath(target) if isinstance(target, str | os.PathLike) else target
    if not isinstance(raw, str):
        kind = type(raw).__name__
        raise InvalidInput(f"the database must be named by a path or URL (text), not {kind}")
    if not raw.strip():
        raise InvalidInput(
            "the database named is empty: give a file or a PostgreSQL URL, or name none "
            "for $REMEM_DB or the default"
        )
    if "\x00" in raw:
        raise InvalidInput("the database's name holds a NUL character")
    return raw


def open_store(
    target: str | os.PathLike[str] | None = None,
    *,
    clock: Clock | None = None,
    migrate: bool = True,
) -> Store:
    """The store `target` names: a PostgreSQL URL or libpq DSN, `sqlite:///path`, or a path.

    With no target: `$REMEM_DB`, else remem.db in the user data directory
    (created). The one place a database name becomes a backend. `clock` stamps
    what the store writes (default: UTC now); `migrate=False` applies no pending
    migration (`remem.store.schema`).
    """
    raw = database_name(target) if target is not None else os.environ.get("REMEM_DB")
    if not raw:
        path = default_db_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        raw = str(path)
    if is_server_url(raw):
        try:
            from remem.store.postgres.store import PostgresStore  # psycopg: the postgres extra
        except ImportError:
            raise InvalidInput(
                "a PostgreSQL URL needs the postgres extra: pip install 'remem[postgres]'"
            ) from None
        return PostgresStore(raw, clock=clock, migrate=migrate)
    from remem.store.sqlite.store import SQLiteStore  # not at import time: it loads numpy

    return SQLiteStore(raw.removeprefix("sqlite:///"), clock=clock, migrate=migrate)


def is_server_url(target: str) -> bool:
    """Whether `target` names a database server (a PostgreSQL URL or libpq DSN), not a file."""
    return target.startswith(("postgres://", "postgresql://")) or bool(
        _KEYWORD_DSN.fullmatch(target)
    )
