"""Validity: which records may reach a packet at a given time."""

from __future__ import annotations

from datetime import datetime

from remem.model import Record, Status


def is_valid_at(record: Record, at: datetime) -> bool:
    """Whether the record's fact held at `at` (valid_from <= at < valid_until)."""
    if record.valid_from > at:
        return False
    return record.valid_until is None or at < record.valid_until


def is_recallable(record: Record, now: datetime, as_of: datetime | None = None) -> bool:
    """Whether recall may return the record.

    Now: only active records valid now. As of a past time: records whose
    fact held then, including those superseded since (never deleted or
    proposed ones).
    """
    if as_of is None:
        return record.status is Status.ACTIVE and is_valid_at(record, now)
    return record.status in (Status.ACTIVE, Status.INVALID) and is_valid_at(record, as_of)
