"""A query embedder that counts the recalls inside it at once (`Gate`), for the tests of
the recall lanes of `remem serve` and `remem mcp`."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from remem.embed import HashEmbedder


class Gate(HashEmbedder):
    """A HashEmbedder whose query embeddings (or, with `records`, its embeddings of
    records, as a write makes them) wait at a gate (open unless closed) and are
    counted: how many are inside at once, and the most there ever were."""

    def __init__(self, hold: float = 0.0, *, records: bool = False) -> None:
        super().__init__()
        self.hold = hold  # seconds each gated embedding takes at least
        self.records = records
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Semaphore(0)
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.records:
            return super().embed(texts)  # a recall's query is not held
        return self._through(texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._through(texts) if self.records else super().embed(texts)

    def _through(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.entered.release()
        try:
            assert self.open.wait(30), "the test never opened the gate"
            time.sleep(self.hold)
            return super().embed(texts)
        finally:
            with self._lock:
                self.inside -= 1
