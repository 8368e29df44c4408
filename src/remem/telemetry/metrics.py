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

Several processes (`remem serve --workers N`, or any server run under prometheus_client's
multiprocess mode): when `$PROMETHEUS_MULTIPROC_DIR` names a directory, prometheus_client
keeps every process's counts in files there, and `Metrics` keeps one set of metrics with
a hidden `remem_tenant` label ("" for a request without a valid key) instead of one
registry per tenant. A scrape, in whichever process answers it, reads every process's
files (`MultiProcessCollector`) and folds them: a tenant's scrape keeps its own samples,
the whole scrape sums over tenants; neither shows the label. `remem serve --workers N`
makes that directory (removed when it stops) before any process imports prometheus_client.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from remem.store.roles import JobQueue, Store
from remem.telemetry.core import METRICS_DIR_ENV
from remem.timeutil import utcnow

log = logging.getLogger("remem.telemetry")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WAITING = ("pending", "running")
STATES = ("pending", "running", "done", "failed")
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_CANDIDATES = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
_RECORDS = (0, 1, 2, 3, 5, 8, 13, 20, 50)
_TOKENS = (0, 50, 100, 200, 500, 1000, 2000, 4000, 8000)
TENANT_LABEL = "remem_tenant"  # multiprocess mode's hidden label, never exposed


