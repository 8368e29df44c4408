"""Consolidation: what a new candidate does to the records it could touch.

Pure rules (`remem.consolidate.rules`: `decide`, `with_verdict`), pure planning
(`remem.consolidate.plan`: a decision becomes rows), and the batch step
(`remem.consolidate.step`: candidates against the store, one `Write`).
"""

from __future__ import annotations

from remem.consolidate.plan import Planned, plan, plan_approval
from remem.consolidate.rules import (
    DUPLICATE_COSINE,
    DUPLICATE_JACCARD,
    Decision,
    decide,
    normalise,
    same_value,
    text_similarity,
    with_verdict,
)

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_JACCARD",
    "Decision",
    "Planned",
    "decide",
    "normalise",
    "plan",
    "plan_approval",
    "same_value",
    "text_similarity",
    "with_verdict",
]
