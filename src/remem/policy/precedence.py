"""Precedence: which record may replace which.

system of record > explicit current user statement > approved organisation or
project record > recent verified outcome > model-inferred candidate > old
summary. A newer record wins only at equal or higher authority; otherwise
both stay and recall surfaces the conflict.
"""

from __future__ import annotations

from datetime import datetime

from remem.model import Authority

RANK: dict[Authority, int] = {
    Authority.SYSTEM_OF_RECORD: 60,
    Authority.CONFIRMED: 50,
    Authority.APPROVED: 40,
    Authority.VERIFIED_OUTCOME: 30,
    Authority.INFERRED: 20,
    Authority.SUMMARY: 10,
}


def outranks_or_equals(new: Authority, old: Authority) -> bool:
    """Whether a record of authority `new` may supersede one of authority `old`."""
    return RANK[new] >= RANK[old]


def may_supersede(
    new_authority: Authority,
    new_time: datetime,
    old_authority: Authority,
    old_time: datetime,
) -> bool:
    """A newer statement at equal or higher authority supersedes an older one.

    Recency is the statements' own time (their source events), never the
    order they arrived in.
    """
    return new_time >= old_time and outranks_or_equals(new_authority, old_authority)
