"""The worker: leases extraction jobs, keeps them alive, groups them, backs off failures.

Every run of jobs goes through here: `Memory.process()` (`drain`, in the
caller's thread), `remem worker` and the HTTP service (`Worker`, one thread per
strategy). Strategies run independently and in parallel: each thread leases
only its own strategy's jobs, so a model that is down or slow for one strategy
never holds up another. Jobs are leased and their leases kept alive by a
heartbeat; a worker killed mid-job leaves its jobs to be taken again once the
lease runs out, and because a batch's records and its done jobs are written in
one transaction (`remem.pipeline`), taking a job again never duplicates a
record. Any number of workers (threads or processes) can share one database. A
worker also finishes, every `RESUME_EVERY` seconds, the deletion jobs a process killed
midway left running (`remem.lifecycle.erasure.finish_every_interrupted`).

A batch that fails (a bad event row, an embedder or store error, a model call)
fails alone: the claim's other batches go on, and it waits (the retry policy's
exponential backoff) and is taken again, up to `job_attempts`; then it is
'failed' and visible in `remem jobs list` until `remem jobs retry`.

    worker = Worker(mem.pipeline)
    worker.start()          # in a background thread of this process
    ...
    result = worker.stop()  # finishes the batches in hand, then returns
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Protocol

from remem.extract.strategies import Strategy
from remem.memory.deps import Deps
from remem.model import Event, Job
from remem.pipeline.jobs import Failed, ProcessResult, Settings

log = logging.getLogger("remem")

UNREADABLE = "the event could not be read from the store (the worker's log has why)"
GAVE_UP = "gave up: every attempt ended without a result (the worker died or lost its lease)"


class Step(Protocol):
    """What the worker runs a batch with: `remem.pipeline.step.Pipeline`."""

    @property
    def deps(self) -> Deps:
        """The store and clock the jobs are leased with."""
        ...

    @property
    def strategies(self) -> Mapping[str, Strategy]:
        """The configured strategies, by name."""
        ...

    @property
    def settings(self) -> Settings:
        """Leases, batch size and the retry policy."""
        ...

    def run_group(
        self, tenant: str, jobs: Sequence[Job], events: Mapping[str, Event]
    ) -> ProcessResult | Failed:
        """Run one batch of a strategy's jobs about one session."""
        ...


def drain(
    step: Step,
    strategies: Sequence[str] | None = None,
    limit: int | None = None,
    claim: int = 64,
    stop: Callable[[], bool] = lambda: False,
) -> ProcessResult:
    """Lease and run ready jobs until none is left, `limit` ran, or `stop()`."""
    store, clock, lease = step.deps.store, step.deps.clock, step.settings.lease_seconds
    total = ProcessResult()
    while not stop() and (limit is None or total.jobs_done + total.failed < limit):
        size = claim if limit is None else min(claim, limit - total.jobs_done - total.failed)
        jobs = store.jobs.claim_jobs(clock(), size, lease, strategies)
        if not jobs:
            break
        total = total + run_jobs(step, jobs)
    return total


def run_jobs(step: Step, jobs: Sequence[Job]) -> ProcessResult:
    """Run leased jobs (keeping their leases alive meanwhile); see the module docstring."""
    total = ProcessResult()
    with _heartbeat(step, [j.id for j in jobs]):
        for tenant in dict.fromkeys(j.tenant for j in jobs):
            mine = [j for j in jobs if j.tenant == tenant]
            # attempts that never finished (the worker died, or lost its lease, each
            # time) count too: a job that kills its worker must not loop for ever
            spent = [j for j in mine if j.attempts > step.settings.retry.job_attempts]
            if spent:
                total = total + _fail(step, tenant, spent, Failed(GAVE_UP, retry=False))
                mine = [j for j in mine if j not in spent]
            events, unread = _read_events(step, tenant, mine)
            if unread:
                total = total + _fail(step, tenant, unread, Failed(UNREADABLE, retry=True))
                mine = [j for j in mine if j not in unread]
            for group in _groups(step, mine, events):
                # one batch failing (a bad row, an embedder or store error) fails only
                # its own jobs: the others of the claim go on, and it ends 'failed'
                try:
                    outcome = step.run_group(tenant, group, events)
                except Exception as exc:
                    log.exception("a batch of %d job(s) failed", len(group))
                    outcome = Failed(f"{type(exc).__name__}: {exc}", retry=True)
                if isinstance(outcome, Failed):
                    outcome = _fail(step, tenant, group, outcome)
                total = total + outcome
    _fill_late_vectors(step, list(dict.fromkeys(j.tenant for j in jobs)))
    return total


