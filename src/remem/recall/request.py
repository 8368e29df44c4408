"""What a recall is asked: whose memories, what about, how many, how large, and when.

Two values, one before and one after the checks:

    a face (keywords, an HTTP body, an MCP tool's arguments, CLI options, a form)
        ─► RecallAsk, as given ─► Memory.ask (the one checked entry point) ─► Packet
                                      └─► RecallRequest, checked and scoped ─► recall

`Recalls` writes `recall`'s keywords once for `Memory` and `Client`: each builds a
`RecallAsk` and hands it to its own `ask` (the library answers it, the `Client`
posts it). `RecallAsk` is a frozen dataclass, not a pydantic model: it is built in
the process by every face and checked by `Memory.ask` with the library's own
errors; the wire's pydantic models (`remem.service.schemas.RetrieveIn`, the MCP
tool) validate their fields first and build one.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from remem.model import Packet, Sensitivity
from remem.store.roles import Scope


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallAsk:
    """One recall as a face asks it, unchecked: `Memory.recall`'s keywords (documented
    there). `actor` None is the calling key's own actor, for a face to resolve."""

    actor: str | None
    query: str
    k: int = 10
    budget: int = 1000
    as_of: str | datetime | None = None
    explain: bool = False
    include_events: bool = True
    namespace: str | None = None
    max_sensitivity: str | Sensitivity | None = None
    pin: Sequence[str] | None = None
    known_at: str | datetime | None = None
    valid_at: str | datetime | None = None
    sources: Sequence[str] | str | None = None
    document_namespaces: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None


class Recalls:
    """`recall` with its keywords, written once for `Memory` and `Client`."""

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
        known_at: str | datetime | None = None,
        valid_at: str | datetime | None = None,
        sources: Sequence[str] | str | None = None,
        document_namespaces: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Packet:
        """The few memories of `actor` that matter for `query`, inside `budget` tokens.

        `sources` (default: memory only) may add "documents": the best chunks of the
        tenant's, the actor's and `document_namespaces`' documents follow the memories
        in `documents`, inside what is left of the same budget.

        `as_of` answers from what was known at that time and valid then (records
        written after it, and events received after it, are left out; one superseded
        since is still the current one then); `known_at` and `valid_at` set the two
        axes apart (each defaults to `as_of`, else now). See `remem.policy.validity`.

        `namespace` (under the actor's `/tenants/{tenant}/actors/{actor}/`) narrows the
        packet to the records of that namespace: no raw events (they lie in no record
        namespace) and no shared procedures. `metadata` keeps the records whose
        metadata has each of its keys with an equal value (no raw events).

        `pin` names fields (default: the configuration's `[recall] pin`) looked up
        exactly, as `fact` does, never by similarity: their values head the packet in
        `pinned`, flagged "pinned", and their tokens come out of the same `budget`
        before the ranked records are chosen; a pinned record is not repeated among
        them. A pinned field with no value is named in `notes`.

        First, up to `catch_up` of the actor's pending extraction jobs run (a worker's
        lease each); what is still pending is said in `notes` and `explain`.

        The keywords make one `RecallAsk`, answered by `ask`.
        """
        request = RecallAsk(
            actor=actor,
            query=query,
            k=k,
            budget=budget,
            as_of=as_of,
            explain=explain,
            include_events=include_events,
            namespace=namespace,
            max_sensitivity=max_sensitivity,
            pin=pin,
            known_at=known_at,
            valid_at=valid_at,
            sources=sources,
            document_namespaces=document_namespaces,
            metadata=metadata,
        )
        return self.ask(request)

    @abstractmethod
    def ask(self, request: RecallAsk) -> Packet:
        """The packet for one recall request (`Memory.ask`, or a `Client`'s POST)."""


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall: whose memories, what about, how many, how large, and when.

    `known_at` and `valid_at` are the two time axes (`remem.policy.validity`):
    what remem knew at `known_at` about what held at `valid_at`. None is now;
    `as_of=T` sets both to T. With neither, the recall reads the present.
    """

    scope: Scope
    query: str
    shared: tuple[Scope, ...] = ()  # further scopes whose records apply (e.g. procedures)
    k: int = 10
    budget: int = 1000
    known_at: datetime | None = None
    valid_at: datetime | None = None
    include_events: bool = True
    explain: bool = False
    max_sensitivity: Sensitivity | None = None

    @property
    def past(self) -> bool:
        """Whether either time axis is set (an as-of recall), not the present."""
        return self.known_at is not None or self.valid_at is not None

    def axes(self, now: datetime) -> tuple[datetime, datetime]:
        """(known at, valid at), each `now` when not set."""
        return self.known_at or now, self.valid_at or now
