"""`Memory`: the library's front door, one instance per database and tenant.

    with Memory.open("memory.db") as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="I'm vegetarian")
        mem.process()
        packet = mem.recall(actor="alice", query="what does she eat?")

The CLI, the HTTP service and the MCP server are thin layers over these
methods, and the methods are thin over the flows beneath them, each of which
takes the memory's `Deps` (`remem.memory.deps`): events and records are written by
`remem.writes`, read by `remem.memory.reads`, erased and exported by
`remem.lifecycle` (`remem.memory.lifecycle` holds those methods); extraction runs
in `remem.pipeline.worker` and `remem.pipeline`. The flows a call needs are imported when
it is first made, so a process that only recalls loads no write path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from remem.config.config import Config, load_config
from remem.documents.flows import recall_sources
from remem.embed.base import DEFAULT_EMBEDDER, DefaultEmbedder, Embedder, checked_embedder
from remem.embed.choose import chosen, resolve_embedder
from remem.errors import InvalidInput, NotFound
from remem.facts.request import FactAsk, ProfileAsk, Reads, RecordsAsk
from remem.ids import IdSource, new_id
from remem.memory import backfill, reads
from remem.memory.catch_up import CATCH_UP_JOBS, catch_up, checked
from remem.memory.deps import Clock, Deps
from remem.memory.documents import DocumentMethods
from remem.memory.embedder import BoundEmbedder
from remem.memory.jobs import JobMethods
from remem.memory.lifecycle import LifecycleMethods
from remem.model import (
    Event,
    HistoryEntry,
    Kind,
    Packet,
    Record,
    Status,
)
from remem.policy.scope import SHARED_ACTOR, Principal, check_name, named, operator
from remem.recall.request import RecallAsk, Recalls
from remem.store.open import default_db_path as default_db_path  # backend choice, re-exported
from remem.store.open import is_server_url as is_server_url
from remem.store.open import open_store as open_store
from remem.store.roles import Asked, EventKey, Scope, Store
from remem.telemetry import Telemetry
from remem.telemetry.hooks import observed, observed_as
from remem.timeutil import utcnow
from remem.writes.checks import MAX_EVENT_CHARS, MAX_RECORD_CHARS, check_ttl, count
from remem.writes.request import ImportAsk, RememberAsk, Writes

if TYPE_CHECKING:  # the write, extraction and lookup flows load when first used
    from remem.facts.lookup import Fact, Profile
    from remem.llm.client import ChatModel
    from remem.pipeline.step import Pipeline
    from remem.writes.events import ImportResult

__all__ = [
    "DEFAULT_EMBEDDER",
    "MAX_EVENT_CHARS",
    "MAX_RECORD_CHARS",
    "Memory",
    "default_db_path",
    "is_server_url",
    "open_store",
]


class Memory(Recalls, Reads, Writes, DocumentMethods, JobMethods, LifecycleMethods):
    """Long-term memory on one store, for one tenant. Thread-safe for its methods."""

    def __init__(
        self,
        store: Store,
        *,
        tenant: str = "default",
        embedder: Embedder | DefaultEmbedder | str | os.PathLike[str] | None = DEFAULT_EMBEDDER,
        clock: Clock = utcnow,
        ids: IdSource = new_id,
        ttl: Mapping[str, timedelta] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        chat: ChatModel | None = None,
        max_clock_skew: timedelta | None = None,
        tracer_provider: Any = None,
        telemetry: Telemetry | None = None,
        catch_up: int = CATCH_UP_JOBS,
    ) -> None:
        if isinstance(store, str | os.PathLike):
            raise InvalidInput(
                f"Memory() takes an open store, not the path {os.fspath(store)!r}; "
                "open a file or URL with Memory.open(path)"
            )
        self.store = store
        self.tenant = check_name("tenant", tenant)
        for name, value in (("clock", clock), ("ids", ids)):
            if not callable(value):
                raise InvalidInput(f"{name} must be callable, not {type(value).__name__}")
        self.config = config if isinstance(config, Config) else load_config(config)
        # a name, folder or URL, or the default marker: what `[embed]` configures
        self._embedding = BoundEmbedder(
            store, self.tenant, chosen(embedder, self.config.embed, self.config.retry)
        )
        # one made here (a name, folder, URL or [embed]) is closed with this memory
        self._owns_embedder = isinstance(embedder, str | os.PathLike | DefaultEmbedder)
        self._chat = chat
        # what every flow beneath the facade works with (`remem.memory.deps`)
        self.deps = Deps(
            store=store,
            tenant=self.tenant,
            clock=clock,
            ids=ids,
            embedder=lambda: self.embedder,
            searching=self._embedding.searching,
            config=self.config,
            ttl=check_ttl(ttl or {}),
            telemetry=Telemetry.given(telemetry, tracer_provider),
        )
        self._pipeline: Pipeline | None = None
        self._late = backfill.LateVectors()  # records and events waiting for vectors
        self.catch_up = checked(catch_up)  # jobs a recall runs first (`remem.memory.catch_up`)
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
        embedder: Embedder | DefaultEmbedder | str | os.PathLike[str] | None = DEFAULT_EMBEDDER,
        clock: Clock = utcnow,
        ids: IdSource = new_id,
        ttl: Mapping[str, timedelta] | None = None,
        config: Config | str | os.PathLike[str] | None = None,
        chat: ChatModel | None = None,
        max_clock_skew: timedelta | None = None,
        tracer_provider: Any = None,
        telemetry: Telemetry | None = None,
        catch_up: int = CATCH_UP_JOBS,
    ) -> Memory:
        """Open (creating if needed) the database at `target`: a path or `sqlite:///path`.

        With no target: `$REMEM_DB`, else remem.db in the user data directory.
        `ttl` maps kinds ("episodic") and sensitivities ("sensitive") to the
        lifetime of new records of that kind or sensitivity. `config` is a
        `Config` or the path of a TOML file (default: `$REMEM_CONFIG`, else
        the offline extractor only); `chat` replaces the configured model door.
        `max_clock_skew` is how far ahead of `clock` an event may be dated
        (default: the configuration's `[events] max_clock_skew_seconds`, 1 hour).
        `tracer_provider` (an OpenTelemetry `TracerProvider`) turns spans on; without
        one, `$REMEM_OTEL=1` uses the global provider. `telemetry` gives the whole
        `remem.telemetry.Telemetry` instead (spans, metrics, content capture).
        `catch_up`: how many of its actor's pending extraction jobs a recall runs first
        (0: none, when a worker drains the queue); see `remem.memory.catch_up`.
        `embedder`: an Embedder, None (lexical only), or a name, folder or URL
        (`remem.embed.choose`); by default the configuration's `[embed]`, else the
        installed all-MiniLM-L6-v2.
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
            "telemetry": Telemetry.given(telemetry, tracer_provider),  # checked before opening
            "catch_up": checked(catch_up),
        }
        if isinstance(embedder, str | os.PathLike):  # a name, folder or URL: resolved once
            options["embedder"] = resolve_embedder(embedder)
        else:
            checked_embedder(embedder)  # before a file is made for nothing
        store = open_store(target, clock=clock)
        try:
            memory = cls(store, **options)
        except BaseException:
            store.close()
            raise
        memory._owns_embedder = memory._owns_embedder or options["embedder"] is not embedder
        return memory

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database, and the connections to any language model."""
        self.close_models()
        self.store.close()

    def close_models(self) -> None:
        """Close the connections to language models, and to an embeddings server this
        memory made from a name, URL or `[embed]` (one given as an object is the
        caller's to close); a shared store stays open."""
        if self._pipeline is not None:
            self._pipeline.close()
        if self._owns_embedder:
            self._embedding.close()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use, loaded and checked against the store's vectors on first
        use (`remem.memory.embedder`: `EmbedderChanged` when they are another model's);
        None means lexical only. While a reindex to its model is pending, it writes and
        recall is lexical only; once another process made the index another model's, it
        is None (`remem.memory.embedder.BoundEmbedder`)."""
        return self._embedding.writing()

    # -- events: `add_event` and `import_events` are `Writes`' --------------------

    @observed_as("add_event")
    def _add_event(self, row: Mapping[str, Any]) -> str:
        """`add_event`'s row (`remem.writes.request.Writes`), checked and appended."""
        from remem.writes import events as event_log

        event = event_log.event(self.deps, row, self.max_clock_skew)
        event_log.add(self.deps, [event])
        return event.id

    @observed
    def add_events(self, rows: Iterable[Mapping[str, Any]]) -> list[bool]:
        """Append many events in one transaction; per event, whether it was new.

        Every row is validated before any is written, so a bad row stores nothing.
        """
        from remem.writes import events as event_log

        events = [event_log.event(self.deps, r, self.max_clock_skew) for r in rows]
        return event_log.add(self.deps, events)

    def ask_import(self, request: ImportAsk) -> ImportResult:
        """The entry point of `import_events` (`remem.writes.request`): its arguments make
        one `ImportAsk`, checked and written batch by batch by
        `remem.writes.events.import_rows`."""
        from remem.writes import events as event_log

        return event_log.import_rows(
            self.deps, request.rows, self.max_clock_skew, request.batch, request.progress,
            request.lines,
        )  # fmt: skip

    def events(self, *, actor: str, session: str | None = None, limit: int = 1000) -> list[Event]:
        """One actor's events (optionally one session), in the order they happened."""
        check_name("actor", actor)
        return self.store.events.list_events(self.tenant, actor, session, count("limit", limit))

    def events_page(
        self, *, actor: str, session: str | None = None, after: EventKey | None = None,
        limit: int = 100,
    ) -> tuple[list[Event], EventKey | None]:  # fmt: skip
        """Up to `limit` of `events` after `after` (the key the page before returned; None:
        the first), and the next page's key (None after the last); read by key."""
        check_name("actor", actor)
        return self.store.events.events_page(
            self.tenant, actor, session, after, count("limit", limit)
        )

    # -- extraction: `process`, `jobs`, `retry_jobs` and `pipeline` are `JobMethods` ----

    # -- the explicit write path: `remember` is `Writes`' -----------------------------

    @observed_as("remember")
    def ask_remember(self, request: RememberAsk) -> Record:
        """The checked entry point of `remember` (`remem.writes.request`): its keywords,
        the HTTP routes, the MCP tool and the CLI build a `RememberAsk`. Its `request_id`
        is a server's (a `Client`'s retry): InvalidInput here, where `write_records`
        gives a create an idempotent id."""
        if request.request_id is not None:
            raise InvalidInput(
                "request_id makes a server's write idempotent (Client.remember); in the "
                "library, give it to a create of write_records([{'op': 'create', "
                "'request_id': ..., ...}])"
            )
        from remem.writes import records as writes

        return writes.remember(self.deps, request)

    @observed
    def write_records(
        self, items: Iterable[Mapping[str, Any]], *, asked: Asked | None = None
    ) -> list[dict[str, Any]]:
        """Self-managed strategies: create, update and delete records in one batch.

        The whole batch is validated first; each item then goes through the same
        write path as `remember`, `update` and `forget`, and an item's
        `request_id` makes it idempotent. A delete's deletion job names who `asked`
        (as `forget` does), with the item's `reason` if it has one. See
        `remem.writes.batch`.
        """
        from remem.writes.batch import write_records

        return write_records(self.deps, items, asked=asked)

    @observed
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
        from remem.writes import records as writes

        return writes.update(self.deps, record_id, text=text, valid_until=valid_until, by=by)

    # -- reading ---------------------------------------------------------------------

    @observed_as("recall")
    def ask(self, request: RecallAsk, who: Principal | None = None) -> Packet:
        """The one checked entry point of recall: `recall`'s keywords, the HTTP route, the
        MCP tool, the CLI and the console each build a `RecallAsk` and call this (see
        `remem.recall.request`). `request.actor` must be named (a face resolves its key's
        own); `who` (default: the operator) is whose documents a recall over "documents"
        may read. First the catch-up of `recall`, then the checked recall; the reads of
        both share one read transaction where the store has them (`Search.reading`: a
        write, such as a job the catch-up runs, ends it first)."""
        actor = check_name("actor", request.actor)
        with self.deps.store.search.reading(self.tenant):
            reads.recall_ahead(self.deps, request, self._embedding.checks())
            backlog = catch_up(self.deps, lambda: self.pipeline, actor, self.catch_up)
            late = self._late.before_recall(self.deps, fill=self.catch_up > 0)  # (backfill)
            who = operator(self.tenant) if who is None else who
            packet = recall_sources(
                self.deps, who, request, lambda: reads.recall_packet(self.deps, request)
            )
            packet = backlog.noted(packet, actor)
            return backfill.noted(packet, self.deps, actor) if late else packet

    # -- exact facts and records: `fact`, `profile` and `records` are `Reads`' ----------

    def ask_fact(self, request: FactAsk) -> Fact:
        """The checked entry point of `fact`: its keywords, the HTTP route and the MCP tool
        each build a `FactAsk` and call this (`remem.facts.request`)."""
        return reads.fact(self.deps, request)

    def ask_profile(self, request: ProfileAsk) -> Profile:
        """The checked entry point of `profile` (a `ProfileAsk`, as `ask_fact`)."""
        return reads.actor_profile(self.deps, request)

    def ask_records(self, request: RecordsAsk) -> list[Record]:
        """The checked entry point of `records` (a `RecordsAsk`, as `ask_fact`)."""
        return reads.records(self.deps, request)

    def get(self, record_id: str) -> Record:
        """One record of this tenant; NotFound when there is none."""
        from remem.writes import records as writes

        return writes.get(self.deps, record_id)

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every change of a record, oldest first (content erased if it was forgotten)."""
        entries = self.store.records.history(self.tenant, record_id)
        if not entries:
            raise NotFound(f"no record {named(record_id)} in tenant {self.tenant!r}")
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
        from remem.writes import records as writes

        return writes.propose_procedure(
            self.deps, text=text, name=name, actor=actor, proposed_by=proposed_by
        )

    def procedures(self, *, actor: str | None = None, all: bool = False) -> list[Record]:
        """The tenant's shared procedures (or one actor's): approved, or every status."""
        subject = SHARED_ACTOR if actor is None else check_name("actor", actor)
        statuses = None if all else [Status.ACTIVE]
        recs = self.store.records.list_records(Scope(self.tenant, subject), statuses)
        return [r for r in recs if r.kind is Kind.PROCEDURAL]

    def approve(self, record_id: str, *, reviewer: str) -> Record:
        """Approve a proposed procedure: it becomes active, superseding its previous version.

        A proposal flagged as carrying instructions aimed at the assistant is
        untrusted text and is never made a procedure: reject it instead.
        """
        from remem.writes import records as writes

        return writes.approve(self.deps, record_id, reviewer=reviewer)

    def reject(self, record_id: str, *, reviewer: str, reason: str = "") -> Record:
        """Reject a proposed procedure; it is kept, inactive, with the reviewer's reason."""
        from remem.writes import records as writes

        return writes.reject(self.deps, record_id, reviewer=reviewer, reason=reason)
