"""Token budgets: how much of the context window a packet may take."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

# A packed item also carries its id, kind and date; count them too.
ITEM_OVERHEAD_TOKENS = 8

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """Tokens a text costs, estimated as one per four characters (at least one).

    Close to what BPE tokenisers give for English prose; no tokenizer is
    loaded, so recall stays cheap.
    """
    return max(1, math.ceil(len(text) / 4))


def pack(items: Sequence[tuple[T, int]], budget: int) -> tuple[list[T], list[T], int]:
    """Greedily keep items in order while they fit; return (kept, dropped, tokens).

    An item that does not fit is dropped and smaller ones after it may still
    be kept, so a long record never crowds out every short one.
    """
    kept: list[T] = []
    dropped: list[T] = []
    used = 0
    for item, cost in items:
        if used + cost <= budget:
            kept.append(item)
            used += cost
        else:
            dropped.append(item)
    return kept, dropped, used
