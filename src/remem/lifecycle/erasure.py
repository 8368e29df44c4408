"""Lifecycle: deletion jobs, summary regeneration, and export of a subject.

`forget` is a job with a status, retries and a final verification by reading
every surface back (the store erases rows, vectors, full-text entries, source
event text and history text, and leaves a tombstone); summaries that quoted a
forgotten record's events are erased and queued to be made again. Then what this
process keeps in memory of it goes (`drop_erased`). `export` returns everything of
one subject in a portable shape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

from remem.embed.recent import drop_recent_texts
from remem.errors import InvalidInput, NotFound, RefusedContent, StoreError
from remem.lifecycle.reasons import refuse_erased_words
from remem.memory.deps import Deps
from remem.model import Event, Kind, Record, Status
from remem.policy.dataclasses import refuse_secrets
from remem.policy.scope import check_name, named, refuse_secret_in
from remem.recall.erased import drop_erased as drop_recall_kept
from remem.store.flows.erasure import RUNNING
from remem.store.governance import tombstoned
from remem.store.roles import Asked, ForgetReport, Scope
from remem.thread.api import checkpoint_list, has_thread_state, tool_calls
from remem.timeutil import parse_time
from remem.writes.checks import check_record_id, check_strings

FORGET_ATTEMPTS = 3
EXPORT_PAGE = 200  # events read at once by `export`, and at most this many bytes of them:
EXPORT_PAGE_BYTES = 1024 * 1024
# a deletion job still running this long after it started was left by a process that died
RESUME_AFTER = timedelta(minutes=10)
RESUME_EVERY = 60.0  # seconds between a worker's looks for such jobs

log = logging.getLogger(__name__)


def export(deps: Deps, actor: str) -> Iterator[dict[str, Any]]:
    """Everything remem holds about one actor, as JSON-ready rows.

    One row per event (`"type": "event"`) and per record with its full
    history (`"type": "record"`), in a portable shape. Events are read
    `EXPORT_PAGE` at a time (and at most `EXPORT_PAGE_BYTES` of them), so a
    subject of any size is exported in bounded memory as the rows are consumed.
    """
    check_name("actor", actor)
    for e in _all_events(deps, actor):
        yield {
            "type": "event",
            "id": e.id,
            "tenant": e.tenant,
            "actor": e.actor,
            "session": e.session,
            "role": e.role.value,
            "text": e.text,
            "time": e.time.isoformat(),
            "metadata": e.metadata,
        }
    for r in deps.store.records.list_records(Scope(deps.tenant, actor), None, limit=10_000_000):
        row = {"type": "record", **r.as_dict()}
        row["history"] = [h.as_dict() for h in deps.store.records.history(deps.tenant, r.id)]
        yield row
    yield from _actor_documents(deps, actor)
    if not has_thread_state(deps):
        return  # this backend keeps no checkpoints or tool calls to export
    for cp in checkpoint_list(deps, actor=actor, limit=1_000_000):
        yield {"type": "checkpoint", **cp.as_dict()}
    for call in tool_calls(deps, actor=actor, limit=1_000_000):
        yield {"type": "tool_call", **call.as_dict()}


def _all_events(deps: Deps, actor: str) -> Iterator[Event]:
    """Every event of the actor, oldest first, read a page at a time."""
    after = None
    while True:
        page, after = deps.store.events.events_page(
            deps.tenant, actor, None, after, EXPORT_PAGE, max_bytes=EXPORT_PAGE_BYTES
        )
        yield from page
        if after is None:
            return


def _actor_documents(deps: Deps, actor: str) -> Iterator[dict[str, Any]]:
    """The documents of the actor's own scope (`actor:<name>`), each with its chunks."""
    index = deps.store.documents
    for doc_id in index.scope_documents(deps.tenant, f"actor:{actor}"):
        doc = index.get(deps.tenant, doc_id)
        if doc is not None:
            chunks = [c.as_dict() for c in index.chunks(deps.tenant, doc_id)]
            yield {"type": "document", **doc.as_dict(), "chunk_rows": chunks}


