"""The consolidation step: a batch of candidates against the scope's records, one `Write`.

`consolidate` is what extraction runs for a batch of candidates (secrets
refused, namespaces chosen, a model's verdicts asked for when one is
configured and always applied through the rules); `Consolidation` is what it
and `remember` share: each candidate decided (`remem.consolidate.rules`) against
the stored records and those the batch already planned, and planned
(`remem.consolidate.plan`). Its dependencies are explicit: a `Deps` bundle
(store, embedder, clock, ids, record lifetimes) for the candidates' tenant.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.consolidate.plan import plan, plan_restated
from remem.consolidate.rules import (
    Decision,
    choices_left_behind,
    decide,
    diets_left_behind,
    with_verdict,
)
from remem.embed.base import Embedder, embed_or_none
from remem.errors import LLMError
from remem.extract.llm import ModelConsolidator
from remem.extract.schemas import Verdict
from remem.memory.deps import Deps
from remem.model import Action, Candidate, HistoryEntry, Kind, LLMCall, Record, Status
from remem.pipeline.jobs import ProcessResult
from remem.policy.dataclasses import holds_secret
from remem.policy.fields import canonical_field, optional_field, stored_names
from remem.policy.scope import namespace_for
from remem.policy.text import nfc
from remem.policy.untrusted import instruction_flags
from remem.policy.validity import expiry
from remem.store.roles import (
    FIELD_CURRENT_MOST,
    Scope,
    SourceGrowth,
    StatusChange,
    Write,
    joined_sources,
)

log = logging.getLogger("remem")

Vector = npt.NDArray[np.float32]


def consolidate(
    deps: Deps,
    actor: str,
    strategy: str,
    session: str,
    candidates: Sequence[Candidate],
    *,
    consolidator: ModelConsolidator | None,
    template: str | None,
    calls: list[LLMCall],
) -> tuple[ProcessResult, Write]:
    """Decide and plan a strategy's candidates about `actor` (of `deps.tenant`).

    `template` is the strategy's namespace template (None: the kind's namespace);
    the model calls made are appended to `calls`. Returns what happened and the
    one write that applies it.
    """
    # never stored, never logged: a secret in the text, the field or the value
    kept = [c for c in candidates if not holds_secret(c.text, c.field, c.value)]
    refused = len(candidates) - len(kept)
    tenant = deps.tenant
    spaces = [strategy_namespace(template, tenant, actor, session, strategy, c.kind) for c in kept]
    pending = Consolidation(deps, actor)
    vectors = pending.embed([c.text for c in kept])
    near = [pending.neighbours(c, v, ns) for c, v, ns in zip(kept, vectors, spaces, strict=True)]
    verdicts: dict[int, Verdict] = {}
    if consolidator is not None:
        ask = [
            (i, c, [r for r, _ in near[i] if r.kind is c.kind])
            for i, c in enumerate(kept)
            if near[i] and not pending.holds_field(c)
        ]
        ask = [(i, c, rs) for i, c, rs in ask if rs]
        if ask:
            try:
                found = consolidator.verdicts([(c, rs) for _, c, rs in ask], calls, strategy)
                verdicts = {ask[k][0]: v for k, v in found.items()}
            except LLMError as exc:  # the rules decide: added rather than lost
                log.warning("consolidation by model failed (%s); rules decide", exc.code)
    result = ProcessResult(refused=refused)
    for i, cand in enumerate(kept):
        outcome, _ = pending.add(cand, vectors[i], spaces[i], verdicts.get(i), near=near[i])
        result = result + outcome
    return result, pending.write()


def _ends_choice(cand: Candidate, rule: Decision, neighbours: Sequence[Record]) -> Decision:
    """A choice made instead of another ends the records that told of the other
    (`remem.consolidate.rules.choices_left_behind`)."""
    return _ending(rule, choices_left_behind(cand, neighbours), f"{cand.field}: chosen instead")


def _ending(rule: Decision, ended: tuple[str, ...], reason: str) -> Decision:
    """`rule` made an update that ends the records `ended` (binding: a rule decided it),
    or `rule` as it was when it ends none."""
    if not ended:
        return rule
    return replace(rule, action=Action.UPDATE, reason=reason, supersedes=ended, binding=True)


def strategy_namespace(
    template: str | None, tenant: str, actor: str, session: str, strategy: str, kind: Kind
) -> str:
    """Where a strategy's records of `kind` go: its template filled in, else the kind's."""
    if not template:
        return namespace_for(tenant, actor, kind)
    return template.format(tenant=tenant, actor=actor, session=session, strategy=strategy)


class Consolidation:
    """What a batch of candidates writes, decided one by one against the scope's records
    and the records the batch itself has already planned; applied in one `Write`."""

    def __init__(self, deps: Deps, actor: str) -> None:
        self.deps = deps
        self.tenant = deps.tenant
        self.actor = actor
        self.scope = Scope(deps.tenant, actor)
        self._emb: Embedder | None = deps.embedder()
        self.inserts: list[Record] = []
        self.vectors: list[Vector] = []
        self.changes: list[StatusChange] = []
        self.history: list[HistoryEntry] = []
        self.closed: set[str] = set()
        self._fields: dict[tuple[str, tuple[str, ...]], list[Record]] = {}
        self.grown: dict[str, tuple[str, ...]] = {}  # stored record id -> events joining it

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        """Embeddings of candidate texts (in NFC, as `add` stores them) in one batch (None
        without an embedder, or while it cannot embed: `embed_or_none`)."""
        return embed_or_none(self._emb, [nfc(t) for t in texts])

    def holds_field(self, cand: Candidate) -> bool:
        """Whether an active stored record already holds the candidate's field."""
        if cand.field is None:
            return False
        field = canonical_field(cand.field)
        return any(r.status is Status.ACTIVE for r in self._stored_field(field))

    def _stored_field(self, name: str | None, events: Sequence[str] = ()) -> list[Record]:
        """The scope's stored records about a field that a decision reads (unchanged until
        this batch is written), newest written first: its active ones, and those, active
        or invalid, whose source names one of `events` (the same event consolidated
        again, `remem.consolidate.rules.decide`). Its invalid history is never read: a
        write costs the same however often the field was restated (at most
        `FIELD_CURRENT_MOST` of each stored name)."""
        if name is None:
            return []
        key = (name, tuple(sorted(set(events))))
        if key not in self._fields:
            records, most = self.deps.store.records, FIELD_CURRENT_MOST
            found = [
                r
                for stored in stored_names(name)
                for r in records.records_by_field(
                    self.scope, stored, current=True, events=key[1], limit=most
                )
            ]
            found.sort(key=lambda r: r.created_at, reverse=True)
            self._fields[key] = found
        return self._fields[key]

    def neighbours(
        self, cand: Candidate, vec: Vector | None, namespace: str
    ) -> list[tuple[Record, float]]:
        """The most similar stored records of the same namespace, with their cosines."""
        store = self.deps.store
        hits = store.search.search_records(self.scope, cand.text, 8)
        near = [r for r in store.records.get_records(self.tenant, [h.id for h in hits])]
        near = [r for r in near if r.namespace == namespace]
        cosines: dict[str, float] = {}
        if self._emb is not None and vec is not None and near:
            stored = store.search.record_vectors(self.tenant, [r.id for r in near], self._emb.name)
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

        The candidate's field is made canonical here, and its text and value put in
        Unicode NFC (so "Malmö" typed either way is one value), once for every writer
        (the extractors, `remember`, corrections, proposals, batch writes): see
        `remem.policy.fields` and `remem.policy.text.nfc`.
        """
        cand = replace(
            cand, text=nfc(cand.text), field=optional_field(cand.field), value=nfc(cand.value)
        )
        stored = self._stored_field(cand.field, cand.source.event_ids)
        same_field = self._view(stored) + [
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
        if rule.action is Action.ADD and rule.late_behind is None:
            rule = self._ends_diet(cand, rule)
        if rule.action is Action.ADD and rule.late_behind is None:
            rule = _ends_choice(cand, rule, [r for r, _ in neighbours])
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
                nfc(verdict.reason),
            )
        return self._plan(
            decision, cand, vec, namespace, valid_until, same_field + [r for r, _ in neighbours]
        )

    def _ends_diet(self, cand: Candidate, rule: Decision) -> Decision:
        """An "eats <food>" statement that a current diet leaves out supersedes that diet
        (`remem.consolidate.rules.diets_left_behind`)."""
        if not (cand.field or "").startswith("eats:"):
            return rule
        diets = self._view(self._stored_field("diet")) + [
            r for r in self._view(self.inserts) if r.field == "diet"
        ]
        reason = f"{cand.field}: eats what the current diet leaves out"
        return _ending(rule, diets_left_behind(cand, diets), reason)

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
            self._restate(decision, now=self.deps.clock())
            return ProcessResult(noops=1), decision.target or ""
        late_until = None
        if decision.late_behind is not None:
            late_until = next(r for r in known if r.id == decision.late_behind).valid_from
        if valid_until is None:
            valid_until = expiry(cand.observed_at, cand.kind, cand.sensitivity, self.deps.ttl)
        new_id = self.deps.ids("rec")
        planned = plan(
            decision,
            cand,
            tenant=self.tenant,
            actor=self.actor,
            new_id=new_id,
            now=self.deps.clock(),
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

    def _restate(self, decision: Decision, *, now: datetime) -> None:
        """A NO-OP's restating events join its target: a record this batch plans takes
        them in its own source; a stored one grows by a `SourceGrowth` in the write."""
        if decision.target is None or not decision.adds_sources:
            return
        for i, rec in enumerate(self.inserts):
            if rec.id == decision.target:
                self.inserts[i] = _with_sources(rec, decision.adds_sources)
                return
        planned = plan_restated(decision, actor=self.actor, now=now)
        self.history.extend(planned.history)
        for growth in planned.sources:
            had = self.grown.get(growth.record_id, ())
            self.grown[growth.record_id] = joined_sources(had, growth.event_ids)

    def _view(self, records: Sequence[Record]) -> list[Record]:
        """Records as this batch leaves them: those it closed are no longer active, those
        it restated name the restating events in their source."""
        out = []
        for r in records:
            if r.id in self.grown:
                r = _with_sources(r, self.grown[r.id])
            out.append(replace(r, status=Status.INVALID) if r.id in self.closed else r)
        return out

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
            sources=tuple(SourceGrowth(rid, self.actor, ids) for rid, ids in self.grown.items()),
            **extra,
        )


def _with_sources(rec: Record, added: Sequence[str]) -> Record:
    """`rec` with `added` events joined to its source."""
    joined = joined_sources(rec.source.event_ids, added)
    return replace(rec, source=replace(rec.source, event_ids=joined))
