"""`content_stems` keeps the stems of the texts it ranked (`remem.recall.fusion`), but
never a long text itself: an event may hold 100,000 characters, and 4,096 of them kept
would hold hundreds of megabytes (and the text of each, past any erasure)."""

from __future__ import annotations

import gc
import tracemalloc

from remem.recall.fusion import STEMS_KEPT_CHARS, content_stems
from remem.writes.checks import MAX_EVENT_CHARS


def _long_text(n: int) -> str:
    words = (f"w{n}x{i}" for i in range(MAX_EVENT_CHARS // 8))
    return " ".join(words)[:MAX_EVENT_CHARS]


def test_long_texts_ranked_are_not_kept_after_their_recall() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(20):  # each built, ranked, then dropped by the caller
            assert len(content_stems(_long_text(n))) > 1000
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # on main: about 20 x (100 KB of text + 12,500 stems) held by the cache
    assert kept < 1_000_000, f"{kept:,} bytes still held after 20 long texts"


def test_short_texts_are_kept_and_answer_the_same() -> None:
    text = "I keep the kayaks in the garage"
    first = content_stems(text)
    assert content_stems(text) is first  # kept: the same stems, not stemmed again
    assert first == {"keep", "kayak", "garag"}
    long = " ".join(["kayaks"] * (STEMS_KEPT_CHARS // 7 + 1))
    assert content_stems(long) == {"kayak"}  # stemmed alike, only not kept
