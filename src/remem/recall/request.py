"""What a recall is asked: whose memories, what about, how many, how large, and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from remem.model import Sensitivity
from remem.store.roles import Scope


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
