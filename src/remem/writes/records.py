"""The explicit record write paths: remember, update, proposals and their review.

Each one checks its input with `remem.writes.checks`, emits a consolidation
`Decision` (decided by the rules for `remember`, stated for the others) and
plans its rows with `remem.consolidate.plan`, the one planning step extraction
uses too; the rows are applied in one `Write`. Self-managed batches
(`remem.writes.batch`) run through these same functions.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from remem.consolidate.plan import Planned, plan, plan_approval
from remem.consolidate.rules import Decision
from remem.consolidate.step import Consolidation
from remem.embed.base import embed_or_none
from remem.errors import ConflictError, InvalidInput, NotFound, RefusedContent
from remem.memory.deps import Deps
from remem.model import (
    Action,
    Authority,
    Candidate,
    HistoryEntry,
    Kind,
    Record,
    Sensitivity,
    Source,
    Status,
)
from remem.policy.dataclasses import refuse_secrets, shown
from remem.policy.fields import stored_field
from remem.policy.metadata import check_metadata
from remem.policy.scope import (
    SHARED_ACTOR,
    actor_prefix,
    check_name,
    named,
    namespace_for,
    namespace_problem,
    stored_name,
)
from remem.policy.text import nfc
from remem.policy.untrusted import instruction_flags
from remem.store.roles import FIELD_CURRENT_MOST, Scope, StatusChange, Write
from remem.store.values import AlreadyStated
from remem.writes.checks import (
    STRATEGY_MAX,
    check_record_id,
    check_strings,
    fact_value,
    optional_time,
    statement,
)
from remem.writes.checks import sensitivity as checked_sensitivity
from remem.writes.request import RememberAsk


def get(deps: Deps, record_id: str) -> Record:
    """One record of the tenant; NotFound when there is none."""
    rec = deps.store.records.get_record(deps.tenant, check_record_id(record_id))
    if rec is None:
        raise NotFound(f"no record {named(record_id)} in tenant {deps.tenant!r}")
    return rec


# How long before a statement's decision a record saying the same may have been stored
# by a writer deciding beside it (`Write.fresh_since`): a decision and its write take
# milliseconds to seconds (the embedding), so a minute covers them with room to spare.
FRESH_SECONDS = timedelta(seconds=60)


def remember(deps: Deps, request: RememberAsk) -> Record:
    """Store an explicit statement as a confirmed record at once (see `Memory.remember`);
    the request's `request_id` is a face's (the request ledger's), not read here."""
    actor = stored_name("actor", request.actor)
    text, field, strategy = request.text, request.field, request.strategy
    statement("text to remember", text)
    meta = check_metadata(request.metadata)
    namespace = request.namespace
    if namespace is not None:
        namespace = own_namespace(deps.tenant, actor, namespace)
    try:
        kind = Kind(request.kind)
    except ValueError:
        names = ", ".join(k.value for k in Kind)
        raise InvalidInput(f"kind must be one of {names}; got {shown(request.kind)}") from None
    sensitivity = checked_sensitivity(request.sensitivity) or Sensitivity.NORMAL
    if kind in (Kind.PROCEDURAL, Kind.SUMMARY):
        raise InvalidInput(f"kind {kind.value} cannot be written with remember")
    if not isinstance(strategy, str) or not 1 <= len(strategy) <= STRATEGY_MAX:
        raise InvalidInput(
            f"strategy must be a name of 1-{STRATEGY_MAX} characters; got {shown(strategy)}"
        )
    check_strings(field=field, strategy=strategy)
    value = fact_value(field, request.value)
    refuse_secrets(
        {
            "text": text,
            "field": field,
            # "wifi password" = "hunter2x7" is a stated secret though neither is one alone
            "value": {field: value} if field and value else value,
            "strategy": strategy,
            "namespace": namespace,
        }
    )
    now = deps.clock()
    until = optional_time(request.valid_until, "valid_until")
    if until is not None and until <= now:
        raise InvalidInput("valid_until must be in the future")
    cand = Candidate(
        text=" ".join(text.split()),
        kind=kind,
        source=Source(
            type="explicit" if strategy == "explicit" else "self-managed",
            strategy=strategy,
            extractor="remember",
        ),
        observed_at=now,
        field=field,
        value=value,
        authority=Authority.CONFIRMED,
        sensitivity=sensitivity,
        metadata=meta,
    )
    vec = None
    for attempt in range(3):
        batch = Consolidation(deps, actor)
        if vec is None:
            (vec,) = batch.embed([cand.text])
        if namespace is None:
            _, record_id = batch.add(
                cand, vec, namespace_for(deps.tenant, actor, kind), valid_until=until
            )
            # the same statement sent at once from elsewhere: one record, not two (the
            # last attempt writes what it decided, so a decision that keeps both stands)
            fresh = now - FRESH_SECONDS if attempt < 2 else None
            write = replace(batch.write(), fresh_since=fresh)
        else:
            # the application names its records there: only the same field replaces or
            # repeats one, never a similar text (two keys with one value stay two records)
            _, record_id = batch.add(cand, vec, namespace, valid_until=until, near=())
            write = batch.write()
        try:
            deps.store.records.apply(write)
        except AlreadyStated:
            continue  # decided again, against the record the other writer stored
        found = _written(deps, write, record_id)
        if found is not None:
            return found
        # it restated a record a forget of the actor erased meanwhile: nothing was
        # stored, so it is decided again against what is left (a fresh start)
    raise ConflictError(
        f"the actor {named(actor)} was erased twice while this was written; nothing was "
        "stored: say it again"
    )


def _written(deps: Deps, write: Write, record_id: str) -> Record | None:
    """The record a write stored (or, for a restatement, the one it restated), read back.

    A `forget` of the actor may commit between the write and this read: a record the
    write inserted was stored (then erased) and is returned as written, instead of a
    NotFound about an id the caller never named; None when the restated record was
    erased (nothing was stored).
    """
    found = deps.store.records.get_record(deps.tenant, record_id)
    if found is not None:
        return found
    return next((rec for rec in write.inserts if rec.id == record_id), None)


def own_namespace(tenant: str, actor: str, namespace: object) -> str:
    """`namespace` if it is usable text lying strictly under the actor's prefix (a request
    may narrow its scope, never widen it); InvalidInput otherwise."""
    if (problem := namespace_problem(namespace)) is not None:
        raise InvalidInput(problem)
    assert isinstance(namespace, str)  # namespace_problem refuses anything else
    namespace = nfc(namespace)  # typed composed or decomposed: one namespace
    prefix = actor_prefix(tenant, actor)
    if not namespace.startswith(prefix) or namespace == prefix:
        raise InvalidInput(f"namespace must lie under {prefix}; got {shown(namespace)}")
    return namespace


def update(
    deps: Deps,
    record_id: str,
    *,
    text: str,
    valid_until: str | datetime | None = None,
    by: str = "user",
) -> Record:
    """Correct an active record: a new confirmed record supersedes it (see `Memory.update`)."""
    old = get(deps, record_id)
    if old.status is not Status.ACTIVE:
        raise ConflictError(f"{old.id} is {old.status.value}; only an active record changes")
    if old.kind in (Kind.PROCEDURAL, Kind.SUMMARY):
        raise InvalidInput(f"a {old.kind.value} record cannot be updated; propose a new version")
    statement("the corrected text", text)
    check_strings(by=by)
    refuse_secrets({"text": text, "corrector": by})
    now = deps.clock()
    until = optional_time(valid_until, "valid_until")
    if until is not None and until <= now:  # as `remember`: a past end is no correction
        raise InvalidInput("valid_until must be in the future")
    cand = Candidate(
        text=" ".join(text.split()),
        kind=old.kind,
        source=Source(type="explicit", strategy="explicit", extractor=f"update by {by}"),
        observed_at=max(now, old.valid_from),
        field=None if old.field is None else stored_field(old.field),
        authority=Authority.CONFIRMED,
        sensitivity=old.sensitivity,
        metadata=old.metadata,  # a correction keeps what the application filed it with
    )
    decision = Decision(Action.UPDATE, f"corrected by {by}", supersedes=(old.id,))
    new_id = deps.ids("rec")
    planned = plan(
        decision,
        cand,
        tenant=deps.tenant,
        actor=old.actor,
        new_id=new_id,
        now=now,
        valid_until=until,
        namespace=old.namespace,
        flags=instruction_flags(cand.text),
    )
    write = _rows(deps, planned)
    deps.store.records.apply(write)
    written = _written(deps, write, new_id)
    assert written is not None  # the correction is an insert: stored, whatever came after
    return written


def propose_procedure(
    deps: Deps,
    *,
    text: str,
    name: str | None = None,
    actor: str | None = None,
    proposed_by: str = "agent",
) -> Record:
    """Propose a procedure; it stays PROPOSED until approved (see `Memory.propose_procedure`)."""
    subject = SHARED_ACTOR if actor is None else stored_name("actor", actor)
    statement("procedure text", text)
    if name is not None:
        check_name("procedure name", name)
    check_strings(proposed_by=proposed_by)
    refuse_secrets({"procedure text": text, "procedure name": name, "proposer": proposed_by})
    now = deps.clock()
    cand = Candidate(
        text=" ".join(text.split()),
        kind=Kind.PROCEDURAL,
        source=Source(type="proposal", strategy="procedure", extractor=proposed_by),
        observed_at=now,
        field=f"procedure:{name}" if name else None,
        authority=Authority.APPROVED,
        sensitivity=Sensitivity.NORMAL,
    )
    new_id = deps.ids("rec")
    planned = plan(
        Decision(Action.ADD, "proposed"),
        cand,
        tenant=deps.tenant,
        actor=subject,
        new_id=new_id,
        now=now,
        flags=instruction_flags(text),
        proposed_by=proposed_by,
    )
    _apply(deps, planned)
    return planned.inserts[0]


def approve(deps: Deps, record_id: str, *, reviewer: str) -> Record:
    """Approve a proposed procedure, superseding its previous version (see `Memory.approve`)."""
    rec = _proposal(deps, record_id, reviewer)
    if rec.flags:
        raise RefusedContent(
            f"{rec.id} is flagged {', '.join(rec.flags)}: remembered text that carries "
            "instructions is never made a procedure; reject it and propose a clean text"
        )
    scope = Scope(deps.tenant, rec.actor)
    previous = (  # the approved versions: the field's active records, not its history
        [
            r.id
            for r in deps.store.records.records_by_field(
                scope, rec.field, current=True, limit=FIELD_CURRENT_MOST
            )
            if r.status is Status.ACTIVE and r.id != rec.id
        ]
        if rec.field
        else []
    )
    decision = Decision(Action.UPDATE, "a newer version was approved", supersedes=tuple(previous))
    deps.store.records.apply(
        _rows(deps, plan_approval(decision, rec, now=deps.clock(), by=reviewer))
    )
    return get(deps, rec.id)


def reject(deps: Deps, record_id: str, *, reviewer: str, reason: str = "") -> Record:
    """Reject a proposed procedure; it is kept, inactive, with the reviewer's reason."""
    check_strings(reason=reason)
    refuse_secrets({"reason": reason})
    reason = nfc(reason)
    rec = _proposal(deps, record_id, reviewer)
    now = deps.clock()
    deps.store.records.apply(
        Write(
            tenant=deps.tenant,
            changes=(StatusChange(rec.id, Status.INVALID, now, None, "REJECT", reason),),
            history=(
                HistoryEntry(
                    rec.id, "REJECT", now, None, Status.INVALID, reason=reason, by=reviewer
                ),
            ),
        )
    )
    return get(deps, rec.id)


def _proposal(deps: Deps, record_id: str, reviewer: str) -> Record:
    check_name("reviewer", reviewer)
    refuse_secrets({"reviewer": reviewer})  # kept in the history
    rec = get(deps, record_id)
    if rec.status is not Status.PROPOSED:  # decided already, or never proposed: 409
        raise ConflictError(f"{record_id} is {rec.status.value}, not a proposal awaiting review")
    return rec


def _apply(deps: Deps, planned: Planned) -> None:
    """Apply planned rows, each new record with its embedding."""
    deps.store.records.apply(_rows(deps, planned))


def _rows(deps: Deps, planned: Planned) -> Write:
    """Planned rows as one write; new records are embedded (when there is an embedder)."""
    emb = deps.embedder() if planned.inserts else None
    vectors: tuple[npt.NDArray[np.float32] | None, ...] = ()
    if emb is not None:  # None while it cannot embed: filled in later (`embed_or_none`)
        vectors = tuple(embed_or_none(emb, [r.text for r in planned.inserts]))
    return Write(
        tenant=deps.tenant,
        inserts=planned.inserts,
        vectors=vectors,
        vector_model=emb.name if emb is not None else "",
        changes=planned.changes,
        history=planned.history,
    )
