"""Embedded mode without the trap: a recall first runs what is pending for its actor.

A `Memory` used as a library has no worker unless its user starts one, so events
added without `process()` would wait for ever and recall would hand back raw turns
only. Instead, `Memory.recall` first catches up: when jobs of the actor's events
are ready, it leases up to `catch_up` of them (default `CATCH_UP_JOBS`) and runs
them as a worker would (`remem.pipeline.worker.run_jobs`), claiming
`CATCH_UP_CLAIM` at a time and stopping once `CATCH_UP_SECONDS` have passed; what
is left stays queued for the next recall, `process()` or a worker, and the packet
says so (a note, and `explain["pending"]`).

Why this and not a background thread: the recall right after an `add_event` sees the
records (a thread would race it), a process that forks has no thread to lose and no
lock to inherit, and nothing runs when nobody asks. What keeps it safe:

- Cheap when nothing waits: one indexed read (`Store.actor_backlog`); no write, so
  a writer holding SQLite's lock does not hold the recall up.
- No lost event and no duplicate: the jobs are leased exactly as a worker leases
  them (a job another worker holds is skipped, never waited for), and a batch's
  records and its done jobs are written in one transaction (`remem.pipeline`).
- Only the actor's own jobs run: another actor's backlog costs this recall nothing.
- Fork-safe: a `Memory` that catches up names the modules a catch-up imports
  (`CATCH_UP_MODULES`) to be imported before the process forks
  (`remem.forksafe.import_before_fork`): the first catch-up imports them lazily, and
  a thread doing so while another forks would leave the child a held import lock.
  A process that never forks pays nothing.
- The service turns it off (`Memory(catch_up=0)`): there a worker (in the server,
  or `remem worker` beside it) drains the queue, and a recall only reads. Errors
  of a batch are the worker's (the job backs off and is retried); the recall goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInput
from remem.forksafe import import_before_fork
from remem.memory.deps import Deps
from remem.model import Packet
from remem.policy.dataclasses import shown
from remem.policy.scope import check_name

if TYPE_CHECKING:
    from remem.pipeline.step import Pipeline

CATCH_UP_JOBS = 64  # at most this many of the actor's jobs run before one recall
CATCH_UP_CLAIM = 16  # leased at a time; the time budget is checked between claims
CATCH_UP_SECONDS = 2.0  # no new claim once a recall's catch-up has run this long
# what a catch-up imports when it first runs (`catch_up`, `Memory.pipeline`)
CATCH_UP_MODULES = ("remem.pipeline.worker", "remem.pipeline.factory")


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a recall's catch-up did: jobs it ran, jobs of the actor still pending."""

    ran: int = 0
    left: int = 0

    def noted(self, packet: Packet, actor: str) -> Packet:
        """`packet` with the backlog in `explain` and, when jobs are left, in `notes`."""
        notes = packet.notes
        if self.left:
            notes = (
                *notes,
                f"{self.left} extraction job(s) of actor {actor!r} still pending: this "
                "packet may miss what they hold until they run",
            )
        explain: dict[str, Any] | None = packet.explain
        if explain is not None:
            explain = {**explain, "pending": {"ran": self.ran, "left": self.left}}
        return replace(packet, notes=notes, explain=explain)


def checked(jobs: object) -> int:
    """A catch-up bound: an integer of 0 (off) or more. A memory that catches up has
    what it imports for that loaded before the process forks (`CATCH_UP_MODULES`)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise InvalidInput(f"catch_up must be an integer of 0 (off) or more; got {shown(jobs)}")
    if jobs:
        import_before_fork(*CATCH_UP_MODULES)
    return jobs


def catch_up(deps: Deps, pipeline: Callable[[], Pipeline], actor: str, jobs: int) -> Backlog:
    """Run up to `jobs` ready jobs of `actor`'s events with `pipeline()` (built only when
    one is ready); see the module docstring. With `jobs` 0, only count them."""
    store, tenant = deps.store, deps.tenant
    ready, waiting = store.jobs.actor_backlog(tenant, check_name("actor", actor), deps.clock())
    if not ready or not jobs:
        return Backlog(0, waiting)
    from remem.pipeline.worker import run_jobs

    ran, step = 0, pipeline()
    lease = step.settings.lease_seconds
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while ran < jobs and time.monotonic() < deadline:
        claimed = store.jobs.claim_actor_jobs(
            tenant, actor, deps.clock(), min(CATCH_UP_CLAIM, jobs - ran), lease
        )
        if not claimed:
            break
        run_jobs(step, claimed)  # a failed batch backs off as a worker's would
        ran += len(claimed)
    _, left = store.jobs.actor_backlog(tenant, actor, deps.clock())
    return Backlog(ran, left)
