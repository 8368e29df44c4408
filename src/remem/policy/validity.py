"""Validity: which records (and raw events) may be read at a given time.

Reads are bi-temporal. A record is *held* at (`known_at`, `valid_at`) when it
was known then - written at or before `known_at`, and not deleted or proposed
(an erased record is never held, whatever the time) - and valid then as far as
was known then: `valid_from <= valid_at < valid_until`, where a record closed
after `known_at` (superseded, invalidated) counts as open-ended, because the
closing that set its `valid_until` had not happened yet, and one closed by then
keeps the validity its closing gave it (superseded, it still says where the
user lived before; closed with no validity left, it was withdrawn).

So `as_of=T` (both axes at T) is what the agent believed at T; `valid_at=T`
alone is what is known now about T; `known_at=T` alone is what the agent
believed at T about now. Nothing written after T is known at T: a history
imported today (events with old times) has no answer as of a past time, only
for `valid_at` in the past.

A raw event is known from when remem received it (`Event.received_at`) and
valid from its own `time` on: it is held when received by `known_at` and said
by `valid_at`.

Now (neither axis given), recall is stricter: only active records valid now.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from remem.model import Event, Kind, Record, Sensitivity, Status

Closings = Mapping[str, datetime]  # record id -> when it was closed (its history says)

WRITTEN_AFTER = "written after known_at"
RECEIVED_AFTER = "received after known_at"
NOT_VALID = "not valid at valid_at"
SAID_AFTER = "said after valid_at"

_ACTIVE = Status.ACTIVE  # an enum's member read from its class is a Python call


def is_valid_at(record: Record, at: datetime) -> bool:
    """Whether the record's fact held at `at` (valid_from <= at < valid_until)."""
    if record.valid_from > at:
        return False
    return record.valid_until is None or at < record.valid_until


def not_held(
    record: Record, known_at: datetime, valid_at: datetime, closed: Closings | None = None
) -> str | None:
    """Why `record` was not known at `known_at` and valid at `valid_at` (see the module),
    or None when it was.

    `closed` gives when INVALID records were closed (superseded, invalidated, or
    written already closed as a late arrival); one missing from it was closed by
    `known_at`.
    """
    if record.status not in (Status.ACTIVE, Status.INVALID):
        return record.status.value
    if record.created_at > known_at:
        return WRITTEN_AFTER
    until = record.valid_until
    if record.status is Status.INVALID:
        shut = (closed or {}).get(record.id)
        if shut is not None and shut > known_at:
            until = None  # not closed yet then: its end was not known
        elif until is None:
            return "invalidated before known_at"  # withdrawn: no validity left
        elif record.valid_from <= valid_at and valid_at >= until:
            by = f" by {record.superseded_by}" if record.superseded_by else ""
            return f"superseded before known_at{by}"
    if record.valid_from <= valid_at and (until is None or valid_at < until):
        return None
    return NOT_VALID


def held(
    record: Record, known_at: datetime, valid_at: datetime, closed: Closings | None = None
) -> bool:
    """Whether `record` was known at `known_at` and valid at `valid_at` (see the module)."""
    return not_held(record, known_at, valid_at, closed) is None


def not_recallable(
    record: Record,
    now: datetime,
    known_at: datetime | None = None,
    valid_at: datetime | None = None,
    closed: Closings | None = None,
) -> str | None:
    """Why recall may not return `record`, or None when it may.

    Now (neither axis given): only active records valid now. Otherwise the
    record must be held at (`known_at`, `valid_at`), each defaulting to `now`.
    """
    if known_at is not None or valid_at is not None:
        return not_held(record, known_at or now, valid_at or now, closed)
    if record.status is not _ACTIVE:
        by = f" by {record.superseded_by}" if record.superseded_by else ""
        return f"{record.status.value}{by}"
    if record.valid_from > now:
        return "not yet valid"
    until = record.valid_until  # `is_valid_at`, once per candidate of every recall
    if until is not None and not now < until:
        return "expired (valid_until has passed)"
    return None


def is_recallable(
    record: Record,
    now: datetime,
    known_at: datetime | None = None,
    valid_at: datetime | None = None,
    closed: Closings | None = None,
) -> bool:
    """Whether recall may return the record (see `not_recallable`)."""
    return not_recallable(record, now, known_at, valid_at, closed) is None


def event_not_held(event: Event, known_at: datetime | None, valid_at: datetime) -> str | None:
    """Why a raw event was not known at `known_at` (None: now) and said by `valid_at`,
    or None when it was. An event whose arrival time is not known counts as known."""
    if known_at is not None and event.received_at is not None and event.received_at > known_at:
        return RECEIVED_AFTER
    if event.time > valid_at:
        return SAID_AFTER
    return None


SENSITIVITY_ORDER = {Sensitivity.NORMAL: 0, Sensitivity.PERSONAL: 1, Sensitivity.SENSITIVE: 2}


def within_sensitivity(record: Record, ceiling: Sensitivity | None) -> bool:
    """Whether a record may be used by a caller cleared up to `ceiling` (None: any)."""
    return ceiling is None or SENSITIVITY_ORDER[record.sensitivity] <= SENSITIVITY_ORDER[ceiling]


def expiry(
    valid_from: datetime,
    kind: Kind,
    sensitivity: Sensitivity,
    ttl: Mapping[str, timedelta],
) -> datetime | None:
    """When a new record stops being valid under the per-kind and per-sensitivity TTLs.

    `ttl` maps kind names ("episodic") and sensitivity names ("sensitive") to
    lifetimes; when both apply the shorter wins. None: it never expires.
    """
    lives = [ttl[k] for k in (kind.value, sensitivity.value) if k in ttl]
    return valid_from + min(lives) if lives else None
