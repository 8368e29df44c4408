"""`Memory`'s extraction methods (a mixin): run, list and retry jobs, and the pipeline.

Apart from `remem.memory.memory` so that the facade stays short; the pipeline and the
worker are imported when first used, so a process that only recalls with nothing
pending never loads them. A recall's own catch-up is `remem.memory.catch_up`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.config.config import Config
from remem.errors import EmbedderChanged, InvalidInput
from remem.memory.deps import Deps
from remem.model import JobInfo
from remem.policy.scope import check_name, named
from remem.store.roles import Store
from remem.writes.checks import count, optional_count

if TYPE_CHECKING:
    from remem.llm.client import ChatModel
    from remem.memory.embedder import BoundEmbedder
    from remem.pipeline.jobs import ProcessResult
    from remem.pipeline.step import Pipeline


class JobMethods:
    """Run pending extraction jobs now; list and retry them; the pipeline they run on."""

    deps: Deps
    tenant: str
    store: Store
    config: Config
    _chat: ChatModel | None
    _pipeline: Pipeline | None
    _embedding: BoundEmbedder

    def process(self, limit: int | None = None, batch: int = 64) -> ProcessResult:
        """Run pending extraction jobs now, until none is ready (or `limit` jobs ran).

        Every configured strategy runs; jobs that failed and wait for their
        backoff are left for a later run (see `jobs`). A recall runs its actor's
        pending jobs first in any case (`remem.memory.catch_up`). Then the records,
        events and chunks written without vectors are given theirs (up to
        `PROCESS_ITEMS`, `remem.memory.backfill`): those an embeddings server's outage
        left out, and those a process still on an embedder the index no longer has wrote
        (`remem.store.flows.vector_fit`). First, the deletion jobs a process killed
        midway left are finished (`remem.lifecycle.erasure.finish_every_interrupted`)."""
        from remem.lifecycle.erasure import finish_every_interrupted
        from remem.memory.backfill import PROCESS_ITEMS, fill_vectors
        from remem.pipeline.worker import drain

        finish_every_interrupted(self.deps)
        result = drain(
            self.pipeline, limit=optional_count("limit", limit), claim=count("batch", batch)
        )
        if self._embedding.resolved() is not None:
            try:
                fill_vectors(self.deps, PROCESS_ITEMS)
            except EmbedderChanged:  # the embedder does not fit the store: recall says so
                pass
        return result

    @property
    def pipeline(self) -> Pipeline:
        """The extraction pipeline this memory's configuration describes."""
        if self._pipeline is None:
            from remem.pipeline.factory import build_pipeline

            self._pipeline = build_pipeline(self.deps, self.config, chat=self._chat)
        return self._pipeline

    def jobs(
        self, status: str | None = None, limit: int = 100, *, actor: str | None = None
    ) -> list[JobInfo]:
        """This tenant's extraction jobs (with `actor`, only those of the actor's events),
        newest first: strategy, state, attempts, last error."""
        from remem.pipeline.jobs import JOB_STATUSES  # the job flows load when first used

        if status is not None and status not in JOB_STATUSES:
            raise InvalidInput(
                f"status must be one of {', '.join(JOB_STATUSES)}; got {named(status)}"
            )
        if actor is not None:
            check_name("actor", actor)
        return self.store.jobs.list_jobs(self.tenant, status, count("limit", limit), actor)

    def retry_jobs(self, failed_only: bool = True) -> int:
        """Put failed jobs (and, unless `failed_only`, waiting ones too) back to run now."""
        statuses = ("failed",) if failed_only else ("failed", "pending")
        return self.store.jobs.retry_jobs(self.tenant, statuses)
