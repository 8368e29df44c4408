"""The path of a memory from job to record: extraction, consolidation, one write.

The worker (`remem.pipeline.worker`) leases jobs, keeps their leases alive, groups them
by (tenant, strategy, actor, session) into batches of new events and backs off
a batch that failed; `Pipeline.run_group` is what it runs for one batch: ask
the strategy for candidates, consolidate them against the scope's records (a
model's verdict when one is configured, always applied through
`remem.consolidate`'s policy) and write everything the batch decided, with its
jobs marked done, in one transaction: a job is either done with all it wrote,
or not done and wrote nothing. So a worker killed at any point loses no event
and, when its job is taken again, duplicates no record.

A batch whose model calls failed comes back `Failed(retry=True)`: the worker
makes it wait (exponential backoff with jitter) and takes it again, up to the
retry policy's `job_attempts`; then it is 'failed' and visible in
`remem jobs list` until `remem jobs retry`. When only the consolidation call
fails, the rules decide instead, so a candidate is added rather than lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from remem.consolidate.step import consolidate, strategy_namespace
from remem.embed.base import embed_or_none
from remem.errors import LLMError
from remem.extract.llm import ModelConsolidator
from remem.extract.strategies import Batch, Strategy
from remem.llm.client import ChatModel
from remem.memory.deps import Deps
from remem.model import Event, Job, Kind, LLMCall, Record, Status
from remem.pipeline.jobs import Failed, ProcessResult, Settings
from remem.pipeline.worker import drain, run_jobs
from remem.store.governance import tombstoned
from remem.store.roles import Scope, Store, Write
from remem.store.values import ContextRead, ErasedMeanwhile
from remem.telemetry.hooks import observed_extraction

log = logging.getLogger("remem")

SESSION_EVENTS = 500  # the most of a session a summary reads at once
ERASED_RERUNS = 3  # times a batch is extracted while erasures keep overtaking its work


class Pipeline:
    """Runs extraction jobs on a store. Thread-safe: strategies may run in parallel.

    `deps` is the bundle of the memory that made it; jobs name their tenant, so
    one pipeline serves every tenant of its store (`deps.tenant` is not used).
    """

    def __init__(
        self,
        deps: Deps,
        strategies: Mapping[str, Strategy],
        *,
        consolidator: ModelConsolidator | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.deps = deps
        self.strategies = dict(strategies)
        self.settings = settings or Settings()
        self._consolidator = consolidator
        self.chats: list[ChatModel] = []  # doors to close with the pipeline

    @property
    def store(self) -> Store:
        """The store the jobs and their records are in."""
        return self.deps.store

    def close(self) -> None:
        """Close the connections of the model doors this pipeline opened."""
        for chat in self.chats:
            chat.close()

    def drain(
        self,
        strategies: Sequence[str] | None = None,
        limit: int | None = None,
        claim: int = 64,
        stop: Callable[[], bool] = lambda: False,
    ) -> ProcessResult:
        """Lease and run ready jobs until none is left, `limit` ran, or `stop()`
        (`remem.pipeline.worker.drain`)."""
        return drain(self, strategies=strategies, limit=limit, claim=claim, stop=stop)

    def run_jobs(self, jobs: Sequence[Job]) -> ProcessResult:
        """Run leased jobs, keeping their leases alive meanwhile
        (`remem.pipeline.worker.run_jobs`)."""
        return run_jobs(self, jobs)

    # -- one batch -------------------------------------------------------------------

    @observed_extraction
    def run_group(
        self, tenant: str, jobs: Sequence[Job], events: Mapping[str, Event]
    ) -> ProcessResult | Failed:
        """Extract, consolidate and write one batch of a strategy's jobs about one session;
        `Failed` when it did not run through (the worker retries or fails it).

        An erasure that covered an event the batch read (a source, or a context turn its
        model was shown) before the write could commit voids the work (`ErasedMeanwhile`):
        the batch is extracted again from what remains, up to `ERASED_RERUNS` times."""
        for _ in range(ERASED_RERUNS):
            try:
                return self._run_group(tenant, jobs, events)
            except ErasedMeanwhile:
                log.info("an erasure overtook a batch of %d job(s); extracting again", len(jobs))
        return Failed(
            f"an erasure overtook this batch's work {ERASED_RERUNS} times; it is tried again",
            retry=True,
        )

    def _run_group(
        self, tenant: str, jobs: Sequence[Job], events: Mapping[str, Event]
    ) -> ProcessResult | Failed:
        store = self.store
        done = tuple(j.id for j in jobs)
        mine = [events[j.event_id] for j in jobs if j.event_id in events]
        if not mine:  # the events were forgotten after their jobs were claimed
            store.records.apply(Write(tenant=tenant, done_jobs=done))
            return ProcessResult(jobs_done=len(jobs), skipped_tombstoned=len(jobs))
        self._embed_events(tenant, jobs, events)
        strategy = self.strategies.get(jobs[0].strategy)
        if strategy is None:
            return Failed(f"strategy {jobs[0].strategy!r} is not configured", retry=False)
        actor = mine[0].actor
        gone = tombstoned(store.erasure, tenant, actor, [e.id for e in mine])
        kept = [e for e in mine if e.id not in gone]
        skipped = len(mine) - len(kept)
        live = [e for e in kept if e.role in strategy.roles]
        if not live:
            store.records.apply(Write(tenant=tenant, done_jobs=done))
            return ProcessResult(jobs_done=len(jobs), skipped_tombstoned=skipped)
        previous: tuple[Record, ...] = ()
        if strategy.summarises:
            previous = self._summaries(tenant, live[-1], strategy.name)
        # a summary made afresh (the first, or one regenerated after a deletion, or an
        # extractive one) reads the whole session; otherwise the last few turns do
        whole = strategy.summarises and (not previous or strategy.reads_whole_session)
        turns = strategy.context_turns  # the offline rules read more than a prompt holds
        limit = self.settings.context_events if turns is None else turns
        limit = SESSION_EVENTS if whole else limit
        context = self._context(tenant, live[0], limit)
        if strategy.reads_whole_session:
            previous = ()
        calls: list[LLMCall] = []
        try:
            try:
                candidates = strategy.extract(Batch(tuple(live), tuple(context), previous), calls)
            except LLMError as exc:
                return Failed(f"{exc.code}: {exc}", retry=True)
            except Exception as exc:  # a bug in a strategy must not lose the events
                log.exception("strategy %s failed", strategy.name)
                return Failed(f"{type(exc).__name__}: {exc}", retry=True)
            result, write = consolidate(
                replace(self.deps, tenant=tenant),
                actor,
                strategy.name,
                live[-1].session,
                candidates,
                consolidator=self._consolidator,
                template=(self.settings.namespaces or {}).get(strategy.name),
                calls=calls,
            )
            read = ContextRead(actor, tuple(e.id for e in context))
            store.records.apply(replace(write, done_jobs=done, context=read))
            dropped = sum(c.dropped for c in calls)
            return result + ProcessResult(
                jobs_done=len(jobs), skipped_tombstoned=skipped, dropped_references=dropped
            )
        finally:
            if calls:
                logged = [replace(c, job_id=done[0]) for c in calls]
                store.model_calls.record_llm_calls(tenant, logged)

    def _context(self, tenant: str, first: Event, limit: int) -> list[Event]:
        """Up to `limit` turns of the session before `first`, with text, none of them
        covered by a tombstone: a model is never shown what an erasure covers."""
        found = [e for e in self.store.events.session_context(first, limit) if e.text.strip()]
        gone = tombstoned(self.store.erasure, tenant, first.actor, [e.id for e in found])
        return [e for e in found if e.id not in gone]

    def _summaries(self, tenant: str, event: Event, strategy: str) -> tuple[Record, ...]:
        """The session's current summaries made by `strategy`."""
        template = (self.settings.namespaces or {}).get(strategy)
        prefix = strategy_namespace(
            template, tenant, event.actor, event.session, strategy, Kind.SUMMARY
        )
        scope = Scope(tenant, event.actor, namespace_prefix=prefix)
        mark = f"summary:{event.session}:"
        found = self.store.records.list_records(scope, statuses=[Status.ACTIVE], limit=100)
        return tuple(
            r for r in found if (r.field or "").startswith(mark) and r.source.strategy == strategy
        )

    def _embed_events(self, tenant: str, jobs: Sequence[Job], events: Mapping[str, Event]) -> None:
        """Embed new events once (by the first strategy's jobs), so raw turns are found by
        meaning too."""
        emb = self.deps.embedder()
        first = next(iter(self.strategies), None)
        if emb is None or first is None:
            return
        todo = [events[j.event_id] for j in jobs if j.strategy == first and j.event_id in events]
        todo = [e for e in todo if e.text.strip()]
        if todo:  # while the embedder cannot embed, none now: `remem.memory.backfill` later
            vectors = embed_or_none(emb, [e.text for e in todo])
            made = [(e, v) for e, v in zip(todo, vectors, strict=True) if v is not None]
            if made:
                self.store.search.add_event_vectors(tenant, made, emb.name)
