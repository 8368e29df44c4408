"""One user turn through the offline extractor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from remem.extract import extract_offline
from remem.model import Candidate, Event, Role

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def ev(text: str, role: Role = Role.USER, event_id: str = "ev-1", minutes: float = 10) -> Event:
    return Event(event_id, "acme", "u42", "s1", role, text, T + timedelta(minutes=minutes))


def extract(text: str, context: tuple[Event, ...] = ()) -> list[Candidate]:
    return extract_offline(ev(text), context)
