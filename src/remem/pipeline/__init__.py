"""Extraction jobs become records: the step for one batch, and its factory.

`remem.pipeline.step.Pipeline` runs one batch of jobs (extraction,
consolidation, one write); `remem.pipeline.factory.build_pipeline` makes the
pipeline a configuration describes. Leasing, heartbeats, backoff and grouping
are the worker's (`remem.pipeline.worker`); the job queue's values (job states, how
runs go, what a run did) are `remem.pipeline.jobs`.
"""
