"""What a recall is asked: whose memories, what about, how many, how large."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from remem.model import Sensitivity
from remem.store.base import Scope


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall: whose memories, what about, how many, how large."""

    scope: Scope
    query: str
    shared: tuple[Scope, ...] = ()  # further scopes whose records apply (e.g. procedures)
    k: int = 10
    budget: int = 1000
    as_of: datetime | None = None
    include_events: bool = True
    explain: bool = False
    max_sensitivity: Sensitivity | None = None