def _fill_late_vectors(step: Step, tenants: Sequence[str]) -> None:
    """After a claim's jobs, the vectors an embeddings server's outage left out of these
    tenants' records and events (`remem.memory.backfill`; at most `WORKER_ITEMS` each),
    so that a service, whose recalls only read, catches up too."""
    from remem.memory.backfill import WORKER_ITEMS, fill_vectors, may_fail

    try:
        if not may_fail(step.deps.embedder()):
            return
        for tenant in tenants:
            fill_vectors(replace(step.deps, tenant=tenant), WORKER_ITEMS)
    except Exception:  # the jobs are done; the vectors wait for the next pass
        log.exception("filling in late vectors failed")


def _read_events(
    step: Step, tenant: str, jobs: Sequence[Job]
) -> tuple[dict[str, Event], list[Job]]:
    """The jobs' events; when one cannot be read, each alone (returns the jobs whose
    event could not be read, so they fail and the others run)."""
    store = step.deps.store
    try:
        found = store.events.get_events(tenant, [j.event_id for j in jobs])
        return {e.id: e for e in found}, []
    except Exception:
        log.exception("reading the events of %d job(s) failed; reading one by one", len(jobs))
    events: dict[str, Event] = {}
    unread: list[Job] = []
    for job in jobs:
        try:
            events.update((e.id, e) for e in store.events.get_events(tenant, [job.event_id]))
        except Exception:
            unread.append(job)
    return events, unread


def _groups(step: Step, jobs: Sequence[Job], events: Mapping[str, Event]) -> Iterator[list[Job]]:
    """Batches of one strategy's jobs about one (actor, session), oldest event first;
    jobs whose events are gone make a batch of their own."""
    gone = [j for j in jobs if j.event_id not in events]
    if gone:
        yield gone
    keyed: dict[tuple[str, str, str], list[Job]] = {}
    for j in jobs:
        if j.event_id in events:
            e = events[j.event_id]
            keyed.setdefault((j.strategy, e.actor, e.session), []).append(j)
    for (strategy, _, _), group in keyed.items():
        group.sort(key=lambda j: (events[j.event_id].time, j.id))
        found = step.strategies.get(strategy)
        # an unknown strategy's jobs fail together; a known one's go in batches
        size = min(found.batch_events, step.settings.batch_events) if found else len(group)
        for i in range(0, len(group), size):
            yield group[i : i + size]


def _fail(step: Step, tenant: str, jobs: Sequence[Job], failed: Failed) -> ProcessResult:
    """Back off (or, without `retry`, end) each job of a batch that did not run through."""
    policy = step.settings.retry
    now = step.deps.clock()
    for job in jobs:
        wait = policy.job_delay(job.attempts)
        step.deps.store.jobs.fail_job(
            job.id,
            failed.error,
            now,
            retry_at=now + timedelta(seconds=wait),
            max_attempts=policy.job_attempts if failed.retry else job.attempts,
        )
    log.warning("extraction of %d job(s) failed: %s", len(jobs), failed.error)
    return ProcessResult(failed=len(jobs))


