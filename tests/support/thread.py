"""Thread state as the thread tests drive it: one workflow's key and state, writers
racing in processes, and a workflow script killed and resumed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from remem import Memory

WF = "refund-981"


KEY = "refund-981/pay"


STATE: dict[str, Any] = {
    "step": "pay",
    "completed_steps": ["quote", "confirm"],
    "pending_approval": None,
    "tool_call_id": "call-1",
    "idempotency_key": KEY,
    "artifacts": [{"kind": "quote", "ref": "s3://quotes/981.pdf"}],
    "last_verified_outcome": {"quote_total": 30.0},
    "data": {"currency": "EUR"},
}


def race(db: Path, workers: int, attempt: Any) -> list[Any]:
    """Run `attempt(mem)` in `workers` threads, each on its own connection, at once."""
    Memory.open(db, embedder=None).close()  # create the file before the race
    barrier = threading.Barrier(workers, timeout=60)
    outcomes: list[Any] = [None] * workers

    def work(i: int) -> None:
        try:
            with Memory.open(db, embedder=None) as own:
                barrier.wait()
                outcomes[i] = attempt(own, i)
        except Exception as exc:  # collected and checked by the caller
            outcomes[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


WORKFLOW_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from remem import Memory, NotFound
    from remem.thread.api import (
        begin_tool_call,
        checkpoint_load,
        checkpoint_save,
        complete_tool_call,
    )

    db, effects, pause_at = sys.argv[1:4]
    WF, KEY = "refund-981", "refund-981/pay"

    def pause(point):
        if point == pause_at:  # tell the test where we are, then wait to be killed
            print(point, flush=True)
            sys.stdin.readline()

    with Memory.open(db, embedder=None) as mem:
        try:
            cp = checkpoint_load(mem, actor="u42", workflow=WF)
        except NotFound:
            cp = checkpoint_save(mem, actor="u42", workflow=WF, state={
                "step": "pay", "completed_steps": ["quote"], "idempotency_key": KEY})
        begun = begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY,
                                request={"amount": 30})
        if begun.decision == "perform":
            with open(effects, "a") as f:  # the side effect: money leaves once
                f.write("paid 30\\n")
                f.flush()
                os.fsync(f.fileno())
            pause("after_effect")
            call = complete_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY,
                                      result={"receipt": "r-1"})
            pause("after_complete")
            checkpoint_save(mem, actor="u42", workflow=WF, expected_version=cp.version,
                            state={"step": "notify", "completed_steps": ["quote", "pay"],
                                   "last_verified_outcome": call.result})
        print(json.dumps(begun.as_dict()), flush=True)
    """
)


def resume(script: Path, db: Path, effects: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(script), str(db), str(effects), "never"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