def drop_erased(
    deps: Deps, actor: str | None, texts: Iterable[tuple[str, str]] = (), *, whole: bool = False
) -> None:
    """Drop what this process keeps in memory of an erasure: the texts the embedders
    embedded last (`remem.embed.recent`), what recall keeps of the scope of `actor`
    and every text's stems (`remem.recall.erased`), and the embedder's refusals of
    the erased `texts` (kind and id), or of every text of `actor` when `whole`
    (`remem.memory.refusals`). The store dropped its own decoded records and vectors
    of the scope when it read the erasure back. Other processes drop theirs by
    `remem.linger`'s rule. Each is a cache: emptying it costs the next use a read.
    """
    drop_recent_texts()
    drop_recall_kept(deps.store, deps.tenant, actor)
    deps.refused.drop_erased(deps.tenant, actor=actor if whole else None, texts=texts)


def forget_document(deps: Deps, document_id: str, vacuum: bool = False) -> ForgetReport:
    """Remove one document from every index (its row, chunks, words, vectors) as a
    deletion job: tombstoned, read back, retried, logged (target 'document')."""
    if deps.store.documents.get(deps.tenant, document_id) is None:
        raise NotFound(f"no document {named(document_id)} in tenant {deps.tenant!r}")
    finish_interrupted(deps, vacuum)
    chunks = [("chunk", c.id) for c in deps.store.documents.chunks(deps.tenant, document_id)]
    job_id = deps.store.erasure.start_deletion(deps.tenant, "document", document_id, deps.clock())
    report, error, attempt = _attempts(
        lambda: deps.store.documents.forget(deps.tenant, document_id, deps.clock())
    )
    drop_erased(deps, None, chunks)
    if report is not None:
        report = _scrub(deps, report, vacuum)
    deps.store.erasure.finish_deletion(deps.tenant, job_id, report, error, deps.clock(), attempt)
    if report is None:
        raise StoreError(f"deletion job {job_id} failed after {attempt} attempts: {error}")
    return replace(report, job_id=job_id, attempts=attempt)


def _attempts(run: Callable[[], ForgetReport]) -> tuple[ForgetReport | None, str | None, int]:
    """Run an erasure until it is verified, at most `FORGET_ATTEMPTS` times."""
    report: ForgetReport | None = None
    error: str | None = None
    attempt = 0
    while attempt < FORGET_ATTEMPTS:
        attempt += 1
        try:
            report = run()
            error = None
        except StoreError as exc:
            error = f"{type(exc).__name__}: {exc}"
            continue
        if report.verified:
            break
    return report, error, attempt


def _with_documents(deps: Deps, actor: str, report: ForgetReport) -> ForgetReport:
    """An actor's erasure report with the erasure of the actor's own documents added."""
    deleted, remaining = dict(report.deleted), dict(report.remaining)
    verified = report.verified
    now = deps.clock()
    for doc_id in deps.store.documents.scope_documents(deps.tenant, f"actor:{actor}"):
        got, _, _ = _attempts(partial(deps.store.documents.forget, deps.tenant, doc_id, now))
        if got is None:
            remaining["documents"] = remaining.get("documents", 0) + 1
            verified = False
            continue
        for name, n in got.deleted.items():
            deleted[f"document_{name}"] = deleted.get(f"document_{name}", 0) + n
        for name, n in got.remaining.items():
            remaining[f"document_{name}"] = remaining.get(f"document_{name}", 0) + n
        verified = verified and got.verified
    return replace(report, deleted=deleted, remaining=remaining, verified=verified)


def _refuse_a_secret_naming_no_one(deps: Deps, actor: str) -> None:
    """RefusedContent for an actor name holding a secret (a token pasted where a name
    goes) that names no one here: every write refuses such a name, so nothing of it can
    exist, and its tombstone, deletion log and audit row would keep the secret for good
    (the audit log refuses deletes). An actor stored under such a name before writes
    checked names has events or records, and is erased like any other."""
    try:
        refuse_secret_in("actor", actor)
    except RefusedContent:
        if not deps.store.actors.summaries(deps.tenant, only=actor, limit=1):
            raise


