"""What a rule of the offline extractor finds in one clause (`Fact`)."""

from __future__ import annotations

from dataclasses import dataclass

from remem.model import Kind, Sensitivity

__all__ = ["Fact"]


@dataclass(frozen=True, slots=True)
class Fact:
    """What a rule found in a clause: a statement, and where it fits, the field and value."""

    text: str
    kind: Kind
    field: str | None = None
    value: str | None = None
    sensitivity: Sensitivity = Sensitivity.NORMAL
    change: bool = False  # the statement itself reports a change ("moved", "increased")