@contextmanager
def _heartbeat(step: Step, job_ids: Sequence[int]) -> Iterator[None]:
    """Keep the leases of `job_ids` alive while they run (a thread, every third of a lease)."""
    stop = threading.Event()
    lease = step.settings.lease_seconds
    store, clock = step.deps.store, step.deps.clock

    def beat() -> None:
        while not stop.wait(lease / 3):
            try:
                store.jobs.heartbeat(job_ids, clock(), lease)
            except Exception:  # a missed beat only risks a second run, which is idempotent
                log.warning("heartbeat failed", exc_info=True)

    thread = threading.Thread(target=beat, name="remem-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class Worker:
    """A job loop over a pipeline, one thread per strategy; see the module docstring."""

    def __init__(
        self,
        pipeline: Step,
        *,
        idle_seconds: float = 0.5,
        claim: int = 16,
        max_jobs: int | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.idle_seconds = idle_seconds
        self.claim = claim
        self.max_jobs = max_jobs
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._total = ProcessResult()
        self._threads: list[threading.Thread] = []
        self._wakes: list[threading.Event] = []
        self._deletions = threading.Lock()  # one thread looks for interrupted erasures
        self._deletions_due = 0.0  # when it looks next (time.monotonic()): at once

    @property
    def total(self) -> ProcessResult:
        """What the worker has done so far."""
        with self._lock:
            return self._total

    def start(self) -> None:
        """Start one thread per strategy and return at once."""
        if self._threads:
            raise RuntimeError("the worker is already running")
        self._stop.clear()
        self._wakes = []
        for name in self.pipeline.strategies:
            wake = threading.Event()
            t = threading.Thread(
                target=self._loop, args=(name, wake), name=f"remem-worker-{name}", daemon=True
            )
            self._wakes.append(wake)
            t.start()
            self._threads.append(t)

    def wake(self) -> None:
        """Look for jobs now instead of after the idle wait (new events were written)."""
        for wake in self._wakes:
            wake.set()

    def stop(self, timeout: float | None = None) -> ProcessResult:
        """Ask every thread to stop after its batch in hand; wait for them; return the total."""
        self._stop.set()
        self.wake()
        self.join(timeout)
        return self.total

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads (they end on `stop()` or once `max_jobs` ran)."""
        for t in self._threads:
            t.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]

    @property
    def running(self) -> bool:
        """Whether any strategy thread is still running."""
        return any(t.is_alive() for t in self._threads)

    def _budget(self) -> int | None:
        if self.max_jobs is None:
            return None
        with self._lock:
            return max(self.max_jobs - self._total.jobs_done - self._total.failed, 0)

    def _finish_deletions(self) -> None:
        """Every `RESUME_EVERY` seconds, in one thread: finish the deletion jobs a process
        killed midway left running (`remem.lifecycle.erasure.finish_every_interrupted`),
        so that no erasure waits for another forget in its tenant to be carried out."""
        from remem.lifecycle.erasure import RESUME_EVERY, finish_every_interrupted

        if time.monotonic() < self._deletions_due or not self._deletions.acquire(blocking=False):
            return
        try:
            self._deletions_due = time.monotonic() + RESUME_EVERY
            finish_every_interrupted(self.pipeline.deps)
        except Exception:  # the database went away, say: the next look tries again
            log.exception("finishing interrupted deletion jobs failed")
        finally:
            self._deletions.release()

    def _loop(self, strategy: str, wake: threading.Event) -> None:
        while not self._stop.is_set():
            self._finish_deletions()
            left = self._budget()
            if left == 0:
                self._stop.set()
                self.wake()  # the other strategies' threads end now too
                break
            wake.clear()
            try:
                result = drain(
                    self.pipeline,
                    strategies=[strategy],
                    limit=left,
                    claim=self.claim if left is None else min(self.claim, left),
                    stop=self._stop.is_set,
                )
            except Exception:
                # the database went away, say: the jobs in hand are retaken after their lease
                log.exception("worker thread for %s failed; retrying", strategy)
                result = ProcessResult()
            with self._lock:
                self._total = self._total + result
            if result.jobs_done + result.failed == 0:
                wake.wait(self.idle_seconds)