def forget(
    deps: Deps,
    *,
    record_id: str | None = None,
    actor: str | None = None,
    vacuum: bool = False,
    asked: Asked | None = None,
) -> ForgetReport:
    """Erase one record, or everything of one actor, from every surface.

    Leaves a content-free tombstone so a pending or late extraction job
    cannot recreate it, then reads every surface back, then makes the erasure
    reach the storage files (`Store.scrub_files`; `vacuum` for PostgreSQL):
    `verified` is True only when nothing of it remains. `asked`'s reason is screened
    first, for secrets and for words of what is erased (`refuse_erased_words`).
    """
    if (record_id is None) == (actor is None):
        raise InvalidInput("forget needs exactly one of record_id or actor")
    forgotten: Record | None = None
    if record_id is not None:
        forgotten = deps.store.records.get_record(deps.tenant, check_record_id(record_id))
        if forgotten is None:
            raise NotFound(f"no record {named(record_id)} in tenant {deps.tenant!r}")
        target, key = "record", record_id
    else:
        target, key = "actor", check_name("actor", actor)
        _refuse_a_secret_naming_no_one(deps, key)
    finish_interrupted(deps, vacuum)
    owner = None if forgotten is None else forgotten.actor
    if asked is not None:
        check_strings(requester=asked.requester or "", reason=asked.reason or "")
        refuse_secrets({"requester": asked.requester or "", "reason": asked.reason or ""})
        refuse_erased_words(deps, asked.reason, record=forgotten, actor=actor)
    noted = () if forgotten is None else _erased_sources(forgotten)
    job_id = deps.store.erasure.start_deletion(
        deps.tenant, target, key, deps.clock(), actor=owner, asked=asked, events=noted
    )
    report: ForgetReport | None = None
    error: str | None = None
    attempt = 0
    deleted: dict[str, int] = {}  # what every attempt erased
    while attempt < FORGET_ATTEMPTS:
        attempt += 1
        try:
            if target == "record":
                report = deps.store.erasure.forget_record(
                    deps.tenant, key, deps.clock(), owner, noted
                )
            else:
                report = deps.store.erasure.forget_actor(deps.tenant, key, deps.clock())
            error = None
        except StoreError as exc:
            error = f"{type(exc).__name__}: {exc}"
            continue
        for name, n in report.deleted.items():
            deleted[name] = deleted.get(name, 0) + n
        report = replace(report, deleted=dict(deleted))
        # a writer racing the erasure can leave something behind: erase again (a record
        # gone by then, by what its job knows: its actor and events)
        if report.verified:
            break
    if report is not None and target == "actor":
        report = _with_documents(deps, key, report)
    if report is not None:
        if forgotten is not None and forgotten.kind is not Kind.SUMMARY:
            regenerated = regenerate_summaries(deps, forgotten)
            if regenerated:
                report = replace(report, deleted={**report.deleted, "summaries": regenerated})
        report = _scrub(deps, report, vacuum)
    if forgotten is not None:
        sources = [("event", e) for e in forgotten.source.event_ids]
        drop_erased(deps, forgotten.actor, [("record", forgotten.id), *sources])
    else:
        drop_erased(deps, key, whole=True)
    deps.store.erasure.finish_deletion(deps.tenant, job_id, report, error, deps.clock(), attempt)
    if report is None:
        raise StoreError(f"deletion job {job_id} failed after {attempt} attempts: {error}")
    if report.verified:
        _close_superseded(deps, target, key, job_id, report)
    return replace(report, job_id=job_id, attempts=attempt)


