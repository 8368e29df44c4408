"""The worker: runs extraction jobs as they arrive, one thread per strategy.

Strategies run independently and in parallel: each thread leases only its
own strategy's jobs, so a model that is down or slow for one strategy never
holds up another. Jobs are leased and their leases kept alive by a heartbeat
(`remem.pipeline`); a worker killed mid-job leaves its jobs to be taken again
once the lease runs out, and because a batch's records and its done jobs are
written in one transaction, taking a job again never duplicates a record.
Any number of workers (threads or processes) can share one database.

    worker = Worker(mem.pipeline)
    worker.start()          # in a background thread of this process
    ...
    result = worker.stop()  # finishes the batches in hand, then returns
"""

from __future__ import annotations

import logging
import threading

from remem.pipeline import Pipeline, ProcessResult

log = logging.getLogger("remem")


class Worker:
    """A job loop over a pipeline; see the module docstring."""

    def __init__(
        self,
        pipeline: Pipeline,
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
        for name in self.pipeline.strategies:
            t = threading.Thread(
                target=self._loop, args=(name,), name=f"remem-worker-{name}", daemon=True
            )
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float | None = None) -> ProcessResult:
        """Ask every thread to stop after its batch in hand; wait for them; return the total."""
        self._stop.set()
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

    def _loop(self, strategy: str) -> None:
        while not self._stop.is_set():
            left = self._budget()
            if left == 0:
                self._stop.set()
                break
            try:
                result = self.pipeline.drain(
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
                self._stop.wait(self.idle_seconds)
