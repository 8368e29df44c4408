"""Time in remem: aware UTC datetimes inside, ISO 8601 strings at the edges."""

from __future__ import annotations

from datetime import UTC, datetime

from remem.errors import InvalidInput


def utcnow() -> datetime:
    """The current time, aware, in UTC (the default clock)."""
    return datetime.now(UTC)


def parse_time(value: str | datetime) -> datetime:
    """Parse ISO 8601 (a trailing Z is accepted); naive times are taken as UTC."""
    if isinstance(value, datetime):
        t = value
    else:
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            t = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(
                f"malformed time {value!r}; use ISO 8601 such as 2026-03-01T09:30:00Z"
            ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC)


def to_db(t: datetime | None) -> str | None:
    """The sortable UTC string a store keeps for a time."""
    if t is None:
        return None
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
