"""Baselines over raw turns, run beside remem: plain BM25, plain dense, and their RRF.

Each indexes exactly the text remem stores for a turn (`Turn.as_text()`:
speaker, text, image caption) and hands back single turns, each costing what
the same text costs in a packet, so recall within a budget compares fairly.

- `BM25System`: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over lower-cased
  words without the function words remem's full-text search also drops; no
  stemming.
- `DenseSystem`: cosine between the question's and each turn's vector, from
  the same embedder remem uses.
- `RRFSystem`: reciprocal-rank fusion (k = 60) of the two rankings.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, Vectors, embed_queries
from remem.eval.metrics import Retrieved
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens
from remem.store.text import STOPWORDS

RRF_K = 60
FUSION_POOL = 100  # how deep each ranking goes into the fusion

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class Turn(Protocol):
    """A turn as the baselines see it (a LoCoMo `Turn`, a PrefEval `PTurn`)."""

    @property
    def dia_id(self) -> str: ...

    def as_text(self) -> str: ...


class Conversation(Protocol):
    """One actor's turns, which a baseline indexes and ranks."""

    @property
    def actor(self) -> str: ...

    @property
    def turns(self) -> Sequence[Turn]: ...


def tokens(text: str) -> list[str]:
    """Lower-cased words of a text without function words (all words if nothing else)."""
    found = _WORD.findall(text.lower())
    return [w for w in found if w not in STOPWORDS] or found


def turn_item(turn: Turn) -> Retrieved:
    """A raw turn as a ranked item: itself, at what its text costs in a packet."""
    return Retrieved((turn.dia_id,), estimate_tokens(turn.as_text()) + ITEM_OVERHEAD_TOKENS)


class BM25Index:
    """Okapi BM25 over a fixed list of texts."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(tokens(t)) for t in texts]
        lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.norm = k1 * (
            1 - b + b * lengths / max(1.0, float(lengths.mean() if len(lengths) else 1))
        )
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(self.docs):
            for word, tf in doc.items():
                self.postings.setdefault(word, []).append((i, tf))
        n = len(self.docs)
        self.idf = {
            w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self.postings.items()
        }

    def scores(self, query: str) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
        """The BM25 score of every text for `query` (0 where no word matches)."""
        out = np.zeros(len(self.docs), dtype=np.float64)
        for word in set(tokens(query)):
            idf = self.idf.get(word)
            if idf is None:
                continue
            for i, tf in self.postings[word]:
                out[i] += idf * tf * (self.k1 + 1) / (tf + self.norm[i])
        return out

    def rank(self, query: str, depth: int) -> list[int]:
        """Indexes of the best `depth` texts that match at least one word, best first."""
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[:depth]
        return [int(i) for i in order if s[i] > 0]


class BM25System:
    """Plain BM25 over a conversation's raw turns."""

    name = "bm25"

    def __init__(self) -> None:
        self._index: dict[str, BM25Index] = {}

    def ingest(self, conv: Conversation) -> float:
        start = time.perf_counter()
        self._index[conv.actor] = BM25Index([t.as_text() for t in conv.turns])
        return time.perf_counter() - start

    def ranking(self, conv: Conversation, question: str, depth: int) -> list[int]:
        return self._index[conv.actor].rank(question, depth)

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        return [turn_item(conv.turns[i]) for i in self.ranking(conv, question, depth)]


class TurnVectors:
    """Each conversation's turn vectors, embedded once and shared by the systems of a run.

    `get` returns the vectors and the seconds embedding them took when it was
    done, so every system that uses them reports that cost as its own.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._done: dict[str, tuple[Vectors, float]] = {}

    def get(self, conv: Conversation) -> tuple[Vectors, float]:
        if conv.actor not in self._done:
            start = time.perf_counter()
            vectors = self.embedder.embed([t.as_text() for t in conv.turns])
            self._done[conv.actor] = (vectors, time.perf_counter() - start)
        return self._done[conv.actor]

    def cosines(self, conv: Conversation, question: str) -> npt.NDArray[np.float32]:
        """Cosine of the question with every turn of the conversation, the question
        embedded as recall embeds its query (`embed_queries`): remem's own dense part."""
        query = embed_queries(self.embedder, [question])[0]
        cosines: npt.NDArray[np.float32] = self.get(conv)[0] @ query
        return cosines


class DenseSystem:
    """Plain dense retrieval over a conversation's raw turns (one vector per turn)."""

    name = "dense"

    def __init__(self, embedder: Embedder | TurnVectors) -> None:
        self.vectors = embedder if isinstance(embedder, TurnVectors) else TurnVectors(embedder)

    def ingest(self, conv: Conversation) -> float:
        return self.vectors.get(conv)[1]

    def ranking(self, conv: Conversation, question: str, depth: int) -> list[int]:
        cosines = self.vectors.cosines(conv, question)
        return [int(i) for i in np.argsort(-cosines, kind="stable")[:depth]]

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        return [turn_item(conv.turns[i]) for i in self.ranking(conv, question, depth)]


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: items ordered by the sum of 1 / (k + rank) over rankings."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda i: score[i], reverse=True)


class RRFSystem:
    """BM25 and dense over raw turns, fused by reciprocal rank."""

    name = "bm25+dense"

    def __init__(self, embedder: Embedder | TurnVectors) -> None:
        self.bm25 = BM25System()
        self.dense = DenseSystem(embedder)

    def ingest(self, conv: Conversation) -> float:
        return self.bm25.ingest(conv) + self.dense.ingest(conv)

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        pool = max(depth, FUSION_POOL)
        fused = rrf(
            [self.bm25.ranking(conv, question, pool), self.dense.ranking(conv, question, pool)]
        )
        return [turn_item(conv.turns[i]) for i in fused[:depth]]


def baselines(
    embedder: Embedder | TurnVectors | None,
) -> list[BM25System | DenseSystem | RRFSystem]:
    """The baselines a run includes: BM25 always; dense and RRF when there is an embedder.

    Dense and RRF share one embedding of the turns.
    """
    if embedder is None:
        return [BM25System()]
    vectors = embedder if isinstance(embedder, TurnVectors) else TurnVectors(embedder)
    return [BM25System(), DenseSystem(vectors), RRFSystem(vectors)]
