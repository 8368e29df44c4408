"""What a read of stored facts is asked: one field, a profile, or a list of records.

As `remem.recall.request` does for recall, each read is one value before the checks:

    a face (keywords, an HTTP query, an MCP tool's arguments)
        ─► FactAsk / ProfileAsk / RecordsAsk, as given
        ─► Memory.ask_fact / ask_profile / ask_records (checked there) ─► the answer

`Reads` writes the keywords of `fact`, `profile` and `records` once for `Memory` and
`Client`: each builds the request and hands it to its own `ask_*` (the library
answers it, the `Client` sends it). The requests are frozen dataclasses, unchecked:
`Memory`'s `ask_*` check them with the library's errors (`remem.memory.reads`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from remem.model import Record, Sensitivity

if TYPE_CHECKING:
    from remem.facts.lookup import Fact, Profile


@dataclass(frozen=True, slots=True, kw_only=True)
class FactAsk:
    """One exact lookup as a face asks it, unchecked: `fact`'s keywords. `actor` None
    is the calling key's own actor, for a face to resolve."""

    actor: str | None
    field: str
    as_of: str | datetime | None = None
    known_at: str | datetime | None = None
    valid_at: str | datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileAsk:
    """One profile as a face asks it, unchecked: `profile`'s keywords."""

    actor: str | None
    as_of: str | datetime | None = None
    max_sensitivity: str | Sensitivity | None = None
    budget: int | None = None
    known_at: str | datetime | None = None
    valid_at: str | datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordsAsk:
    """One list of records as a face asks it, unchecked: `records`' keywords."""

    actor: str | None
    all: bool = False
    limit: int = 10_000
    as_of: str | datetime | None = None
    field: str | None = None
    namespace: str | None = None
    metadata: Mapping[str, Any] | None = None


class Reads:
    """`fact`, `profile` and `records` with their keywords, written once for `Memory`
    and `Client`."""

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
        candidate with provenance) or `not_found`; see `remem.facts.lookup`.

        `field` may be any synonym of a vocabulary field (`remem.policy.fields`).
        `as_of` answers what was known and valid then; `known_at` and `valid_at` set
        the two axes apart (each defaults to `as_of`, else now).
        """
        request = FactAsk(
            actor=actor, field=field, as_of=as_of, known_at=known_at, valid_at=valid_at
        )
        return self.ask_fact(request)

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
        request = ProfileAsk(
            actor=actor,
            as_of=as_of,
            max_sensitivity=max_sensitivity,
            budget=budget,
            known_at=known_at,
            valid_at=valid_at,
        )
        return self.ask_profile(request)

    def records(
        self,
        *,
        actor: str,
        all: bool = False,
        limit: int = 10_000,
        as_of: str | datetime | None = None,
        field: str | None = None,
        namespace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Record]:
        """An actor's records, newest first: active ones, or every status with `all`.

        With `as_of`, the records that were known and valid then (see `remem.facts.lookup`),
        as they are stored now; `all` is then ignored. `field` keeps those about one
        field (by its index; active and invalid ones with `all`), `namespace` (under
        the actor's `/tenants/{tenant}/actors/{actor}/`) those filed under it, `metadata`
        those whose metadata has each of its keys with an equal value (as `recall`).
        """
        request = RecordsAsk(
            actor=actor,
            all=all,
            limit=limit,
            as_of=as_of,
            field=field,
            namespace=namespace,
            metadata=metadata,
        )
        return self.ask_records(request)

    @abstractmethod
    def ask_fact(self, request: FactAsk) -> Fact:
        """The answer to one exact lookup (`Memory.ask_fact`, or a `Client`'s GET)."""

    @abstractmethod
    def ask_profile(self, request: ProfileAsk) -> Profile:
        """One actor's profile (`Memory.ask_profile`, or a `Client`'s GET)."""

    @abstractmethod
    def ask_records(self, request: RecordsAsk) -> list[Record]:
        """One actor's records (`Memory.ask_records`, or a `Client`'s GETs)."""
