"""Validity: which records may reach a packet at a given time."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from remem.model import Kind, Record, Sensitivity, Status


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