def _close_superseded(deps: Deps, target: str, key: str, job_id: int, report: ForgetReport) -> None:
    """Close the earlier jobs of the same erasure still listed as running: a process
    killed midway left them so (until a forget `RESUME_AFTER` later took them up), and
    this verified erasure did what each was for. Their outcome is this job's."""
    for job in deps.store.erasure.deletions(deps.tenant, limit=1000):
        if (
            job["status"] == RUNNING
            and int(job["id"]) < job_id
            and (str(job["target"]), str(job["key"])) == (target, key)
        ):
            deps.store.erasure.finish_deletion(
                deps.tenant, int(job["id"]), report, None, deps.clock(), int(job["attempts"])
            )
            log.warning("closed deletion job %s: job %s erased the same %s", job["id"], job_id,
                        target)  # fmt: skip


def finish_interrupted(deps: Deps, vacuum: bool = False) -> int:
    """Finish the deletion jobs of the tenant that a process dying midway left running
    (started more than `RESUME_AFTER` ago); return how many. Every forget runs it first.

    An erasure that never committed is run now. One that committed (its tombstone is
    as new as the job) is not run again, since events stored since are a fresh start:
    what the backend derives from the scope is dropped, the files are scrubbed, and the
    job is closed with what that left.
    """
    stale = deps.clock() - RESUME_AFTER
    unfinished = [
        job
        for job in deps.store.erasure.deletions(deps.tenant, limit=1000)
        if job["status"] == RUNNING and parse_time(job["created_at"]) <= stale
    ]
    for job in unfinished:
        report, error, attempts = _resume(deps, job)
        target, key = str(job["target"]), str(job["key"])
        if target == "actor":
            drop_erased(deps, key, whole=True)
        elif target == "record":  # its owner, as its start noted
            owner = job["result"].get("actor")
            drop_erased(deps, None if owner is None else str(owner), [("record", key)])
        else:  # a document: its chunks are gone, their ids with them
            drop_erased(deps, None)
        if report is not None:
            report = _scrub(deps, report, vacuum)
        total = int(job["attempts"]) + attempts
        deps.store.erasure.finish_deletion(
            deps.tenant, int(job["id"]), report, error, deps.clock(), total
        )
        log.warning("finished deletion job %s, interrupted before it was verified", job["id"])
    return len(unfinished)


def finish_every_interrupted(deps: Deps) -> int:
    """`finish_interrupted` in every tenant that has such a job; how many were finished.

    The worker runs it (`remem.pipeline.worker.Worker`, every `RESUME_EVERY`), and so
    does `Memory.process()`: an erasure whose process was killed before it committed
    is carried out without waiting for another forget in its tenant."""
    tenants = deps.store.erasure.interrupted(deps.clock() - RESUME_AFTER)
    return sum(finish_interrupted(replace(deps, tenant=tenant)) for tenant in tenants)


def _resume(deps: Deps, job: dict[str, Any]) -> tuple[ForgetReport | None, str | None, int]:
    """An interrupted deletion job carried out now, or, when it committed, settled."""
    store, tenant = deps.store, deps.tenant
    target, key, started = str(job["target"]), str(job["key"]), parse_time(job["created_at"])
    if target == "actor":
        erased = store.erasure.erased_at(tenant, key)
        if erased is None or erased < started:
            report, error, attempts = _attempts(
                partial(store.erasure.forget_actor, tenant, key, deps.clock())
            )
            return (None if report is None else _with_documents(deps, key, report)), error, attempts
        store.erasure.settle_scope(tenant, key)
    elif target == "record":
        # the record as it stands, else the actor and the events its start noted: the
        # summaries that covered them are made again whether or not the erasure committed
        found = store.records.get_record(tenant, key)
        owner = job["result"].get("actor") if found is None else found.actor
        events = job["result"].get("events", []) if found is None else _erased_sources(found)
        if found is None and "events" not in job["result"] and owner:
            events = _erased_in_summaries(deps, str(owner))  # an older remem's job
        done: tuple[ForgetReport | None, str | None, int] = (ForgetReport(verified=True), None, 0)
        if found is not None or owner:  # a record gone: verified by what the job noted
            known = None if owner is None else str(owner)
            noted = [str(e) for e in events]
            done = _attempts(
                partial(store.erasure.forget_record, tenant, key, deps.clock(), known, noted)
            )
        report = done[0]
        if report is not None and owner and events:
            regenerated = _regenerate(deps, str(owner), [str(e) for e in events])
            if regenerated:
                report = replace(report, deleted={**report.deleted, "summaries": regenerated})
        return report, done[1], done[2]
    elif target == "document" and store.documents.get(tenant, key) is not None:
        return _attempts(partial(store.documents.forget, tenant, key, deps.clock()))
    return ForgetReport(deleted={}, verified=True), None, 0


