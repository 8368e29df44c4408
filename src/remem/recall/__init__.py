"""Recall: scope first, then words and vectors, fused, packed into a budget.

    query ─► the dates and speakers it names, out of its word query (query)
    scope (tenant, actor[, namespace]) ─► status / validity
        ─► BM25 over the scope's records + cosine over the scope's vectors
        ─► normalised BM25 plus cosine (fusion); authority, then recency, break ties
        ─► raw events of the thread log on the same scale, marked kind="event",
           with their neighbouring turns (events)
        ─► bonuses for the named speaker and the named date
        ─► token budget ─► Packet, with conflicts and an optional explanation

Every step runs inside one scope: the store is asked for one subject's rows,
never for a global result that is filtered afterwards.
"""

from __future__ import annotations

from remem.recall.budget import estimate_tokens
from remem.recall.engine import recall
from remem.recall.request import RecallRequest

__all__ = ["RecallRequest", "estimate_tokens", "recall"]
