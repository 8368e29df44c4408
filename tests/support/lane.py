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
    """A HashEmbedder whose query embeddings wait at a gate (open unless closed) and are
    counted: how many are inside at once, and the most there ever were."""

    def __init__(self, hold: float = 0.0) -> None:
        super().__init__()
        self.hold = hold  # seconds each query embedding takes at least
        self.open = threading.Event()
        self.open.set()
        self.entered = threading.Semaphore(0)
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.entered.release()
        try:
            assert self.open.wait(30), "the test never opened the gate"
            time.sleep(self.hold)
            return self.embed(texts)
        finally:
            with self._lock:
                self.inside -= 1
