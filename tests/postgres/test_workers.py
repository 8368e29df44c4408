"""Horizontal workers on PostgreSQL: several `remem worker` processes share one queue.

Three real worker processes drain one database holding a few hundred events;
one is killed with SIGKILL while it holds a leased batch. The other two take
its jobs once their lease runs out, and at the end every job is done, every
event is there, and each event produced exactly the records a single offline
run produces from it: nothing lost, nothing done twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

import remem
from remem import Memory
from remem.model import Status
from remem.store.postgres import sql as q
from remem.store.roles import Scope
from tests.support import pg

LEASE = 5.0  # the shortest lease the configuration allows: a dead worker's jobs wait this long
ACTORS = 60
FACTS = [
    "I'm vegetarian.",
    "I live in {city}.",
    "My dog is called {name}.",
    "I prefer aisle seats on long flights.",
    "hmm, let me think",  # chatter: a job that writes no record
]
CITIES = ["Lisbon", "Porto", "Kyoto", "Oslo", "Lima", "Hanoi"]
NAMES = ["Rex", "Bolt", "Miso", "Pip", "Luna", "Toby"]


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


def events() -> list[dict[str, Any]]:
    base = datetime(2026, 3, 1, tzinfo=UTC)
    return [
        {
            "actor": f"user-{a}",
            "session": "s1",
            "role": "user",
            "text": fact.format(city=CITIES[a % len(CITIES)], name=NAMES[a % len(NAMES)]),
            "time": (base + timedelta(minutes=10 * a + i)).isoformat(),
            "event_id": f"ev-{a}-{i}",
        }
        for a in range(ACTORS)
        for i, fact in enumerate(FACTS)
    ]


def records_by_event(mem: Memory) -> Counter[tuple[str, str]]:
    """How many records each (source event, text) pair has, over every actor."""
    return Counter(
        (event_id, r.text)
        for a in range(ACTORS)
        for r in mem.store.records.list_records(Scope(mem.tenant, f"user-{a}"), list(Status))
        for event_id in r.source.event_ids
    )


def expected(tmp_path: Path) -> Counter[tuple[str, str]]:
    """What one offline run in one process makes of the same events (on SQLite)."""
    with Memory.open(tmp_path / "reference.db", embedder=None) as mem:
        mem.add_events(events())
        assert mem.process().failed == 0
        return records_by_event(mem)


def query(dsn: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of every tenant (the app role obeys row-level security)."""
    with psycopg.connect(dsn) as conn, conn.transaction():
        conn.execute(q.SET_ALL_TENANTS)
        return conn.execute(sql, params).fetchall()


def count(dsn: str, where: str) -> int:
    return int(query(dsn, f"SELECT count(*) FROM jobs WHERE {where}")[0][0])


def test_three_workers_one_killed_every_job_done_exactly_once(dsn: str, tmp_path: Path) -> None:
    url = pg.as_url(dsn)
    with Memory.open(url, embedder=None) as mem:
        assert all(mem.add_events(events()))
    total = ACTORS * len(FACTS)
    config = tmp_path / "remem.toml"
    config.write_text(f"[worker]\nlease_seconds = {LEASE}\nbatch_events = 8\n")
    env = dict(
        os.environ,
        REMEM_MINILM_DIR="/nonexistent",  # no embedder: the test is about the queue
        HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join(
            [str(Path(remem.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
        ),
    )
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", url, "--config", str(config),
           "worker", "--interval", "0.1", "--json"]  # fmt: skip

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )

    # The victim starts first; it is frozen (SIGSTOP) at a moment it holds a leased
    # batch, so which jobs die with it is known: while it runs alone, every running
    # job is its. The other two start while it is frozen, and it is killed
    # (SIGKILL) once they are at work: three workers, one dying mid-batch.
    victim = start()
    workers = [victim]
    try:
        deadline = time.monotonic() + 30
        held: set[int] = set()
        while not held:
            assert time.monotonic() < deadline, "the first worker never took a job"
            if count(dsn, "status = 'done'") == 0:
                time.sleep(0.02)
                continue
            victim.send_signal(signal.SIGSTOP)
            time.sleep(0.2)  # a commit it sent just before is the server's to finish
            held = {r[0] for r in query(dsn, "SELECT id FROM jobs WHERE status = 'running'")}
            if not held:  # caught between two batches
                victim.send_signal(signal.SIGCONT)
                time.sleep(0.01)
        done_before = count(dsn, "status = 'done'")
        assert done_before + len(held) < total, "the queue drained before the others started"
        survivors = [start(), start()]
        workers += survivors
        while count(dsn, "status = 'done'") == done_before:
            assert time.monotonic() < deadline, "the other workers never took a job"
            time.sleep(0.05)
        victim.kill()
        victim.communicate(timeout=10)
        assert victim.returncode == -signal.SIGKILL

        deadline = time.monotonic() + 40
        while count(dsn, "status != 'done'"):
            assert time.monotonic() < deadline, "the surviving workers did not drain the queue"
            assert all(w.poll() is None for w in survivors), "a surviving worker died"
            time.sleep(0.2)
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.send_signal(signal.SIGTERM)
        outputs = [w.communicate(timeout=30) if w.stdout and not w.stdout.closed else ("", "")
                   for w in workers]  # fmt: skip
    for w, (_, errors) in zip(survivors, outputs[1:], strict=True):
        assert w.returncode == 0, errors
    by_survivors = sum(json.loads(out)["jobs_done"] for out, _ in outputs[1:])
    assert by_survivors == total - done_before  # the rest, the killed worker's batch included

    # every job done; the killed worker's leased jobs were taken again, no other twice
    jobs = query(dsn, "SELECT id, status, attempts FROM jobs")
    assert len(jobs) == total and {status for _, status, _ in jobs} == {"done"}
    assert {job_id for job_id, _, attempts in jobs if attempts > 1} == held
    # no event lost, and each event made exactly what one offline run makes of it
    assert query(dsn, "SELECT count(*) FROM events")[0][0] == total
    with Memory.open(url, embedder=None) as mem:
        made = records_by_event(mem)
    assert made == expected(tmp_path)
    assert max(made.values()) == 1
