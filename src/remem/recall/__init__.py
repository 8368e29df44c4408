"""Recall: scope first, then words and vectors, fused, packed into a budget.

    scope (tenant, actor[, namespace]) ─► status / validity
        ─► BM25 over the scope's records + cosine over the scope's vectors
        ─► reciprocal-rank fusion (authority, then recency, break ties)
        ─► raw events of the thread log fill in, marked kind="event"
        ─► token budget ─► Packet, with conflicts and an optional explanation

Every step runs inside one scope: the store is asked for one subject's rows,
never for a global result that is filtered afterwards.
"""

from __future__ import annotations

from remem.recall.budget import estimate_tokens
from remem.recall.engine import RecallRequest, recall

__all__ = ["RecallRequest", "estimate_tokens", "recall"]
