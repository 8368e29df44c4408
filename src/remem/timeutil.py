"""Time in remem: aware UTC datetimes inside, ISO 8601 strings at the edges.

Every time a client sends goes through `parse_time` (library, CLI, HTTP, MCP,
import lines), and every time a store keeps as text goes through `to_db`, so
one fixed-width, sortable form holds for every year from 1 to 9999.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

from remem.errors import InvalidInput

if TYPE_CHECKING:
    from pydantic import BeforeValidator, ValidationInfo

EXAMPLE = "2026-03-01T09:30:00Z"


def utcnow() -> datetime:
    """The current time, aware, in UTC (the default clock)."""
    return datetime.now(UTC)


def parse_time(value: object, what: str = "time") -> datetime:
    """An ISO 8601 string (a trailing Z is accepted) or datetime as an aware UTC datetime.

    Naive times are taken as UTC. Anything else (a number, a list, a bool), a
    malformed string, or a time whose UTC form falls outside years 1-9999 is
    refused with `InvalidInput` naming `what` and saying what is wrong.
    """
    if isinstance(value, datetime):
        t = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            t = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(
                f"{what} {_quoted(value)} is not an ISO 8601 time; use one such as {EXAMPLE}"
            ) from None
    else:
        raise InvalidInput(
            f"{what} must be an ISO 8601 string such as {EXAMPLE}; got {_shown(value)}"
        )
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    try:
        return t.astimezone(UTC)
    except (OverflowError, ValueError):
        edge = "before year 1" if t.year == 1 else "after year 9999"
        raise InvalidInput(f"{what} is out of range (it falls {edge} in UTC)") from None


def _quoted(text: str) -> str:
    """A refused time as its error names it: by its length only, never quoted (text
    written like a time may still be a secret: a card number's digits and spaces)."""
    return f"(a text of {len(text)} characters, not shown)"


def to_db(t: datetime | None) -> str | None:
    """The sortable, fixed-width UTC string a store keeps for a time (years 0001-9999)."""
    if t is None:
        return None
    # isoformat pads the year to four digits; strftime("%Y") does not on every platform
    return t.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "+00:00"


def from_db(text: str) -> datetime:
    """A time a store kept as text (`to_db`'s form).

    Also reads the unpadded years (`1-01-01T...`) that remem wrote for times
    before year 1000 until to_db padded them, so such a database still opens.
    """
    year, sep, rest = text.partition("-")
    if sep and year.isdigit() and len(year) < 4:
        text = f"{year.zfill(4)}-{rest}"
    return parse_time(text)


def check_time(value: object, info: ValidationInfo) -> object:
    """A pydantic validator for a time field of a request body, tool call or batch item:
    None, or what `parse_time` accepts, so a number, a list or an out-of-range time is
    refused with a message that names the field and says what is wrong."""
    if value is None:
        return None
    try:
        parse_time(value, info.field_name or "time")
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None
    return value.isoformat() if isinstance(value, datetime) else value


if TYPE_CHECKING:
    TimeText = Annotated[str | None, BeforeValidator(check_time)]
    """An optional ISO 8601 time at an edge (pydantic), checked by `check_time`."""
else:

    def __getattr__(name: str) -> object:
        # `TimeText` is made when an edge's model first names it: a process that only
        # parses and stores times (a recall) does not load pydantic for it
        if name != "TimeText":
            raise AttributeError(f"module 'remem.timeutil' has no attribute {name!r}")
        from pydantic import BeforeValidator

        made = globals()["TimeText"] = Annotated[str | None, BeforeValidator(check_time)]
        return made


def _shown(value: object) -> str:
    return f"a value of type {type(value).__name__} (not shown)"
