"""Two processes with different embedders writing a tenant's first vectors at once on
PostgreSQL: the second to check must see the first's model, not an empty index, so the
tenant ends with one model's vectors (`remem.store.flows.vector_fit`, issue 36). SQLite's
write lock serialises the two already."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg

from remem import Memory
from remem.embed import HashEmbedder
from tests.support import pg

A, B = HashEmbedder(64), HashEmbedder(128)


def _waiting(admin: str, n: int) -> bool:
    """Whether `n` sessions of the app role wait for a lock."""
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'",
            (pg.APP_ROLE,),
        ).fetchone()
    return row is not None and int(row[0]) >= n


def _until(cond: Callable[[], bool], seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_two_first_writers_of_different_models_leave_one_model(pg_admin_dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        admin = pg.admin_dsn_for(pg_admin_dsn, dsn)
        url = pg.as_url(dsn)
        errors: list[BaseException] = []

        def write(embedder: HashEmbedder, actor: str, text: str) -> None:
            try:
                with Memory.open(url, embedder=embedder) as mem:
                    mem.remember(actor=actor, text=text)
            except BaseException as exc:  # reported below
                errors.append(exc)

        # both models' indexes exist already (other tenants use them): nothing else
        # orders the two writes
        for tenant, embedder in (("t1", A), ("t2", B)):
            with Memory.open(url, tenant=tenant, embedder=embedder) as mem:
                mem.remember(actor="carol", text="Carol reads maps")
        # a third session holds A's model row, so that A's write, its check done, waits
        holder = psycopg.connect(admin)
        holder.execute(
            "INSERT INTO vector_models (tenant, model, dim) VALUES ('default', %s, 64)",
            (A.name,),
        )
        first = threading.Thread(target=write, args=(A, "alice", "Alice is allergic to peanuts"))
        first.start()
        assert _until(lambda: _waiting(admin, 1)), "A's write never waited"
        second = threading.Thread(target=write, args=(B, "bob", "Bob plays the cello"))
        second.start()
        second.join(3.0)  # unfixed: B saw no vectors, stored its own and ended
        holder.rollback()
        holder.close()
        first.join(30)
        second.join(30)
        assert not errors, errors
        with psycopg.connect(admin) as conn:
            models = conn.execute(
                "SELECT DISTINCT model FROM record_vectors WHERE tenant = 'default'"
            ).fetchall()
            noted = conn.execute(
                "SELECT model FROM vector_models WHERE tenant = 'default'"
            ).fetchall()
        assert [m for (m,) in models] == [A.name]
        assert [m for (m,) in noted] == [A.name]
