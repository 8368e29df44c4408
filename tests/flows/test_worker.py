"""The worker: a thread per strategy in the library, and a process that can be killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.pipeline.worker import Worker
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def _wait(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _config_file(tmp_path: Path, llm: ScriptedLLM, strategies: str) -> Path:
    path = tmp_path / "remem.toml"
    path.write_text(
        f"""
[llm]
base_url = "{llm.base_url}"
model = "fake-model"
timeout = 20

{strategies}

[worker]
lease_seconds = 5

[retry]
base_seconds = 0.01
job_base_seconds = 0
job_max_seconds = 0
""",
        encoding="utf-8",
    )
    return path


def _events(mem: Memory, n: int, sessions: int = 3) -> None:
    mem.add_events(
        {
            "actor": "ana",
            "session": f"s{i % sessions}",
            "role": "user",
            "text": f"I own {i + 2} bicycles and {i + 1} kites.",
            "time": T0 + timedelta(minutes=i),
            "event_id": f"e{i}",
        }
        for i in range(n)
    )


def test_the_library_worker_runs_in_a_thread(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        worker = Worker(mem.pipeline, idle_seconds=0.05)
        worker.start()
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Lisbon.", time=T0)
        _wait(lambda: mem.store.jobs.pending_jobs() == 0, 10, "the job")
        total = worker.stop(5)
        assert not worker.running
        assert total.jobs_done == 1 and total.records_added == 1
        assert [r.value for r in mem.records(actor="ana")] == ["Lisbon"]


def test_a_slow_strategy_does_not_hold_up_another(tmp_path: Path) -> None:
    release = threading.Event()

    def slow_preferences(request: dict[str, Any]) -> Reply:
        if "preferences" in request["messages"][0]["content"]:
            release.wait(10)
        return memory_model(request)

    with ScriptedLLM(responder=slow_preferences) as llm:
        config = _config_file(tmp_path, llm, "[strategies.semantic]\n[strategies.preference]")
        with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as mem:
            mem.add_event(actor="ana", session="s1", role="user", text="I love figs.", time=T0)
            worker = Worker(mem.pipeline, idle_seconds=0.05)
            worker.start()
            try:
                # semantic finishes while preference is still waiting on its model
                _wait(lambda: mem.records(actor="ana"), 10, "the semantic record")
                assert {r.kind.value for r in mem.records(actor="ana")} == {"semantic"}
                assert mem.store.jobs.job_counts(mem.tenant)["running"] == 1
            finally:
                release.set()
            _wait(lambda: mem.store.jobs.pending_jobs() == 0, 10, "the preference job")
            worker.stop(5)
            assert {r.kind.value for r in mem.records(actor="ana")} == {"semantic", "preference"}


def _worker(db: Path, config: Path) -> subprocess.Popen[bytes]:
    # lexical only, like the test's own Memory: the same rules decide in every process
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "REMEM_CONFIG": str(config),
        "REMEM_MINILM_DIR": "/nonexistent",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "remem.cli.main", "--db", str(db), "worker", "--interval", "0.1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_worker_killed_mid_job_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    first = threading.Event()
    calls = Counter[str]()

    def stall_first(request: dict[str, Any]) -> Reply:
        calls["all"] += 1
        if not first.is_set():
            first.set()
            return Reply.slow(6, memory_model(request))  # the worker is killed meanwhile
        return memory_model(request)

    db = tmp_path / "m.db"
    with ScriptedLLM(responder=stall_first) as llm:
        config = _config_file(tmp_path, llm, "[strategies.semantic]\n[strategies.preference]")
        with Memory.open(db, embedder=None, config=config) as mem:
            _events(mem, 30)
        victim = _worker(db, config)
        try:
            _wait(first.is_set, 30, "the first model call")
            time.sleep(0.3)  # other batches run; the stalled one holds its lease
        finally:
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
        with Memory.open(db, embedder=None, config=config) as mem:
            stranded = mem.store.jobs.job_counts(mem.tenant)
            assert stranded["running"] > 0  # killed with jobs in hand
        survivor = _worker(db, config)
        try:
            with Memory.open(db, embedder=None, config=config) as mem:
                _wait(lambda: mem.store.jobs.job_counts(mem.tenant)["done"] == 60, 40, "every job")
        finally:
            survivor.send_signal(signal.SIGTERM)
            survivor.wait(10)
        with Memory.open(db, embedder=None, config=config) as mem:
            counts = mem.store.jobs.job_counts(mem.tenant)
            assert counts == {"pending": 0, "running": 0, "done": 60, "failed": 0}
            recs = mem.records(actor="ana", all=True)
            semantic = Counter(r.source.event_ids for r in recs if r.kind.value == "semantic")
            # every event made exactly one fact: none lost, none written twice
            assert sorted(semantic) == sorted((f"e{i}",) for i in range(30))
            assert set(semantic.values()) == {1}
            assert all(r.status.value == "active" for r in recs if r.kind.value == "semantic")
    assert survivor.returncode == 0
