"""A process killed (SIGKILL) midway through writes, a bulk load and a forget, then the
database reopened.

Held: every batch of `add_events` whose call returned is whole after the kill, and a
batch in flight is whole or absent, each event with its extraction job; a bulk load
keeps each of its writes whole and the scope searchable. Did not: a forget killed
after its erasure committed (or before it began) left its deletion job listed as
`running`, and a forget of the same actor run again did not close it (only one run
`RESUME_AFTER`, 10 minutes, later did). Now a verified erasure closes the earlier
running jobs of the same target with its outcome.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.flows.erasure import RUNNING
from tests.support import ROOT

BATCH = 50

WRITER = textwrap.dedent(f"""
    import sys
    from remem import Memory
    from remem.embed import HashEmbedder
    with Memory.open(sys.argv[1], embedder=HashEmbedder()) as mem:
        b = 0
        while True:
            b += 1
            mem.add_events([{{"actor": "alice", "session": "s1", "role": "user",
                              "id": f"b{{b}}-{{i}}", "text": f"batch {{b}}: I like seat {{i}}"}}
                             for i in range({BATCH})])
            print(b, flush=True)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_add_events_batches_killed_midway_are_whole_or_absent(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE,
                             text=True, env=env)  # fmt: skip
    assert child.stdout is not None
    acked = [int(child.stdout.readline()) for _ in range(5)]  # five batches accepted
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate(timeout=60)
    acked += [int(n) for n in rest.split()]
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        stored: dict[int, int] = {}
        for e in mem.events(actor="alice"):
            batch = int(e.id.split("-")[0][1:])
            stored[batch] = stored.get(batch, 0) + 1
        jobs = sum(mem.store.jobs.job_counts(mem.tenant).values())
    assert set(acked) <= set(stored)  # nothing accepted is lost
    assert set(stored.values()) == {BATCH}  # nothing half-visible
    assert max(stored) <= max(acked) + 1  # at most the batch in flight, whole
    assert jobs == BATCH * len(stored)  # each event with its job (the outbox)


@pytest.mark.parametrize("committed", [True, False], ids=["erased", "not-yet-erased"])
def test_a_forget_killed_midway_is_closed_by_the_next_forget(db: str, committed: bool) -> None:
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="I prefer aisle seats")
        mem.remember(actor="alice", text="My locker is number 12")
        # what a forget killed midway leaves: its job logged as running and, when it got
        # that far, its erasure committed (the job would be finished next)
        left = mem.store.erasure.start_deletion(mem.tenant, "actor", "alice", mem.deps.clock())
        if committed:
            assert mem.store.erasure.forget_actor(mem.tenant, "alice", mem.deps.clock()).verified
        report = mem.forget(actor="alice")
        assert report.verified and mem.events(actor="alice") == []
        jobs = {int(j["id"]): j for j in mem.store.erasure.deletions(mem.tenant)}
    assert jobs[left]["status"] != RUNNING and jobs[left]["status"] == jobs[report.job_id]["status"]
    assert [j["status"] for j in jobs.values() if j["status"] == RUNNING] == []
