"""Thread state on PostgreSQL: what only a server with many writers and row-level
security adds.

The cases of `tests/flows/test_thread.py` that take only `mem`, `clock` and `db_path` run
there on both backends (`both_backends`). Cases bound to a SQLite file (races between
processes, the killed workflow, erasure counts) are ported here with a PostgreSQL URL:
this module's `db_path` is a fresh database of the session's server (see
`tests.support.pg`) and its `mem` a `Memory` on it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.store.postgres import sql as store_sql
from remem.store.postgres.store import PostgresStore
from remem.store.postgres.thread import PostgresThreadStore, count_actor_rows
from remem.thread.api import (
    begin_tool_call,
    checkpoint_list,
    checkpoint_load,
    checkpoint_save,
    complete_tool_call,
    has_thread_state,
    tool_call_status,
    tool_calls,
)
from remem.thread.checkpoints import CallStatus, CheckpointConflict
from tests.support import pg
from tests.support.cli import err, ok
from tests.support.clock import Clock
from tests.support.thread import KEY, STATE, WF, WORKFLOW_SCRIPT, race, resume

THREAD_TABLES = ["checkpoints", "tool_calls"]


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    """A fresh database of the session's server, as the app role's key=value DSN."""
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


@pytest.fixture
def db_path(dsn: str) -> str:
    """What the imported SQLite cases open: here, the URL of this test's database."""
    return pg.as_url(dsn)


@pytest.fixture
def mem(db_path: str, clock: Clock) -> Iterator[Memory]:
    with Memory.open(db_path, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
        yield m


def test_postgres_keeps_thread_state(mem: Memory) -> None:
    assert isinstance(mem.store, PostgresStore) and has_thread_state(mem)


# -- many writers, one database -------------------------------------------------------


def test_concurrent_savers_exactly_one_wins_per_version(db_path: str) -> None:
    url: Any = db_path  # `race` opens each Memory on it, as on a file
    outcomes = race(
        url, 6, lambda m, i: checkpoint_save(m, actor="u42", workflow=WF, state={"data": {"w": i}})
    )
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1
    assert all(isinstance(o, CheckpointConflict) for o in outcomes if isinstance(o, Exception))
    for version in range(1, 4):
        outcomes = race(
            url,
            6,
            lambda m, i, v=version: checkpoint_save(
                m, actor="u42", workflow=WF, state={"data": {"w": i}}, expected_version=v
            ),
        )
        winners = [o for o in outcomes if not isinstance(o, Exception)]
        assert len(winners) == 1 and winners[0].version == version + 1
        losers = [o for o in outcomes if isinstance(o, Exception)]
        assert all(isinstance(o, CheckpointConflict) for o in losers), losers
        assert {o.current_version for o in losers if isinstance(o, CheckpointConflict)} == {
            version + 1
        }
        with Memory.open(db_path, embedder=None) as m:
            assert checkpoint_load(m, actor="u42", workflow=WF) == winners[0]


def test_concurrent_begins_let_exactly_one_caller_perform(db_path: str) -> None:
    url: Any = db_path
    outcomes = race(
        url,
        8,
        lambda m, i: begin_tool_call(
            m, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30}
        ),
    )
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert [o.decision for o in outcomes].count("perform") == 1
    assert {o.call.tool_call_id for o in outcomes} == {outcomes[0].call.tool_call_id}
    assert max(o.call.attempts for o in outcomes) == 8
    assert sorted(o.call.attempts for o in outcomes) == list(range(1, 9))  # none counted twice
    with Memory.open(db_path, embedder=None) as m:
        (call,) = tool_calls(m, actor="u42")
        assert call.status is CallStatus.UNKNOWN and call.attempts == 8