def fresh_start(deps: Deps, actor: str) -> dict[str, str] | None:
    """If `actor` was erased: when, and that events stored since start a new memory."""
    erased = deps.store.erasure.erased_at(deps.tenant, actor)
    if erased is None:
        return None
    when = parse_time(erased).isoformat()
    return {
        "erased_at": when,
        "message": f"actor {actor!r} was erased at {when}; "
        "events stored since then start a new memory",
    }


def _scrub(deps: Deps, report: ForgetReport, vacuum: bool) -> ForgetReport:
    """The erasure, taken down to the files: what could not be is left in `remaining`."""
    try:
        left = deps.store.erasure.scrub_files(vacuum)
    except StoreError as exc:
        log.warning("an erasure's files could not be scrubbed: %s", exc)
        left = {"scrub_failed": 1}
    return replace(
        report,
        remaining={**report.remaining, **left},
        verified=report.verified and not any(left.values()),
    )


def _erased_sources(record: Record) -> tuple[str, ...]:
    """The events whose text goes with an erased record: none for a summary's (as
    `remem.store.flows.erasure.erased_event_texts` rules)."""
    return () if record.kind is Kind.SUMMARY else record.source.event_ids


def _erased_in_summaries(deps: Deps, actor: str) -> list[str]:
    """The events a tombstone covers among those `actor`'s summaries cover: what a record's
    deletion job started by an older remem, which noted no events, makes summaries again
    from once its record is gone. Its erasure tombstoned the record's events and emptied
    their texts, and a summary is made from texts, so one covering such an event was made
    before it and may quote it (or, covering another erasure's, is as stale)."""
    erasure, tenant = deps.store.erasure, deps.tenant
    erased: set[str] = set()
    for r in deps.store.records.list_records(Scope(tenant, actor), [Status.ACTIVE, Status.INVALID]):
        if r.kind is Kind.SUMMARY:
            ids = [e for e in r.source.event_ids if e not in erased]
            erased |= tombstoned(erasure, tenant, actor, ids)
    return sorted(erased)


def regenerate_summaries(deps: Deps, forgotten: Record) -> int:
    """Erase the summaries that covered a forgotten record's events and queue each
    session's summary to be made again from what remains; return how many."""
    return _regenerate(deps, forgotten.actor, forgotten.source.event_ids)


def _regenerate(deps: Deps, actor: str, event_ids: Iterable[str]) -> int:
    """`regenerate_summaries` for the erased events `event_ids` of `actor`."""
    erased = set(event_ids)
    if not erased:
        return 0
    scope = Scope(deps.tenant, actor)
    stale = [
        r
        for r in deps.store.records.list_records(scope, [Status.ACTIVE, Status.INVALID])
        if r.kind is Kind.SUMMARY and erased & set(r.source.event_ids)
    ]
    sessions: set[tuple[str, str]] = set()
    for summary in stale:
        deps.store.erasure.forget_record(deps.tenant, summary.id, deps.clock())
        parts = (summary.field or "").split(":")
        if len(parts) > 2 and summary.source.strategy:
            sessions.add((parts[1], summary.source.strategy))
    for name, strategy in sessions:
        events = deps.store.events.list_events(deps.tenant, actor, name)
        live = [e for e in events if e.text.strip() and e.id not in erased]
        if live:
            deps.store.jobs.requeue_job(deps.tenant, live[-1].id, strategy)
    return len(stale)
