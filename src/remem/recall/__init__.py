"""Recall: scope first, then gather, rank and pack.

    query ─► the dates and speakers it names, out of its word query (query)
    gather: every store call, into one value (gather)
        ─► BM25 over the scope's records and events + cosine over their vectors
        ─► the records, their successors, the turns around each event
        ─► for a request, the records near its life domains (applies)
    rank: a pure function of what was gathered, the query and the time (rank)
        ─► status / validity ─► word evidence + cosine (fusion)
        ─► raw events on the same scale with their neighbouring turns (events)
        ─► bonuses for the named speaker and the named date
        ─► standing preferences that apply to a request, and why
    pack: the relevance floor (floor) ─► top k ─► token budget
        ─► a packet item for each kept candidate only (items)
        ─► Packet, with conflicts and an optional explanation

Every step runs inside one scope: the store is asked for one subject's rows,
never for a global result that is filtered afterwards.
"""

from __future__ import annotations

from remem.recall.budget import estimate_tokens
from remem.recall.engine import recall
from remem.recall.request import RecallAsk, RecallRequest

__all__ = ["RecallAsk", "RecallRequest", "estimate_tokens", "recall"]
