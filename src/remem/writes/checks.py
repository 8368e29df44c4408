"""The input checks every write path shares, written once.

A statement (an event's text, a record's, a procedure's, a correction) is a
non-empty string within its limit that passes `check_text`; every other string
a write stores passes `check_text` too. Times a caller may leave out, a
sensitivity by name and the lifetimes of new records are read here as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from remem.errors import InvalidInput
from remem.model import Kind, Sensitivity
from remem.policy.dataclasses import shown
from remem.policy.text import check_text
from remem.timeutil import parse_time

MAX_EVENT_CHARS = 100_000
MAX_RECORD_CHARS = 4_000
MAX_VALUE_CHARS = MAX_RECORD_CHARS
"""A field's value ('Porto', or an application's JSON item) is at most as long as a record."""


MAX_COUNT = 1_000_000_000
"""The most a limit or batch size may ask for: within every backend's integer."""


def count(what: str, value: object) -> int:
    """`value` if it is a whole number from 1 to `MAX_COUNT`; else InvalidInput naming
    `what`. For the library's limits and batch sizes, which reach the store as SQL
    parameters: -1 read there as 'no limit', 2.5 as a driver error, 10**30 as an
    OverflowError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        got = shown(value)
        raise InvalidInput(f"{what} must be a whole number from 1 to {MAX_COUNT}; got {got}")
    return value


def optional_count(what: str, value: object) -> int | None:
    """`count`, with None (no limit) allowed."""
    return None if value is None else count(what, value)


def statement(what: str, text: object, limit: int = MAX_RECORD_CHARS) -> str:
    """`text` if it is a non-empty string of at most `limit` characters that passes
    `check_text`; else InvalidInput naming `what`. Returned as given (not folded)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{what} must be a non-empty string")
    if len(text) > limit:
        raise InvalidInput(f"{what} is {len(text)} characters; the limit is {limit}")
    check_text(what, text)
    return text


def fact_value(field: str | None, value: object) -> str | None:
    """`value` as a field's value: None, or a non-blank string of at most
    `MAX_VALUE_CHARS` characters that passes `check_text`, given only with a field.
    InvalidInput otherwise: an empty value would be found by `fact get` as the
    field's answer."""
    if value is None:
        return None
    if field is None:
        raise InvalidInput("a value needs a field (what the value is of, e.g. 'home city')")
    if not isinstance(value, str):
        raise InvalidInput(f"value must be a string; got {type(value).__name__}")
    if (problem := _value_problem(value)) is not None:
        raise InvalidInput(problem)
    check_text("value", value)
    return value


def valid_value(value: str | None) -> str | None:
    """`fact_value`'s shape check for the surfaces' pydantic models: ValueError, as
    pydantic validators raise, for a blank or over-long value (None stays None)."""
    if value is not None and (problem := _value_problem(value)) is not None:
        raise ValueError(problem)
    return value


def _value_problem(value: str) -> str | None:
    if not value.strip():
        return "a field's value must be a non-empty string; leave it out instead"
    if len(value) > MAX_VALUE_CHARS:
        return f"a field's value is {len(value)} characters; the limit is {MAX_VALUE_CHARS}"
    return None


STRATEGY_MAX = 100  # characters of a strategy's name (`remember`, a batch's `WriteItem`)


def check_record_id(value: object) -> str:
    """A record id a caller named, as text; InvalidInput for anything else (a list or a
    number reached the database, which refused it as its own error)."""
    if not isinstance(value, str):
        raise InvalidInput(f"record_id must be a record's id (text); got {shown(value)}")
    return value


def check_strings(**named: str | None) -> None:
    """Every string a write stores passes `check_text` (None: not given)."""
    for what, value in named.items():
        if value is not None:
            check_text(what.replace("_", " "), value)


def optional_time(value: object, what: str) -> datetime | None:
    """A time a caller may leave out (None or ""), else validated by `parse_time`."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return parse_time(value, what)


def sensitivity(value: str | Sensitivity | None) -> Sensitivity | None:
    """A sensitivity by name (None: not given)."""
    if value is None:
        return None
    try:
        return Sensitivity(value)
    except ValueError:
        names = ", ".join(s.value for s in Sensitivity)
        raise InvalidInput(f"sensitivity must be one of {names}; got {shown(value)}") from None


MAX_TTL = timedelta(days=1000 * 365)  # a record's end must stay a time (before year 10000)


def check_ttl(ttl: Mapping[str, timedelta]) -> dict[str, timedelta]:
    """Lifetimes of new records by kind or sensitivity name, each positive and at most
    `MAX_TTL` (a longer one made every write of that kind fail: its end was no time)."""
    known = {k.value for k in Kind} | {s.value for s in Sensitivity}
    for key, life in ttl.items():
        if key not in known:
            raise InvalidInput(f"ttl key {key!r} is neither a kind nor a sensitivity")
        if not isinstance(life, timedelta) or life <= timedelta(0):
            raise InvalidInput(f"ttl for {key!r} must be a positive timedelta")
        if life > MAX_TTL:
            raise InvalidInput(
                f"ttl for {key!r} is at most 1000 years; leave {key!r} out of ttl for "
                "records that never expire"
            )
    return dict(ttl)


def span(t: timedelta) -> str:
    """A duration in words, rounded: '3 days', '2 hours', '5 minutes', '0 seconds'."""
    seconds = int(t.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