def test_concurrent_completions_keep_the_first_result(mem: Memory) -> None:
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    barrier = threading.Barrier(6, timeout=60)
    outcomes: list[Any] = [None] * 6

    def work(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = complete_tool_call(
                mem, actor="u42", workflow=WF, idempotency_key=KEY, result={"receipt": i}
            ).result
        except Exception as exc:  # collected and checked below
            outcomes[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(winners) == 1, outcomes
    assert all("different result" in str(o) for o in outcomes if isinstance(o, Exception))
    call = tool_call_status(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert call is not None and call.result == winners[0]


# -- the done-when test, on PostgreSQL --------------------------------------------------


def test_a_kill_between_started_and_completed_is_neither_repeated_nor_lost(
    db_path: str, tmp_path: Path
) -> None:
    script, effects = tmp_path / "workflow.py", tmp_path / "effects.txt"
    script.write_text(WORKFLOW_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), db_path, str(effects), "after_effect"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "after_effect", f"child did not reach after_effect: {line!r}"
        proc.kill()  # SIGKILL: its open connection dies with it, no rollback handlers
    finally:
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()
    assert proc.returncode == -9
    assert effects.read_text().splitlines() == ["paid 30"]

    url: Any = db_path
    resumed = resume(script, url, effects)
    assert resumed["begun"] is False and resumed["decision"] == "unknown"
    assert effects.read_text().splitlines() == ["paid 30"]  # not repeated
    with Memory.open(db_path, embedder=None) as m:  # not lost: surfaced for reconciliation
        (open_call,) = tool_calls(m, actor="u42", unresolved=True)
        assert open_call.idempotency_key == KEY and open_call.request == {"amount": 30}
        complete_tool_call(m, actor="u42", workflow=WF, idempotency_key=KEY, result={"r": 1})
    again = resume(script, url, effects)
    assert again["decision"] == "done" and again["tool_call"]["result"] == {"r": 1}
    assert effects.read_text().splitlines() == ["paid 30"]


# -- tenants, row-level security, retention across tenants, erasure ------------------------


def _fill(url: str, clock: Clock, tenant: str) -> None:
    with Memory.open(url, tenant=tenant, embedder=None, clock=clock) as m:
        checkpoint_save(m, actor="u42", workflow=WF, state=STATE, retention=timedelta(days=1))
        begin_tool_call(m, actor="u42", workflow=WF, idempotency_key=KEY, request={"t": tenant})


def test_unscoped_query_under_one_tenant_sees_nothing_of_another(
    db_path: str, dsn: str, clock: Clock
) -> None:
    for tenant in ("t1", "t2"):
        _fill(db_path, clock, tenant)
    with psycopg.connect(dsn) as conn:
        for table in THREAD_TABLES:
            with conn.transaction():  # no WHERE tenant = ...: row-level security filters
                conn.execute(store_sql.SET_TENANT, {"tenant": "t1"})
                rows = conn.execute(f"SELECT tenant, actor, workflow FROM {table}").fetchall()
            assert rows == [("t1", "u42", WF)], table
            with conn.transaction():  # no tenant named: no rows at all
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
            with conn.transaction():
                conn.execute(store_sql.SET_TENANT, {"tenant": "t1"})
                gone = conn.execute(f"DELETE FROM {table} WHERE tenant = 't2'")
                assert gone.rowcount == 0  # invisible, so untouched
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute(store_sql.SET_TENANT, {"tenant": "t1"})
            conn.execute(
                "INSERT INTO checkpoints (tenant, actor, workflow, version, created_at, "
                "updated_at) VALUES ('t2', 'u42', 'planted', 1, now(), now())"
            )
    with Memory.open(db_path, tenant="t2", embedder=None) as m:
        assert [c.workflow for c in checkpoint_list(m, actor="u42")] == [WF]
        assert tool_calls(m, actor="u42")[0].request == {"t": "t2"}


def test_thread_tables_have_forced_row_level_security(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "  (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid "
            "   AND p.polname = 'tenant_rows') "
            "FROM pg_class c WHERE c.relkind = 'r' AND c.relname = ANY(%s)",
            (THREAD_TABLES,),
        ).fetchall()
    assert sorted(rows) == [(t, True, True, 1) for t in THREAD_TABLES]


def test_retention_for_every_tenant_holds_open_workflows(
    db_path: str, clock: Clock, mem: Memory
) -> None:
    for tenant in ("t1", "t2"):
        _fill(db_path, clock, tenant)
    with Memory.open(db_path, tenant="t2", embedder=None, clock=clock) as m:
        complete_tool_call(m, actor="u42", workflow=WF, idempotency_key=KEY, result="ok")
    assert isinstance(mem.store, PostgresStore)
    report = PostgresThreadStore(mem.store).expire(clock.now + timedelta(days=2))  # all tenants
    # t1's workflow has a call of unknown outcome and is held; t2's goes as a whole
    assert report.as_dict() == {
        "checkpoints_expired": 1,
        "tool_calls_expired": 1,
        "held": [
            {
                "actor": "u42",
                "workflow": WF,
                "reason": "unresolved_tool_call",
                "idempotency_key": None,
            }
        ],
    }
    for tenant, left in (("t1", 1), ("t2", 0)):
        with Memory.open(db_path, tenant=tenant, embedder=None) as m:
            assert len(checkpoint_list(m, actor="u42")) == left
            assert len(tool_calls(m, actor="u42")) == left


def test_forget_actor_erases_their_thread_state(mem: Memory) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={"pending_approval": {"x": 1}})
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    checkpoint_save(mem, actor="u7", workflow=WF, state={})
    begin_tool_call(mem, actor="u7", workflow=WF, idempotency_key=KEY)
    assert isinstance(mem.store, PostgresStore)
    erased = PostgresThreadStore(mem.store).forget_actor(mem.tenant, "u42")
    assert erased == {"checkpoints": 1, "tool_calls": 1}
    assert count_actor_rows(mem.store, mem.tenant, "u42") == {"checkpoints": 0, "tool_calls": 0}
    assert count_actor_rows(mem.store, mem.tenant, "u7") == {"checkpoints": 1, "tool_calls": 1}
    # and through `forget`, in the same transaction as the records, verified by reading
    report = mem.forget(actor="u7")
    assert report.verified and report.deleted["checkpoints"] == 1
    assert report.deleted["tool_calls"] == 1
    assert report.remaining["checkpoints"] == report.remaining["tool_calls"] == 0
    assert checkpoint_list(mem, actor="u7") == [] and tool_calls(mem, actor="u7") == []


# -- the CLI: the same JSON as on a SQLite file -------------------------------------------

TIMES = {"created_at", "updated_at", "started_at", "completed_at", "expires_at"}


def _cli_session(capsys: pytest.CaptureFixture[str], db: Any) -> list[Any]:
    """One scripted thread-state session through `remem --db DB ... --json`."""
    who = ("--actor", "u42", "--workflow", WF)
    key = (*who, "--key", KEY)
    state = json.dumps({"step": "pay", "completed_steps": ["quote"], "data": {"b": 1, "a": 2}})
    out: list[Any] = [
        ok(capsys, db, "checkpoint", "save", *who, "--state", state),
        ok(capsys, db, "checkpoint", "save", *who, "--state", "{}", "--expected-version", "1"),
        err(capsys, db, "checkpoint", "save", *who, "--state", "{}", "--expected-version", "1"),
        err(capsys, db, "checkpoint", "save", *who, "--state", "{}"),
        ok(capsys, db, "checkpoint", "load", *who),
        err(capsys, db, "checkpoint", "load", "--actor", "mallory", "--workflow", WF),
        ok(capsys, db, "checkpoint", "list", "--actor", "u42"),
        ok(capsys, db, "toolcall", "status", *key),
        ok(capsys, db, "toolcall", "begin", *key, "--id", "call-1", "--request", '{"n":1e16}'),
        ok(capsys, db, "toolcall", "begin", *key, "--request", '{"n":1e16}'),
        err(capsys, db, "toolcall", "begin", *key, "--request", '{"n":1}'),
        ok(capsys, db, "toolcall", "status", *key),
        ok(capsys, db, "toolcall", "list", "--actor", "u42", "--unresolved"),
        ok(capsys, db, "toolcall", "complete", *key, "--result", '{"z":[1,2.5],"a":null}'),
        err(capsys, db, "toolcall", "complete", *key, "--result", "2"),
        ok(capsys, db, "toolcall", "status", *key),
        ok(capsys, db, "toolcall", "list", "--actor", "u42", "--unresolved"),
        err(capsys, db, "toolcall", "release", *key),
        ok(capsys, db, "checkpoint", "expire"),
    ]
    return out


def _timeless(value: Any) -> Any:
    """`value` without its clock times (each run has its own), every other field kept."""
    if isinstance(value, dict):
        return {k: "<time>" if k in TIMES else _timeless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_the_cli_gives_the_same_json_as_on_sqlite(
    capsys: pytest.CaptureFixture[str],
    db_path: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    on_pg = _cli_session(capsys, db_path)
    on_sqlite = _cli_session(capsys, tmp_path / "m.db")
    assert _timeless(on_pg) == _timeless(on_sqlite)
    # and byte for byte, key order and numbers included, apart from the times
    assert json.dumps(_timeless(on_pg)) == json.dumps(_timeless(on_sqlite))
    assert on_pg[8]["decision"] == "perform" and on_pg[9]["decision"] == "unknown"
    assert on_pg[9]["tool_call"]["request"] == {"n": 1e16}
    assert on_pg[15]["state"] == "done"
