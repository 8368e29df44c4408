"""Fusing word and vector matches into one score per candidate.

A candidate's BM25 score is divided by the best BM25 score among the
candidates that may be returned (so the best word match that can appear
scores 1) and its cosine with the query is added. Records and raw events are
scored the same way, so one scale orders them, and the bonuses of
`remem.recall.query` add to it. On the five LoCoMo development conversations
this linear blend beats reciprocal-rank fusion of the same two lists
(evidence recall@10 0.759 against 0.740 for RRF with k = 10 and 0.731 with
k = 30, everything else equal): a rank forgets how much better the best
match is than the next.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container

from remem.store.base import Hit

# A candidate found only by its vector must be at least this similar to the
# query: below it, all-MiniLM-L6-v2 pairs are mostly unrelated and would only
# pad the packet up to k. Candidates that share words with the query are exempt.
MIN_VECTOR_ONLY_COSINE = 0.25


def without_weak_vectors(
    lexical: list[Hit], vector: list[tuple[str, float]], rejected: dict[str, str]
) -> list[tuple[str, float]]:
    """The vector hits worth keeping: weak ones are dropped unless they share words too."""
    words = {h.id for h in lexical}
    kept = []
    for rid, cosine in vector:
        if rid not in words and cosine < MIN_VECTOR_ONLY_COSINE:
            rejected[rid] = f"weak match (cosine {cosine:.2f})"
        else:
            kept.append((rid, cosine))
    return kept


def candidate_ids(lexical: list[Hit], vector: list[tuple[str, float]]) -> list[str]:
    """Candidate ids, word matches first, each once."""
    return list(dict.fromkeys([h.id for h in lexical] + [rid for rid, _ in vector]))


def fuse(
    lexical: list[Hit],
    vector: list[tuple[str, float]],
    returnable: Container[str],
    also: Container[str] = (),
) -> dict[str, float]:
    """Normalised BM25 plus cosine for each returnable id (0 for an id in neither list).

    BM25 is divided by the best score among returnable hits: a hit that cannot
    be returned would otherwise shrink every score of its list (so a superseded
    record, or the event it came from, would push down the current one). The
    ids in `also` are scored on that same scale without setting it (unless no
    returnable id matched a word), their word match capped at the best one's.
    """
    best = max((h.score for h in lexical if h.id in returnable), default=0.0)
    best = best or max((h.score for h in lexical if h.id in also), default=0.0)
    scores: dict[str, float] = defaultdict(float)
    for h in lexical:
        if h.id in returnable or h.id in also:
            scores[h.id] = max(scores[h.id], min(h.score / best, 1.0) if best > 0 else 0.0)
    for rid, cosine in vector:
        if rid in returnable or rid in also:
            scores[rid] += max(cosine, 0.0)
    return dict(scores)
