"""The tiny evaluation files the eval tests read, and a conversation of one."""

from __future__ import annotations

from remem.eval.locomo import Conversation, Dataset
from tests.support import DATA

LOCOMO_TINY = DATA / "locomo-tiny.json"
PREFEVAL_TINY = DATA / "prefeval-tiny.json"


def conv(data: Dataset, sample_id: str) -> Conversation:
    """The conversation of `data` named `sample_id`."""
    return next(c for c in data.conversations if c.sample_id == sample_id)
