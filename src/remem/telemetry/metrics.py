"""Prometheus metrics of `remem serve` (prometheus_client, the `metrics` extra).

Two scrapes, one set of names (docs/guide/observability.md):

- `/metrics` on the API, with a tenant-wide admin key: that tenant's numbers only;
- the listener of `remem serve --metrics-port N`: the whole process and store.

No metric has a tenant label: tenants are unbounded, and one tenant's admin must
not read another's traffic. So every count is kept twice, in the process's registry
and in its tenant's own (made on the tenant's first activity); the gauges that read
the store (jobs by strategy and state, extraction lag) are read at scrape time, for
the scraping tenant or for all.

    remem_http_requests_total{method,route,status}       route: the path template
    remem_http_request_duration_seconds{method,route}    histogram
    remem_extraction_jobs{strategy,state}                gauge, read from the store
    remem_extraction_lag_seconds                         gauge: age of the oldest waiting job
    remem_extraction_jobs_processed_total{strategy,outcome}   done, retry, failed, error
    remem_extraction_records_written_total{strategy}
    remem_model_calls_total{model,outcome}               every attempt: ok, error
    remem_model_tokens_total{model,direction}            input, output
    remem_memory_operations_total{operation,outcome}     ok, or the error's code
    remem_recall_candidates                              histogram: candidates ranked
    remem_recall_packet_records, remem_recall_packet_tokens   histograms
    remem_deletion_jobs_total{target,verified}           target: record, actor
    remem_deletion_verification_failures_total
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from remem.store.roles import Store
from remem.timeutil import utcnow

log = logging.getLogger("remem.telemetry")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WAITING = ("pending", "running")
STATES = ("pending", "running", "done", "failed")
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_CANDIDATES = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
_RECORDS = (0, 1, 2, 3, 5, 8, 13, 20, 50)
_TOKENS = (0, 50, 100, 200, 500, 1000, 2000, 4000, 8000)


class StoreGauges(Collector):
    """The gauges read from the store at each scrape: jobs by strategy and state, lag."""

    def __init__(self, store: Store, tenant: str | None, clock: Callable[[], datetime]) -> None:
        self.store, self.tenant, self.clock = store, tenant, clock

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "remem_extraction_jobs",
            "Extraction jobs in the store by strategy and state.",
            labels=["strategy", "state"],
        )
        lag = GaugeMetricFamily(
            "remem_extraction_lag_seconds",
            "Age of the oldest extraction job still waiting (pending or running); 0 if none.",
        )
        try:
            groups = self.store.job_groups(self.tenant)
        except Exception:  # a scrape must answer even when the database does not
            log.warning("metrics: reading the job queue failed", exc_info=True)
            return
        counts: dict[tuple[str, str], int] = {}
        oldest: datetime | None = None
        for g in groups:
            counts[(g.strategy, g.status)] = g.count
            if g.status in WAITING and (oldest is None or g.oldest < oldest):
                oldest = g.oldest
        for strategy in sorted({s for s, _ in counts}):
            for state in STATES:
                jobs.add_metric([strategy, state], counts.get((strategy, state), 0))
        lag.add_metric(
            [], 0.0 if oldest is None else max(0.0, (self.clock() - oldest).total_seconds())
        )
        yield jobs
        yield lag


class Bundle:
    """One registry's metrics: the process's, or one tenant's."""

    def __init__(self, gauges: StoreGauges) -> None:
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "remem_http_requests",
            "HTTP requests by route template and status.",
            ["method", "route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "remem_http_request_duration_seconds",
            "HTTP request latency.",
            ["method", "route"],
            buckets=_LATENCY,
            registry=r,
        )
        self.jobs = Counter(
            "remem_extraction_jobs_processed",
            "Extraction jobs run, by strategy and outcome.",
            ["strategy", "outcome"],
            registry=r,
        )
        self.written = Counter(
            "remem_extraction_records_written",
            "Records added or updated by extraction.",
            ["strategy"],
            registry=r,
        )
        self.model_calls = Counter(
            "remem_model_calls",
            "Language-model call attempts by model and outcome.",
            ["model", "outcome"],
            registry=r,
        )
        self.tokens = Counter(
            "remem_model_tokens",
            "Language-model tokens by model and direction.",
            ["model", "direction"],
            registry=r,
        )
        self.operations = Counter(
            "remem_memory_operations",
            "Memory operations by method and outcome (ok, or the error's code).",
            ["operation", "outcome"],
            registry=r,
        )
        self.candidates = Histogram(
            "remem_recall_candidates",
            "Candidates a recall ranked.",
            buckets=_CANDIDATES,
            registry=r,
        )
        self.packet_records = Histogram(
            "remem_recall_packet_records",
            "Memories in a recall's packet.",
            buckets=_RECORDS,
            registry=r,
        )
        self.packet_tokens = Histogram(
            "remem_recall_packet_tokens",
            "Tokens of a recall's packet.",
            buckets=_TOKENS,
            registry=r,
        )
        self.deletions = Counter(
            "remem_deletion_jobs",
            "Deletion jobs by target and whether reading back verified them.",
            ["target", "verified"],
            registry=r,
        )
        self.unverified = Counter(
            "remem_deletion_verification_failures",
            "Deletions whose reading back found something left.",
            registry=r,
        )
        r.register(gauges)