class StoreGauges(Collector):
    """The gauges read from the store at each scrape: jobs by strategy and state, lag."""

    def __init__(self, jobs: JobQueue, tenant: str | None, clock: Callable[[], datetime]) -> None:
        self.jobs, self.tenant, self.clock = jobs, tenant, clock

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
            groups = self.jobs.job_groups(self.tenant)
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
    """One registry's metrics: the process's, or one tenant's; in multiprocess mode the
    only one, every metric labelled by `pre` (the hidden tenant label) first."""

    def __init__(self, gauges: StoreGauges | None, pre: tuple[str, ...] = ()) -> None:
        self.registry = r = CollectorRegistry()
        p = list(pre)
        self.requests = Counter(
            "remem_http_requests",
            "HTTP requests by route template and status.",
            [*p, "method", "route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "remem_http_request_duration_seconds",
            "HTTP request latency.",
            [*p, "method", "route"],
            buckets=_LATENCY,
            registry=r,
        )
        self.jobs = Counter(
            "remem_extraction_jobs_processed",
            "Extraction jobs run, by strategy and outcome.",
            [*p, "strategy", "outcome"],
            registry=r,
        )
        self.written = Counter(
            "remem_extraction_records_written",
            "Records added or updated by extraction.",
            [*p, "strategy"],
            registry=r,
        )
        self.model_calls = Counter(
            "remem_model_calls",
            "Language-model call attempts by model and outcome.",
            [*p, "model", "outcome"],
            registry=r,
        )
        self.tokens = Counter(
            "remem_model_tokens",
            "Language-model tokens by model and direction.",
            [*p, "model", "direction"],
            registry=r,
        )
        self.operations = Counter(
            "remem_memory_operations",
            "Memory operations by method and outcome (ok, or the error's code).",
            [*p, "operation", "outcome"],
            registry=r,
        )
        self.candidates = Histogram(
            "remem_recall_candidates",
            "Candidates a recall ranked.",
            p,
            buckets=_CANDIDATES,
            registry=r,
        )
        self.packet_records = Histogram(
            "remem_recall_packet_records",
            "Memories in a recall's packet.",
            p,
            buckets=_RECORDS,
            registry=r,
        )
        self.packet_tokens = Histogram(
            "remem_recall_packet_tokens",
            "Tokens of a recall's packet.",
            p,
            buckets=_TOKENS,
            registry=r,
        )
        self.deletions = Counter(
            "remem_deletion_jobs",
            "Deletion jobs by target and whether reading back verified them.",
            [*p, "target", "verified"],
            registry=r,
        )
        self.unverified = Counter(
            "remem_deletion_verification_failures",
            "Deletions whose reading back found something left.",
            p,
            registry=r,
        )
        if gauges is not None:
            r.register(gauges)


class Metrics:
    """The metrics of one service over one store: the process's and each tenant's (or, in
    multiprocess mode, every process's, folded at scrape; see the module's docstring)."""

    def __init__(self, store: Store, clock: Callable[[], datetime] = utcnow) -> None:
        self.store, self.clock = store, clock
        # prometheus_client chose its value class at import: files only if the directory
        # was named by then
        shared = values.ValueClass is not values.MutexValue
        self.shared_dir = (os.environ.get(METRICS_DIR_ENV) or None) if shared else None
        pre = (TENANT_LABEL,) if self.shared_dir else ()
        self.process = Bundle(
            None if self.shared_dir else StoreGauges(store.jobs, None, clock), pre
        )
        self._tenants: dict[str, Bundle] = {}
        self._lock = threading.Lock()

    def tenant(self, tenant: str) -> Bundle:
        """The tenant's own metrics (made on first use; not in multiprocess mode)."""
        with self._lock:
            found = self._tenants.get(tenant)
            if found is None:
                found = self._tenants[tenant] = Bundle(
                    StoreGauges(self.store.jobs, tenant, self.clock)
                )
            return found

    def _sinks(self, tenant: str | None) -> list[tuple[Bundle, tuple[str, ...]]]:
        """Where one count goes: each bundle with the label values it is counted under."""
        if self.shared_dir:
            return [(self.process, (tenant or "",))]
        if tenant is None:
            return [(self.process, ())]
        return [(self.process, ()), (self.tenant(tenant), ())]

    def registry(self, tenant: str | None) -> CollectorRegistry:
        """What a scrape reads: one tenant's metrics, or (None) the whole process's (in
        multiprocess mode: every process's, folded)."""
        if not self.shared_dir:
            return self.process.registry if tenant is None else self.tenant(tenant).registry
        r = CollectorRegistry()
        r.register(_Folded(self.shared_dir, tenant))
        r.register(StoreGauges(self.store.jobs, tenant, self.clock))
        return r

    def exposition(self, tenant: str | None) -> bytes:
        """The text format of a scrape: one tenant's metrics, or (None) the process's."""
        return generate_latest(self.registry(tenant))

    # -- what the hooks report ---------------------------------------------------------------

    def request(
        self, tenant: str | None, method: str, route: str, status: int, seconds: float
    ) -> None:
        """One HTTP request answered (`tenant` None: no valid key)."""
        for b, t in self._sinks(tenant):
            b.requests.labels(*t, method, route, str(status)).inc()
            b.latency.labels(*t, method, route).observe(seconds)

    def memory_operation(
        self, tenant: str, method: str, outcome: str, result: Any, notes: Mapping[str, Any]
    ) -> None:
        """One observed `Memory` method ended: `outcome` ok (it returned `result`) or the
        code of its error; `notes` are its span's request attributes and what inner hooks
        noted."""
        for b, t in self._sinks(tenant):
            b.operations.labels(*t, method, outcome).inc()
            if outcome != "ok":
                continue
            if method == "recall":
                if "remem.recall.candidates" in notes:
                    _of(b.candidates, t).observe(notes["remem.recall.candidates"])
                _of(b.packet_records, t).observe(len(result.records) + len(result.pinned))
                _of(b.packet_tokens, t).observe(result.tokens)
            elif method == "forget":
                target = "record" if notes.get("gen_ai.memory.record.id") else "actor"
                b.deletions.labels(*t, target, str(bool(result.verified)).lower()).inc()
                if not result.verified:
                    _of(b.unverified, t).inc()

    def extraction(self, tenant: str, strategy: str, outcome: str, jobs: int, result: Any) -> None:
        """One extraction batch of `jobs` jobs ended: done, retry, failed or error."""
        for b, t in self._sinks(tenant):
            b.jobs.labels(*t, strategy, outcome).inc(jobs)
            if outcome == "done":
                b.written.labels(*t, strategy).inc(result.records_added + result.records_updated)

    def model_calls(self, tenant: str, attempts: Sequence[Any]) -> None:
        """The attempts (`LLMCall`s) of one model call."""
        for b, t in self._sinks(tenant):
            for c in attempts:
                b.model_calls.labels(*t, c.model, "ok" if c.ok else "error").inc()
                b.tokens.labels(*t, c.model, "input").inc(c.prompt_tokens)
                b.tokens.labels(*t, c.model, "output").inc(c.completion_tokens)


def _of(metric: Any, labels: tuple[str, ...]) -> Any:
    """`metric` itself, or its child under `labels` (multiprocess mode's tenant)."""
    return metric.labels(*labels) if labels else metric


class _Folded(Collector):
    """Every process's counts in a multiprocess directory, for one tenant (its samples,
    the tenant label dropped) or for all (summed over tenants)."""

    def __init__(self, path: str, tenant: str | None) -> None:
        self.path, self.tenant = path, tenant

    def collect(self) -> Iterator[Metric]:
        files = MultiProcessCollector(None, self.path)  # type: ignore[no-untyped-call]
        for family in files.collect():  # type: ignore[no-untyped-call]
            folded = Metric(family.name, family.documentation, family.type, family.unit)
            sums: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
            for sample in family.samples:
                labels = dict(sample.labels)
                owner = labels.pop(TENANT_LABEL, "")
                if self.tenant is not None and owner != self.tenant:
                    continue
                key = (sample.name, tuple(sorted(labels.items())))
                sums[key] = sums.get(key, 0.0) + sample.value
            for (name, pairs), value in sums.items():
                folded.add_sample(name, dict(pairs), value)
            yield folded
