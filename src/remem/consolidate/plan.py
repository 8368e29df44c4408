"""Planning: a decision becomes the rows one `Write` applies. Pure.

Every write path plans here: extraction and `remember` (through
`remem.consolidate.step`), `update`, proposals (`plan` with `proposed_by`) and
approvals (`plan_approval`). Nothing is overwritten in place: an outdated
record becomes INVALID, linked both ways to the record that superseded it,
with a history row for each change (`_supersede`, the one place that closes a
record for a newer one). A NO-OP that restates a stored record grows its
source by the restating events (`plan_restated`). A record's text, field, value
and reason are put in Unicode NFC here, once for every writer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from remem.consolidate.rules import Decision
from remem.model import Action, Candidate, HistoryEntry, Record, Status
from remem.policy.scope import namespace_for
from remem.policy.text import nfc
from remem.store.roles import SourceGrowth, StatusChange


@dataclass(frozen=True, slots=True)
class Planned:
    """The rows a decision writes: new records, closed records, history, grown sources."""

    inserts: tuple[Record, ...]
    changes: tuple[StatusChange, ...]
    history: tuple[HistoryEntry, ...]
    sources: tuple[SourceGrowth, ...] = ()


def plan(
    decision: Decision,
    candidate: Candidate,
    *,
    tenant: str,
    actor: str,
    new_id: str,
    now: datetime,
    valid_until: datetime | None = None,
    namespace: str | None = None,
    flags: tuple[str, ...] = (),
    late_valid_until: datetime | None = None,
    proposed_by: str | None = None,
) -> Planned:
    """Turn a decision into rows. Pure; `late_valid_until` closes a late arrival.

    A candidate observed after `now` (an event from a client clock running
    ahead, within the allowed skew) is valid from `now`, and what it
    supersedes closes at `now`: recall never comes back empty because of a
    clock. The decision itself (which is newer) still used its own time.
    With `proposed_by` the new record is a proposal: PROPOSED (never recalled)
    until `plan_approval` makes it active, its history row a PROPOSE by them.
    """
    if decision.action is Action.NOOP:
        return plan_restated(decision, actor=actor, now=now)
    # every record's strings in NFC, whichever writer planned it (`remem.policy.text.nfc`)
    candidate = replace(
        candidate, text=nfc(candidate.text), field=nfc(candidate.field), value=nfc(candidate.value)
    )
    decision = replace(decision, reason=nfc(decision.reason))
    late = decision.late_behind is not None
    start = min(candidate.observed_at, now)
    status = Status.INVALID if late else Status.ACTIVE
    if proposed_by is not None:
        status = Status.PROPOSED
    record = Record(
        id=new_id,
        tenant=tenant,
        actor=actor,
        namespace=namespace or namespace_for(tenant, actor, candidate.kind),
        kind=candidate.kind,
        text=candidate.text,
        field=candidate.field,
        value=candidate.value,
        source=candidate.source,
        authority=candidate.authority,
        sensitivity=candidate.sensitivity,
        valid_from=start,
        valid_until=late_valid_until if late else valid_until,
        created_at=now,
        updated_at=now,
        status=status,
        supersedes=decision.supersedes[0] if decision.supersedes else None,
        superseded_by=decision.late_behind,
        flags=flags,
        metadata=candidate.metadata,
    )
    if proposed_by is not None:
        first = HistoryEntry(new_id, "PROPOSE", now, record.text, status, by=proposed_by)
    else:
        first = HistoryEntry(
            new_id,
            "ADD_LATE" if late else decision.action.value,
            now,
            candidate.text,
            status,
            related_id=decision.late_behind
            or (decision.supersedes[0] if decision.supersedes else None),
            reason=decision.reason,
        )
    changes, history = _supersede(decision, new_id, start=start, now=now)
    return Planned((record,), changes, (first, *history))


def plan_restated(decision: Decision, *, actor: str, now: datetime) -> Planned:
    """A NO-OP: nothing new, but the events that said it again join the (active) target's
    source, with a SOURCE history row naming them. Pure; nothing when none are new."""
    if decision.target is None or not decision.adds_sources:
        return Planned((), (), ())
    joined = ", ".join(decision.adds_sources)
    entry = HistoryEntry(
        decision.target,
        "SOURCE",
        now,
        None,
        Status.ACTIVE,
        reason=f"said again in {joined}: {decision.reason}",
    )
    growth = SourceGrowth(decision.target, actor, decision.adds_sources)
    return Planned((), (), (entry,), (growth,))


def plan_approval(decision: Decision, proposal: Record, *, now: datetime, by: str) -> Planned:
    """Make a proposal active, closing what `decision` says it supersedes. Pure.

    `decision.supersedes` are the active earlier versions of the proposal's
    procedure; each is closed by `by` at `now`, linked to the proposal.
    """
    activate = StatusChange(proposal.id, Status.ACTIVE, None, None, "APPROVE")
    approved = HistoryEntry(
        proposal.id,
        "APPROVE",
        now,
        proposal.text,
        Status.ACTIVE,
        related_id=decision.supersedes[0] if decision.supersedes else None,
        by=by,
    )
    changes, history = _supersede(decision, proposal.id, start=now, now=now, by=by)
    return Planned((), (activate, *changes), (approved, *history))


def _supersede(
    decision: Decision, new_id: str, *, start: datetime, now: datetime, by: str = ""
) -> tuple[tuple[StatusChange, ...], tuple[HistoryEntry, ...]]:
    """Close every record `decision` supersedes: INVALID from `start`, linked to `new_id`."""
    changes = tuple(
        StatusChange(
            old_id,
            Status.INVALID,
            valid_until=start,
            superseded_by=new_id,
            action="SUPERSEDED",
            reason=decision.reason,
        )
        for old_id in decision.supersedes
    )
    history = tuple(
        HistoryEntry(
            old_id,
            "SUPERSEDED",
            now,
            None,
            Status.INVALID,
            related_id=new_id,
            reason=decision.reason,
            by=by,
        )
        for old_id in decision.supersedes
    )
    return changes, history
