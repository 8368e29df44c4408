"""The schema a migrated database holds, as normalised text: what the committed
snapshots in tests/data/schema/ hold and `tests/hygiene/test_schema.py` compares with.

SQLite: every object of `sqlite_master` (type, name, table, its SQL with comments
dropped and white space collapsed), then `user_version` and `application_id`.
PostgreSQL, schema `public`: columns (type, nullability, default), constraints,
indexes, row-level security and its policies, functions and triggers (not those of an
extension), extensions by name, and the applied migration numbers. No owner, database
name or time appears, so two fresh databases give the same text.

Regenerate both snapshots after a migration (it starts a PostgreSQL like the tests):

    PYTHONPATH=src python -m tests.support.schema
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from tests.support import ROOT

SNAPSHOTS = ROOT / "tests" / "data" / "schema"
REGENERATE = "PYTHONPATH=src python -m tests.support.schema"


def _norm(sql: str) -> str:
    """SQL without `--` comments, its white space collapsed to one space."""
    return " ".join(" ".join(ln.split("--", 1)[0] for ln in sql.splitlines()).split())


def sqlite_schema(path: Path) -> str:
    """The schema of the SQLite file at `path`, one object a line, sorted."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        ).fetchall()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        application = conn.execute("PRAGMA application_id").fetchone()[0]
    finally:
        conn.close()
    lines = sorted(f"{kind} {name} ON {table}: {_norm(sql)}" for kind, name, table, sql in rows)
    return "\n".join([*lines, f"user_version {version}", f"application_id {application}"]) + "\n"


_POSTGRES = {
    "column": """
        SELECT table_name, column_name, data_type, udt_name, is_nullable,
               coalesce(column_default, ''), coalesce(character_maximum_length::text, '')
        FROM information_schema.columns WHERE table_schema = 'public'
    """,
    "constraint": """
        SELECT rel.relname, con.conname, con.contype::text, pg_get_constraintdef(con.oid)
        FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
        JOIN pg_namespace ns ON ns.oid = rel.relnamespace WHERE ns.nspname = 'public'
    """,
    "index": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "security": """
        SELECT relname, relrowsecurity::text, relforcerowsecurity::text FROM pg_class
        WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')
    """,
    "policy": """
        SELECT tablename, policyname, permissive, array_to_string(roles, ','), cmd,
               coalesce(qual, ''), coalesce(with_check, '')
        FROM pg_policies WHERE schemaname = 'public'
    """,
    "function": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
        FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND NOT EXISTS (
            SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
    """,
    "trigger": """
        SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
        JOIN pg_class c ON c.oid = t.tgrelid
        WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace
    """,
    "extension": "SELECT extname FROM pg_extension",
    "migration": "SELECT version::text FROM schema_version",
}


def postgres_schema(dsn: str) -> str:
    """The schema `public` of the PostgreSQL database `dsn` names, one item a line, sorted."""
    import psycopg

    lines = []
    with psycopg.connect(dsn) as conn:
        for kind, sql in _POSTGRES.items():
            for row in conn.execute(sql).fetchall():
                lines.append(f"{kind} " + " | ".join(_norm(str(v)) for v in row))
    return "\n".join(sorted(lines)) + "\n"


def fresh_sqlite_schema() -> str:
    """The schema of a new SQLite file, migrated by remem."""
    from remem.store.sqlite.store import SQLiteStore

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fresh.db"
        SQLiteStore(path).close()
        return sqlite_schema(path)


def fresh_postgres_schema(admin_dsn: str) -> str:
    """The schema of a new PostgreSQL database, migrated by remem as its app role."""
    from remem.store.postgres.store import PostgresStore
    from tests.support import pg

    with pg.fresh_database(admin_dsn, empty=True) as dsn:
        PostgresStore(dsn, min_size=1, max_size=1).close()
        return postgres_schema(dsn)


def _write() -> None:
    from tests.support import pg

    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    (SNAPSHOTS / "sqlite.txt").write_text(fresh_sqlite_schema())
    admin = pg.acquire()
    try:
        (SNAPSHOTS / "postgres.txt").write_text(fresh_postgres_schema(admin))
    finally:
        pg.release()
    print(f"wrote {SNAPSHOTS / 'sqlite.txt'} and {SNAPSHOTS / 'postgres.txt'}")


if __name__ == "__main__":
    _write()


def rewind_sqlite(conn: sqlite3.Connection, version: int) -> None:
    """Make a migrated SQLite file look as `version` left it, for a test of an upgrade:
    the columns later migrations added with `ALTER TABLE ... ADD COLUMN` (which SQLite
    cannot run twice) are dropped, after the indexes and triggers those migrations made
    (which may read them), then `user_version` is set. The later migrations' tables
    stay: they are made with IF NOT EXISTS, so running them again is harmless."""
    import re

    from remem.store.text import read_migrations, split_sql

    added = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", re.I)
    made = re.compile(r"CREATE (?:UNIQUE )?(INDEX|TRIGGER) (?:IF NOT EXISTS )?(\w+)", re.I)
    for number, script in reversed(read_migrations("sqlite/migrations")):
        if number > version:
            statements = split_sql(script)
            for statement in statements:  # what may read a column dropped below goes first
                if found := made.match(statement):
                    conn.execute(f"DROP {found[1]} IF EXISTS {found[2]}")
            for statement in statements:
                if found := added.match(statement):
                    conn.execute(f"ALTER TABLE {found[1]} DROP COLUMN {found[2]}")
    conn.execute(f"PRAGMA user_version = {version}")
