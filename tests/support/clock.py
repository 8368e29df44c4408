"""A clock the test moves by hand, and the times the tests write events at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


class Ticking(Clock):
    """A clock the test moves by hand that is also a microsecond later at each reading, as
    a real one is (two readings in one call differ)."""

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now


def at(days: float = 0, hours: float = 0) -> str:
    """An ISO time `days` after T0, for event times."""
    return (T0 + timedelta(days=days, hours=hours)).isoformat()
