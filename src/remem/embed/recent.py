"""The single texts an embedder embedded last, with their vectors (`RecentTexts`).

An agent repeating a query, or a recall and its explain call, embed the same text
twice; the local embedders keep the last `QUERY_CACHE` single texts they embedded and
hand back the same vector (the forward pass is deterministic). A single text is a
query or what one write stored (a record remembered, an event added), so an erasure
must not leave it here: `drop_recent_texts` empties every `RecentTexts` of the process
(`remem.lifecycle.erasure`), and each empties itself every `LINGER_SECONDS` at its next
use (what another process erased, `remem.linger`).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

from remem.forksafe import ForkSafeLock
from remem.linger import Sweep

QUERY_CACHE = 256
"""Single texts kept: an agent repeating a query pays the 10 ms of its embedding once."""

F32 = npt.NDArray[np.float32]

_ALL: weakref.WeakSet[RecentTexts] = weakref.WeakSet()
_ALL_LOCK = ForkSafeLock()


class RecentTexts:
    """The last `QUERY_CACHE` single texts embedded and their vectors, least recently
    used dropped first; thread-safe. `hits` counts the texts answered from it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, F32] = OrderedDict()
        self._sweep = Sweep()
        self.hits = 0
        with _ALL_LOCK:
            _ALL.add(self)

    def get(self, text: str) -> F32 | None:
        """A copy of the vector kept for `text`, or None."""
        with self._lock:
            if self._sweep.due():
                self._kept.clear()
            hit = self._kept.get(text)
            if hit is None:
                return None
            self._kept.move_to_end(text)
            self.hits += 1
            return hit.copy()

    def put(self, text: str, vector: F32) -> None:
        """Keep a copy of `text`'s vector (the least recently used goes past the cap)."""
        with self._lock:
            self._kept[text] = vector.copy()
            self._kept.move_to_end(text)
            if len(self._kept) > QUERY_CACHE:
                self._kept.popitem(last=False)

    def holds(self, text: str) -> bool:
        """Whether `text` is kept (not counted as a hit, not moved)."""
        with self._lock:
            return text in self._kept

    def clear(self) -> None:
        """Forget every text kept."""
        with self._lock:
            self._kept.clear()


def drop_recent_texts() -> None:
    """Empty every embedder's `RecentTexts` in this process (after an erasure)."""
    with _ALL_LOCK:
        kept = list(_ALL)
    for recent in kept:
        recent.clear()
