"""Extraction jobs become records: the step for one batch, and its factory.

`remem.pipeline.step.Pipeline` runs one batch of jobs (extraction,
consolidation, one write); `remem.pipeline.factory.build_pipeline` makes the
pipeline a configuration describes. Leasing, heartbeats, backoff and grouping
are the worker's (`remem.worker`).
"""

from __future__ import annotations

from remem.jobs import JOB_STATUSES, Failed, ProcessResult, Settings
from remem.pipeline.factory import build_pipeline
from remem.pipeline.step import Pipeline

__all__ = ["JOB_STATUSES", "Failed", "Pipeline", "ProcessResult", "Settings", "build_pipeline"]
