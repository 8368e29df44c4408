"""The path of a memory from job to record: extraction, consolidation, one write.

`Pipeline.run_jobs` takes leased jobs, groups them by (tenant, strategy,
actor, session) into batches of new events, asks the strategy for
candidates, consolidates them against the scope's records (a model's verdict
when one is configured, always applied through `remem.consolidate`'s policy)
and writes everything a batch decided, with its jobs marked done, in one
transaction: a job is either done with all it wrote, or not done and wrote
nothing. So a worker killed at any point loses no event and, when its job is
taken again, duplicates no record.

A batch that fails for any other reason (an event row that cannot be read,
an embedder or store error) fails alone: the claim's other batches go on,
and it is retried and ends 'failed' like any other.

A batch whose model calls failed waits (exponential backoff with jitter) and
is taken again, up to the retry policy's `job_attempts`; then it is 'failed'
and visible in `remem jobs list` until `remem jobs retry`. When only the
consolidation call fails, the rules decide instead, so a candidate is added
rather than lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.config import Config
from remem.consolidate import Decision, decide, plan, with_verdict
from remem.embed.base import Embedder
from remem.errors import ConfigError, LLMError
from remem.extract.llm import LLMStrategy, ModelConsolidator
from remem.extract.schemas import Verdict
from remem.extract.strategies import Batch, OfflineStrategy, Strategy
from remem.extract.summary import OfflineSummaryStrategy
from remem.llm.client import ChatModel
from remem.llm.retry import RetryPolicy
from remem.model import Action, Candidate, Event, HistoryEntry, Job, Kind, LLMCall, Record, Status
from remem.policy.dataclasses import holds_secret
from remem.policy.fields import canonical_field, optional_field, stored_names
from remem.policy.scope import namespace_for
from remem.policy.untrusted import instruction_flags
from remem.policy.validity import expiry
from remem.store.base import Scope, StatusChange, Store, Write

log = logging.getLogger("remem")

JOB_STATUSES = ("pending", "running", "done", "failed")
SESSION_EVENTS = 500  # the most of a session a summary reads at once
UNREADABLE = "the event could not be read from the store (the worker's log has why)"
GAVE_UP = "gave up: every attempt ended without a result (the worker died or lost its lease)"

Vector = npt.NDArray[np.float32]


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


class Pipeline:
    """Runs extraction jobs on a store. Thread-safe: strategies may run in parallel."""

    def __init__(
        self,
        store: Store,
        strategies: Mapping[str, Strategy],
        *,
        embedder: Callable[[], Embedder | None],
        clock: Callable[[], datetime],
        ids: Callable[[str], str],
        ttl: Mapping[str, timedelta],
        consolidator: ModelConsolidator | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.strategies = dict(strategies)
        self.settings = settings or Settings()
        self._embedder = embedder
        self._clock = clock
        self._ids = ids
        self._ttl = ttl
        self._consolidator = consolidator
        self.chats: list[ChatModel] = []  # doors to close with the pipeline

    def close(self) -> None:
        """Close the connections of the model doors this pipeline opened."""
        for chat in self.chats:
            chat.close()

    # -- running jobs -------------------------------------------------------------

    def drain(
        self,
        strategies: Sequence[str] | None = None,
        limit: int | None = None,
        claim: int = 64,
        stop: Callable[[], bool] = lambda: False,
    ) -> ProcessResult:
        """Lease and run ready jobs until none is left, `limit` ran, or `stop()`."""
        total = ProcessResult()
        while not stop() and (limit is None or total.jobs_done + total.failed < limit):
            size = claim if limit is None else min(claim, limit - total.jobs_done - total.failed)
            jobs = self.store.claim_jobs(
                self._clock(), size, self.settings.lease_seconds, strategies
            )
            if not jobs:
                break
            total = total + self.run_jobs(jobs)
        return total

    def run_jobs(self, jobs: Sequence[Job]) -> ProcessResult:
        """Run leased jobs (keeping their leases alive meanwhile); see the module docstring."""
        total = ProcessResult()
        with self._heartbeat([j.id for j in jobs]):
            for tenant in dict.fromkeys(j.tenant for j in jobs):
                mine = [j for j in jobs if j.tenant == tenant]
                # attempts that never finished (the worker died, or lost its lease, each
                # time) count too: a job that kills its worker must not loop for ever
                spent = [j for j in mine if j.attempts > self.settings.retry.job_attempts]
                if spent:
                    total = total + self._fail(tenant, spent, GAVE_UP, retry=False)
                    mine = [j for j in mine if j not in spent]
                events, unread = self._read_events(tenant, mine)
                if unread:
                    total = total + self._fail(tenant, unread, UNREADABLE, retry=True)
                    mine = [j for j in mine if j not in unread]
                for group in self._groups(mine, events):
                    # one batch failing (a bad row, an embedder or store error) fails only
                    # its own jobs: the others of the claim go on, and it ends 'failed'
                    try:
                        total = total + self._run_group(tenant, group, events)
                    except Exception as exc:
                        log.exception("a batch of %d job(s) failed", len(group))
                        total = total + self._fail(
                            tenant, group, f"{type(exc).__name__}: {exc}", retry=True
                        )
        return total

    def _read_events(self, tenant: str, jobs: Sequence[Job]) -> tuple[dict[str, Event], list[Job]]:
        """The jobs' events; when one cannot be read, each alone (returns the jobs whose
        event could not be read, so they fail and the others run)."""
        try:
            found = self.store.get_events(tenant, [j.event_id for j in jobs])
            return {e.id: e for e in found}, []
        except Exception:
            log.exception("reading the events of %d job(s) failed; reading one by one", len(jobs))
        events: dict[str, Event] = {}
        unread: list[Job] = []
        for job in jobs:
            try:
                events.update((e.id, e) for e in self.store.get_events(tenant, [job.event_id]))
            except Exception:
                unread.append(job)
        return events, unread

    def _groups(self, jobs: Sequence[Job], events: Mapping[str, Event]) -> Iterator[list[Job]]:
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
            found = self.strategies.get(strategy)
            # an unknown strategy's jobs fail together; a known one's go in batches
            size = min(found.batch_events, self.settings.batch_events) if found else len(group)
            for i in range(0, len(group), size):
                yield group[i : i + size]

    def _run_group(
        self, tenant: str, jobs: list[Job], events: Mapping[str, Event]
    ) -> ProcessResult:
        done = tuple(j.id for j in jobs)
        mine = [events[j.event_id] for j in jobs if j.event_id in events]
        if not mine:  # the events were forgotten after their jobs were claimed
            self.store.apply(Write(tenant=tenant, done_jobs=done))
            return ProcessResult(jobs_done=len(jobs), skipped_tombstoned=len(jobs))
        self._embed_events(tenant, jobs, events)
        strategy = self.strategies.get(jobs[0].strategy)
        if strategy is None:
            return self._fail(
                tenant, jobs, f"strategy {jobs[0].strategy!r} is not configured", retry=False
            )
        actor = mine[0].actor
        kept = mine
        if self.store.is_tombstoned(tenant, actor, [e.id for e in mine]):  # rare: look closer
            kept = [e for e in mine if not self.store.is_tombstoned(tenant, actor, [e.id])]
        skipped = len(mine) - len(kept)
        live = [e for e in kept if e.role in strategy.roles]
        if not live:
            self.store.apply(Write(tenant=tenant, done_jobs=done))
            return ProcessResult(jobs_done=len(jobs), skipped_tombstoned=skipped)
        previous: tuple[Record, ...] = ()
        if strategy.summarises:
            previous = self._summaries(tenant, live[-1], strategy.name)
        # a summary made afresh (the first, or one regenerated after a deletion, or an
        # extractive one) reads the whole session; otherwise the last few turns do
        whole = strategy.summarises and (not previous or strategy.reads_whole_session)
        limit = SESSION_EVENTS if whole else self.settings.context_events
        context = [e for e in self.store.session_context(live[0], limit) if e.text.strip()]
        if strategy.reads_whole_session:
            previous = ()
        calls: list[LLMCall] = []
        try:
            try:
                candidates = strategy.extract(Batch(tuple(live), tuple(context), previous), calls)
            except LLMError as exc:
                return self._fail(tenant, jobs, f"{exc.code}: {exc}", retry=True)
            except Exception as exc:  # a bug in a strategy must not lose the events
                log.exception("strategy %s failed", strategy.name)
                return self._fail(tenant, jobs, f"{type(exc).__name__}: {exc}", retry=True)
            result, write = self._consolidate_batch(
                tenant, actor, strategy.name, candidates, calls, live[-1].session
            )
            self.store.apply(replace(write, done_jobs=done))
            dropped = sum(c.dropped for c in calls)
            return result + ProcessResult(
                jobs_done=len(jobs), skipped_tombstoned=skipped, dropped_references=dropped
            )
        finally:
            if calls:
                self.store.record_llm_calls(tenant, [replace(c, job_id=done[0]) for c in calls])

    def _fail(self, tenant: str, jobs: Sequence[Job], error: str, *, retry: bool) -> ProcessResult:
        policy = self.settings.retry
        now = self._clock()
        for job in jobs:
            wait = policy.job_delay(job.attempts)
            self.store.fail_job(
                job.id,
                error,
                now,
                retry_at=now + timedelta(seconds=wait),
                max_attempts=policy.job_attempts if retry else job.attempts,
            )
        log.warning("extraction of %d job(s) failed: %s", len(jobs), error)
        return ProcessResult(failed=len(jobs))

    def _summaries(self, tenant: str, event: Event, strategy: str) -> tuple[Record, ...]:
        """The session's current summaries made by `strategy`."""
        template = (self.settings.namespaces or {}).get(strategy)
        prefix = _namespace(template, tenant, event.actor, event.session, strategy, Kind.SUMMARY)
        scope = Scope(tenant, event.actor, namespace_prefix=prefix)
        mark = f"summary:{event.session}:"
        found = self.store.list_records(scope, statuses=[Status.ACTIVE], limit=100)
        return tuple(
            r for r in found if (r.field or "").startswith(mark) and r.source.strategy == strategy
        )

    def _embed_events(self, tenant: str, jobs: Sequence[Job], events: Mapping[str, Event]) -> None:
        """Embed new events once (by the first strategy's jobs), so raw turns are found by
        meaning too."""
        emb = self._embedder()
        first = next(iter(self.strategies), None)
        if emb is None or first is None:
            return
        todo = [events[j.event_id] for j in jobs if j.strategy == first and j.event_id in events]
        todo = [e for e in todo if e.text.strip()]
        if todo:
            vectors = emb.embed([e.text for e in todo])
            self.store.add_event_vectors(tenant, list(zip(todo, vectors, strict=True)), emb.name)

    @contextmanager
    def _heartbeat(self, job_ids: Sequence[int]) -> Iterator[None]:
        """Keep the leases of `job_ids` alive while they run (a thread, every third of a lease)."""
        stop = threading.Event()
        lease = self.settings.lease_seconds

        def beat() -> None:
            while not stop.wait(lease / 3):
                try:
                    self.store.heartbeat(job_ids, self._clock(), lease)
                except Exception:  # a missed beat only risks a second run, which is idempotent
                    log.warning("heartbeat failed", exc_info=True)

        thread = threading.Thread(target=beat, name="remem-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    # -- consolidation --------------------------------------------------------------

    def _consolidate_batch(
        self,
        tenant: str,
        actor: str,
        strategy: str,
        candidates: Sequence[Candidate],
        calls: list[LLMCall],
        session: str,
    ) -> tuple[ProcessResult, Write]:
        # never stored, never logged: a secret in the text, the field or the value
        kept = [c for c in candidates if not holds_secret(c.text, c.field, c.value)]
        refused = len(candidates) - len(kept)
        template = (self.settings.namespaces or {}).get(strategy)
        spaces = [_namespace(template, tenant, actor, session, strategy, c.kind) for c in kept]
        pending = Consolidation(self, tenant, actor)
        vectors = pending.embed([c.text for c in kept])
        near = [
            pending.neighbours(c, v, ns) for c, v, ns in zip(kept, vectors, spaces, strict=True)
        ]
        verdicts: dict[int, Verdict] = {}
        if self._consolidator is not None:
            ask = [
                (i, c, [r for r, _ in near[i] if r.kind is c.kind])
                for i, c in enumerate(kept)
                if near[i] and not pending.holds_field(c)
            ]
            ask = [(i, c, rs) for i, c, rs in ask if rs]
            if ask:
                try:
                    found = self._consolidator.verdicts(
                        [(c, rs) for _, c, rs in ask], calls, strategy
                    )
                    verdicts = {ask[k][0]: v for k, v in found.items()}
                except LLMError as exc:  # the rules decide: added rather than lost
                    log.warning("consolidation by model failed (%s); rules decide", exc.code)
        result = ProcessResult(refused=refused)
        for i, cand in enumerate(kept):
            outcome, _ = pending.add(cand, vectors[i], spaces[i], verdicts.get(i), near=near[i])
            result = result + outcome
        return result, pending.write()

    def consolidation(self, tenant: str, actor: str) -> Consolidation:
        """A fresh consolidation of candidates about one actor (used by `Memory.remember`)."""
        return Consolidation(self, tenant, actor)


class Consolidation:
    """What a batch of candidates writes, decided one by one against the scope's records
    and the records the batch itself has already planned; applied in one `Write`."""

    def __init__(self, pipeline: Pipeline, tenant: str, actor: str) -> None:
        self._p = pipeline
        self.tenant = tenant
        self.actor = actor
        self.scope = Scope(tenant, actor)
        self._emb = pipeline._embedder()
        self.inserts: list[Record] = []
        self.vectors: list[Vector] = []
        self.changes: list[StatusChange] = []
        self.history: list[HistoryEntry] = []
        self.closed: set[str] = set()
        self._fields: dict[str, list[Record]] = {}

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        """Embeddings of candidate texts in one batch (None without an embedder)."""
        if self._emb is None or not texts:
            return [None] * len(texts)
        return list(self._emb.embed(list(texts)))

    def holds_field(self, cand: Candidate) -> bool:
        """Whether an active stored record already holds the candidate's field."""
        if cand.field is None:
            return False
        field = canonical_field(cand.field)
        return any(r.status is Status.ACTIVE for r in self._stored_field(field))

    def _stored_field(self, name: str | None) -> list[Record]:
        """The scope's stored records about a field (unchanged until this batch is written)."""
        if name is None:
            return []
        if name not in self._fields:
            found = [
                r
                for stored in stored_names(name)
                for r in self._p.store.records_by_field(self.scope, stored)
            ]
            found.sort(key=lambda r: r.created_at, reverse=True)
            self._fields[name] = found
        return self._fields[name]

    def neighbours(
        self, cand: Candidate, vec: Vector | None, namespace: str
    ) -> list[tuple[Record, float]]:
        """The most similar stored records of the same namespace, with their cosines."""
        store = self._p.store
        hits = store.search_records(self.scope, cand.text, 8)
        near = [r for r in store.get_records(self.tenant, [h.id for h in hits])]
        near = [r for r in near if r.namespace == namespace]
        cosines: dict[str, float] = {}
        if self._emb is not None and vec is not None and near:
            stored = store.record_vectors(self.tenant, [r.id for r in near], self._emb.name)
            cosines = {rid: float(np.dot(v, vec)) for rid, v in stored.items()}
        return [(r, cosines.get(r.id, 0.0)) for r in near]

    def add(
        self,
        cand: Candidate,
        vec: Vector | None,
        namespace: str,
        verdict: Verdict | None = None,
        valid_until: datetime | None = None,
        near: Sequence[tuple[Record, float]] | None = None,
    ) -> tuple[ProcessResult, str]:
        """Decide one candidate and plan its rows; return what happened and its record id.

        The candidate's field is made canonical here, once for every writer (the
        extractors, `remember`, batch writes): see `remem.policy.fields`.
        """
        cand = replace(cand, field=optional_field(cand.field))
        same_field = self._view(self._stored_field(cand.field)) + [
            r for r in self.inserts if r.field == cand.field and cand.field
        ]
        if near is None:
            near = self.neighbours(cand, vec, namespace)
        neighbours = [
            (r, c)
            for r, c in zip(self._view([r for r, _ in near]), [c for _, c in near], strict=True)
        ]
        neighbours += self._planned_neighbours(vec)
        rule = decide(cand, same_field, neighbours)
        planned_ids = {r.id for r in self.inserts}
        if rule.target in planned_ids or set(rule.supersedes) & planned_ids:
            rule = replace(rule, binding=True)  # the model never saw this batch's own records
        decision = rule
        if verdict is not None:
            decision = with_verdict(
                rule,
                cand,
                [r for r, _ in neighbours],
                verdict.action,
                verdict.target,
                verdict.reason,
            )
        return self._plan(
            decision, cand, vec, namespace, valid_until, same_field + [r for r, _ in neighbours]
        )

    def _plan(
        self,
        decision: Decision,
        cand: Candidate,
        vec: Vector | None,
        namespace: str,
        valid_until: datetime | None,
        known: Sequence[Record],
    ) -> tuple[ProcessResult, str]:
        if decision.action is Action.NOOP:
            return ProcessResult(noops=1), decision.target or ""
        late_until = None
        if decision.late_behind is not None:
            late_until = next(r for r in known if r.id == decision.late_behind).valid_from
        if valid_until is None:
            valid_until = expiry(cand.observed_at, cand.kind, cand.sensitivity, self._p._ttl)
        new_id = self._p._ids("rec")
        planned = plan(
            decision,
            cand,
            tenant=self.tenant,
            actor=self.actor,
            new_id=new_id,
            now=self._p._clock(),
            valid_until=valid_until,
            namespace=namespace,
            late_valid_until=late_until,
            flags=instruction_flags(cand.text),
        )
        self.inserts.extend(planned.inserts)
        if vec is not None:
            self.vectors.append(vec)
        self.changes.extend(planned.changes)
        self.history.extend(planned.history)
        self.closed.update(c.record_id for c in planned.changes)
        if decision.late_behind is not None:
            return ProcessResult(late=1), new_id
        if decision.action in (Action.UPDATE, Action.INVALIDATE):
            return ProcessResult(records_updated=1), new_id
        return ProcessResult(records_added=1), new_id

    def _view(self, records: Sequence[Record]) -> list[Record]:
        """Records as this batch leaves them: those it closed are no longer active."""
        return [replace(r, status=Status.INVALID) if r.id in self.closed else r for r in records]

    def _planned_neighbours(self, vec: Vector | None) -> list[tuple[Record, float]]:
        out = []
        for i, r in enumerate(self._view(self.inserts)):
            cos = 0.0
            if vec is not None and i < len(self.vectors):
                cos = float(np.dot(self.vectors[i], vec))
            out.append((r, cos))
        return out

    def write(self, **extra: Any) -> Write:
        """Everything planned, as one write."""
        emb = self._emb
        return Write(
            tenant=self.tenant,
            inserts=tuple(self.inserts),
            vectors=tuple(self.vectors)
            if emb is not None and len(self.vectors) == len(self.inserts)
            else (),
            vector_model=emb.name if emb is not None else "",
            changes=tuple(self.changes),
            history=tuple(self.history),
            **extra,
        )


def build_pipeline(
    store: Store,
    config: Config,
    *,
    embedder: Callable[[], Embedder | None],
    clock: Callable[[], datetime],
    ids: Callable[[str], str],
    ttl: Mapping[str, timedelta],
    chat: ChatModel | None = None,
) -> Pipeline:
    """The pipeline a configuration describes; `chat` replaces the configured model door."""
    if chat is None and config.llm is not None:
        chat = ChatModel(config.llm, config.retry)
    strategies: dict[str, Strategy] = {}
    for s in config.strategies:
        if s.name == "offline":
            strategies[s.name] = OfflineStrategy()
        elif s.name == "offline-summary":
            strategies[s.name] = OfflineSummaryStrategy()
        elif chat is None:
            raise ConfigError(f"strategy {s.name!r} needs a language model; none is configured")
        else:
            strategies[s.name] = LLMStrategy(s.name, chat, s)
    consolidator = None
    if chat is not None and config.consolidation.enabled:
        consolidator = ModelConsolidator(chat, config.consolidation.model)
    settings = Settings(
        lease_seconds=config.worker.lease_seconds,
        context_events=config.worker.context_events,
        batch_events=config.worker.batch_events,
        retry=config.retry,
        namespaces={s.name: s.namespace for s in config.strategies if s.namespace},
    )
    pipeline = Pipeline(
        store,
        strategies,
        embedder=embedder,
        clock=clock,
        ids=ids,
        ttl=ttl,
        consolidator=consolidator,
        settings=settings,
    )
    if chat is not None:
        pipeline.chats.append(chat)
    return pipeline


def _namespace(
    template: str | None, tenant: str, actor: str, session: str, strategy: str, kind: Kind
) -> str:
    if not template:
        return namespace_for(tenant, actor, kind)
    return template.format(tenant=tenant, actor=actor, session=session, strategy=strategy)
