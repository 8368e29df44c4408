"""The job queue's values: job states, how runs go, and what a run did.

Shared by the worker (`remem.pipeline.worker`: leases, heartbeats, backoff, grouping),
the extraction step (`remem.pipeline`) and consolidation
(`remem.consolidate.step`), so none of them imports another for its types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from remem.llm.retry import RetryPolicy

JOB_STATUSES = ("pending", "running", "done", "failed")


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What a run of extraction jobs did."""

    jobs_done: int = 0
    records_added: int = 0
    records_updated: int = 0
    noops: int = 0
    late: int = 0
    refused: int = 0  # candidates that carried a secret
    skipped_tombstoned: int = 0
    failed: int = 0  # failed attempts (the job waits and is retried, or is 'failed')
    dropped_references: int = 0  # model answers' items naming an event they were not shown

    def as_dict(self) -> dict[str, int]:
        """The counts by name, JSON-ready."""
        return {name: getattr(self, name) for name in self.__slots__}

    def __add__(self, other: ProcessResult) -> ProcessResult:
        return ProcessResult(*(getattr(self, n) + getattr(other, n) for n in self.__slots__))


@dataclass(frozen=True, slots=True)
class Settings:
    """How the pipeline runs: leases, context, retries, namespaces."""

    lease_seconds: float = 120.0
    context_events: int = 6
    batch_events: int = 16
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    namespaces: Mapping[str, str] | None = None  # strategy -> namespace template


@dataclass(frozen=True, slots=True)
class Failed:
    """A batch of jobs that did not run through: why, and whether to try it again
    (after the retry policy's backoff) or mark it 'failed' now."""

    error: str
    retry: bool
