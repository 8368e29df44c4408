"""Prototypes of proposed recall changes, measured beside remem without touching its core.

`ProposedEvents` ranks a conversation's raw turns the way remem's event
recall could, adding one change at a time so each gain is measured alone:

1. lexical: BM25 from SQLite FTS5 with the tokenizer remem's `events_fts`
   uses (`porter unicode61`) and remem's OR-query of content words
   (`remem.store.text.words`) - today's event search, without its
   20-event pool;
2. `vectors`: every turn embedded once when it is ingested (what embedding
   events at processing time would store), fused with the lexical scores by
   score, not rank: lexical / best lexical of the query + cosine. Rank fusion
   (RRF) of the same two lists does worse on LoCoMo, because the dense list
   is the weaker one and RRF weighs both alike;
3. `neighbours`: a turn also earns `NEIGHBOUR_WEIGHT` x the better score of
   the turns just before and after it in the same session - an answer often
   shares few words with a question that matches the turn asking for it;
4. `speaker`: when a question names exactly one participant, that person's
   turns score `SPEAKER_BOOST` more (x 1.2).

The weights are round numbers; on the five development conversations a
leave-one-conversation-out choice among nearby values held within a point.

    python -m remem.eval.prototypes PATH [--json] [--limit-questions N]
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, default_embedder
from remem.eval.baselines import TurnVectors, baselines, turn_item
from remem.eval.locomo import Conversation, load
from remem.eval.metrics import Retrieved
from remem.eval.runner import RememBackend, RememSystem, System, run
from remem.store.text import words

NEIGHBOUR_WEIGHT = 0.5
SPEAKER_BOOST = 0.2
VECTOR_WEIGHT = 1.0

F64 = npt.NDArray[np.float64]


class PorterIndex:
    """BM25 scores from an in-memory FTS5 table tokenised as remem's events are."""

    def __init__(self, texts: list[str]) -> None:
        self.n = len(texts)
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5 (text, tokenize = 'porter unicode61')")
        self.db.executemany(
            "INSERT INTO t (rowid, text) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
        )

    def scores(self, query: str) -> F64:
        """BM25 of every text (0 where no word matches); higher is better."""
        out = np.zeros(self.n, dtype=np.float64)
        terms = words(query)
        if not terms:
            return out
        match = " OR ".join(f'"{w}"' for w in terms)
        for rowid, rank in self.db.execute(
            "SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (match,)
        ):
            out[int(rowid) - 1] = -float(rank)
        return out


def with_neighbours(scores: F64, sessions: list[int], weight: float) -> F64:
    """Each score plus `weight` x the best score of its neighbours in the same session."""
    prev = np.zeros_like(scores)
    nxt = np.zeros_like(scores)
    same = np.array([a == b for a, b in itertools.pairwise(sessions)], dtype=bool)
    prev[1:] = np.where(same, scores[:-1], 0.0)
    nxt[:-1] = np.where(same, scores[1:], 0.0)
    return scores + weight * np.maximum(prev, nxt)


def named_speaker(conv: Conversation, question: str) -> str | None:
    """The one participant a question names by name, or None."""
    named = [s for s in conv.speakers if re.search(rf"\b{re.escape(s)}\b", question, re.IGNORECASE)]
    return named[0] if len(named) == 1 else None


class ProposedEvents:
    """Raw-turn recall with the proposed changes switched on one by one."""

    def __init__(
        self,
        vectors: TurnVectors | None,
        *,
        neighbours: bool = False,
        speaker: bool = False,
    ) -> None:
        self.vectors = vectors
        self.neighbours = neighbours
        self.speaker = speaker
        self._lexical: dict[str, PorterIndex] = {}

    @property
    def name(self) -> str:
        parts = ["proto:lex"]
        if self.vectors is not None:
            parts.append("vec")
        if self.neighbours:
            parts.append("nb")
        if self.speaker:
            parts.append("spk")
        return "+".join(parts)

    def ingest(self, conv: Conversation) -> float:
        start = time.perf_counter()
        self._lexical[conv.actor] = PorterIndex([t.as_text() for t in conv.turns])
        took = time.perf_counter() - start
        if self.vectors is not None:
            took += self.vectors.get(conv)[1]
        return took

    def scores(self, conv: Conversation, question: str) -> F64:
        lexical = self._lexical[conv.actor].scores(question)
        best = float(lexical.max()) if lexical.size else 0.0
        scores = lexical / best if best > 0 else lexical
        if self.vectors is not None:
            scores = scores + VECTOR_WEIGHT * self.vectors.cosines(conv, question)
        if self.neighbours:
            scores = with_neighbours(scores, [t.session for t in conv.turns], NEIGHBOUR_WEIGHT)
        if self.speaker and (who := named_speaker(conv, question)) is not None:
            boost = np.array([t.speaker == who for t in conv.turns], dtype=np.float64)
            scores = scores * (1.0 + SPEAKER_BOOST * boost)
        return scores

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        scores = self.scores(conv, question)
        order = np.argsort(-scores, kind="stable")[:depth]
        return [turn_item(conv.turns[int(i)]) for i in order if scores[i] > 0]


def prototype_systems(embedder: Embedder | TurnVectors | None) -> list[ProposedEvents]:
    """The ablation ladder: lexical, + vectors, + neighbours, + speaker."""
    if embedder is None:
        return [ProposedEvents(None), ProposedEvents(None, neighbours=True)]
    vectors = embedder if isinstance(embedder, TurnVectors) else TurnVectors(embedder)
    return [
        ProposedEvents(None),
        ProposedEvents(vectors),
        ProposedEvents(vectors, neighbours=True),
        ProposedEvents(vectors, neighbours=True, speaker=True),
    ]


def run_all(path: Path, limit_questions: int | None = None) -> dict[str, Any]:
    """remem in its three modes, the baselines and the prototypes, in one run."""
    data = load(path)
    embedder = default_embedder()
    vectors = TurnVectors(embedder) if embedder is not None else None
    with tempfile.TemporaryDirectory(prefix="remem-eval-") as tmp:
        raw = RememBackend(Path(tmp) / "events.db", embedder, process=False)
        processed = RememBackend(Path(tmp) / "records.db", embedder, process=True)
        systems: list[System] = [
            RememSystem(raw, "events"),
            RememSystem(processed, "records"),
            RememSystem(processed, "both"),
            *baselines(vectors),
            *prototype_systems(vectors),
        ]
        try:
            result = run(data, systems, limit_questions=limit_questions)
        finally:
            raw.close()
            processed.close()
    result["config"] = {"file": str(path), "embedder": embedder.name if embedder else None}
    return result


def main(argv: list[str]) -> int:
    """`python -m remem.eval.prototypes PATH [--json] [--limit-questions N] [--png FILE]`."""
    args = list(argv)
    as_json = "--json" in args
    limit = png = None
    if "--limit-questions" in args:
        limit = int(args[args.index("--limit-questions") + 1])
    if "--png" in args:
        png = Path(args[args.index("--png") + 1])
    result = run_all(Path(args[0]), limit)
    if png is not None:
        from remem.eval.report import write_chart

        note = write_chart(result, png)
        result["notes"] = [note] if note else []
    if as_json:
        print(json.dumps(result))
    else:
        from rich.console import Console

        from remem.eval.report import print_report

        print_report(result, Console())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