class Metrics:
    """The metrics of one service over one store: the process's and each tenant's."""

    def __init__(self, store: Store, clock: Callable[[], datetime] = utcnow) -> None:
        self.store, self.clock = store, clock
        self.process = Bundle(StoreGauges(store, None, clock))
        self._tenants: dict[str, Bundle] = {}
        self._lock = threading.Lock()

    def tenant(self, tenant: str) -> Bundle:
        """The tenant's own metrics (made on first use)."""
        with self._lock:
            found = self._tenants.get(tenant)
            if found is None:
                found = self._tenants[tenant] = Bundle(StoreGauges(self.store, tenant, self.clock))
            return found

    def _both(self, tenant: str | None) -> tuple[Bundle, ...]:
        return (self.process,) if tenant is None else (self.process, self.tenant(tenant))

    def exposition(self, tenant: str | None) -> bytes:
        """The text format of a scrape: one tenant's metrics, or (None) the process's."""
        bundle = self.process if tenant is None else self.tenant(tenant)
        return generate_latest(bundle.registry)

    # -- what the hooks report ---------------------------------------------------------------

    def request(
        self, tenant: str | None, method: str, route: str, status: int, seconds: float
    ) -> None:
        """One HTTP request answered (`tenant` None: no valid key)."""
        for b in self._both(tenant):
            b.requests.labels(method, route, str(status)).inc()
            b.latency.labels(method, route).observe(seconds)

    def memory_operation(
        self, tenant: str, method: str, outcome: str, result: Any, notes: Mapping[str, Any]
    ) -> None:
        """One observed `Memory` method ended: `outcome` ok (it returned `result`) or the
        code of its error; `notes` are its span's request attributes and what inner hooks
        noted."""
        for b in self._both(tenant):
            b.operations.labels(method, outcome).inc()
            if outcome != "ok":
                continue
            if method == "recall":
                if "remem.recall.candidates" in notes:
                    b.candidates.observe(notes["remem.recall.candidates"])
                b.packet_records.observe(len(result.records) + len(result.pinned))
                b.packet_tokens.observe(result.tokens)
            elif method == "forget":
                target = "record" if notes.get("gen_ai.memory.record.id") else "actor"
                b.deletions.labels(target, str(bool(result.verified)).lower()).inc()
                if not result.verified:
                    b.unverified.inc()

    def extraction(self, tenant: str, strategy: str, outcome: str, jobs: int, result: Any) -> None:
        """One extraction batch of `jobs` jobs ended: done, retry, failed or error."""
        for b in self._both(tenant):
            b.jobs.labels(strategy, outcome).inc(jobs)
            if outcome == "done":
                b.written.labels(strategy).inc(result.records_added + result.records_updated)

    def model_calls(self, tenant: str, attempts: Sequence[Any]) -> None:
        """The attempts (`LLMCall`s) of one model call."""
        for b in self._both(tenant):
            for c in attempts:
                b.model_calls.labels(c.model, "ok" if c.ok else "error").inc()
                b.tokens.labels(c.model, "input").inc(c.prompt_tokens)
                b.tokens.labels(c.model, "output").inc(c.completion_tokens)
