"""Run systems over a LoCoMo-format dataset and collect the figures.

A `System` ingests one conversation at a time and answers a question with a
ranked list of `Retrieved` items. remem is one system (`RememSystem`, in one
of three modes); the baselines of `remem.eval.baselines` are others. Every
system sees the same conversations and questions on the same machine in the
same run, so their figures can be compared as ratios.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from remem.embed.base import Embedder
from remem.eval.answers import AnswerJudge
from remem.eval.locomo import Conversation, Dataset, event_rows
from remem.eval.metrics import (
    QuestionScore,
    Retrieved,
    answer_accuracy,
    by_category,
    latency,
    score_question,
)
from remem.eval.quality import Made, Said, check_records, per_100
from remem.memory.memory import Memory
from remem.model import Status
from remem.recall.budget import estimate_tokens, pack

MODES = ("events", "records", "both")
TENANT = "locomo"
MAX_BUDGET = 1_000_000


class System(Protocol):
    """Something that can be asked about a conversation after reading it."""

    @property
    def name(self) -> str: ...

    def ingest(self, conv: Conversation) -> float:
        """Read (index, extract ...) one whole conversation; return the seconds it took.

        A system sharing work with another (two remem modes on one database)
        returns the seconds that work took when it was done.
        """
        ...

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        """The best `depth` items for a question, best first, from that conversation only."""
        ...


# A progress hook: called with a label and a total, returns the function to advance it.
Progress = Callable[[str, int], Callable[[int], None]]


def _no_progress(_label: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


class RememBackend:
    """One remem database for a run; each conversation is one actor of one tenant.

    Every turn is imported as an event (both speakers as role "user", so the
    offline extractor reads both), then, when `process` is set, extraction and
    consolidation run over them before any question is asked.
    """

    def __init__(
        self, path: Path, embedder: Embedder | None, *, process: bool, roles: str = "user"
    ) -> None:
        self.memory = Memory.open(path, tenant=TENANT, embedder=embedder)
        self.process = process
        self.roles = roles
        self.ingest_seconds: dict[str, float] = {}
        self.processed: dict[str, dict[str, int]] = {}

    def ingest(self, conv: Conversation) -> float:
        if conv.actor in self.ingest_seconds:
            return self.ingest_seconds[conv.actor]  # another mode already read it
        start = time.perf_counter()
        self.memory.import_events(event_rows(conv, self.roles))
        if self.process:
            self.processed[conv.actor] = self.memory.process().as_dict()
        self.ingest_seconds[conv.actor] = time.perf_counter() - start
        return self.ingest_seconds[conv.actor]

    def close(self) -> None:
        self.memory.close()


def made_records(memory: Memory, actor: str) -> list[Made]:
    """The records extraction made for an actor, every status but deleted, as checks see them."""
    return [
        Made(r.id, r.text, r.source.event_ids)
        for r in memory.records(actor=actor, all=True, limit=1_000_000)
        if r.status is not Status.DELETED
    ]


def write_quality(backend: RememBackend, data: Dataset) -> dict[str, Any]:
    """What extraction wrote for a LoCoMo dataset: records per 100 turns, speakers named,
    records with a word in neither their turns nor the common list (`remem.eval.quality`).
    """
    made: list[Made] = []
    turns: dict[str, Said] = {}
    for conv in data.conversations:
        made.extend(made_records(backend.memory, conv.actor))
        for t in conv.turns:
            turns[conv.event_id(t.dia_id)] = Said(t.as_text(), t.speaker)
    figures = check_records(made, turns)
    return {"records_per_100_turns": per_100(len(made), data.n_turns), **figures}


class RememSystem:
    """remem's recall as a system under test, in one of `MODES`.

    events:  raw events only (no extraction ran), ranked by remem's recall;
    records: extracted records only, mapped back to turns by their source events;
    both:    the normal packet, records and the raw events they do not cover.
    """

    def __init__(self, backend: RememBackend, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.backend = backend
        self.mode = mode

    @property
    def name(self) -> str:
        return f"remem:{self.mode}"

    def ingest(self, conv: Conversation) -> float:
        return self.backend.ingest(conv)

    def search(self, conv: Conversation, question: str, depth: int) -> list[Retrieved]:
        packet = self.backend.memory.recall(
            actor=conv.actor,
            query=question,
            k=depth,
            budget=MAX_BUDGET,
            include_events=self.mode != "records",
        )
        out = []
        for item in packet.records:
            ids = item.source.get("event_ids") or ()
            turns = tuple(d for e in ids if (d := conv.dia_id(str(e))) is not None)
            when = item.source_date.date().isoformat()
            out.append(Retrieved(turns, item.tokens, f"({when}) {item.text}"))
        return out


PACKET_K = 10  # the k packets are measured at, that of the headline recall@10


def packet_summary(sizes: Sequence[tuple[int, int]]) -> dict[str, float | int]:
    """Questions, mean items and mean tokens of some packets, given as (items, tokens)."""
    n = len(sizes)
    return {
        "questions": n,
        "mean_items": round(sum(s[0] for s in sizes) / n, 2) if n else 0.0,
        "mean_tokens": round(sum(s[1] for s in sizes) / n, 1) if n else 0.0,
    }


def packets(
    backend: RememBackend,
    data: Dataset,
    *,
    budget: int,
    limit_questions: int | None = None,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """remem's packet sizes at k=`PACKET_K`: each question asked of its own conversation's
    actor (on topic) and of the next conversation's actor (off topic: nothing there is
    about it, so a packet should be nearly empty). Run after the systems have ingested."""
    convs = data.conversations
    on: list[tuple[int, int]] = []
    off: list[tuple[int, int]] = []
    asked = [q for c in convs for q in c.questions[:limit_questions]]
    tick = progress("remem: packets on and off topic", 2 * len(asked) if len(convs) > 1 else 0)
    for i, conv in enumerate(convs):
        others = [convs[(i + 1) % len(convs)].actor] if len(convs) > 1 else []
        for q in conv.questions[:limit_questions]:
            for actor, sizes in ((conv.actor, on), *((o, off) for o in others)):
                packet = backend.memory.recall(actor=actor, query=q.text, k=PACKET_K, budget=budget)
                sizes.append((len(packet.records), packet.tokens))
                tick(1)
    return {"k": PACKET_K, "on_topic": packet_summary(on), "off_topic": packet_summary(off)}


def conversation_tokens(conv: Conversation) -> int:
    """What the whole conversation costs in a prompt, estimated as recall estimates."""
    return sum(estimate_tokens(t.as_text()) for t in conv.turns)


def search_depth(ks: Sequence[int], budget: int) -> int:
    """How many items to ask for: enough for the largest k and to fill the budget."""
    return max(max(ks), min(1000, math.ceil(budget / 10)))


def run(
    data: Dataset,
    systems: Sequence[System],
    *,
    ks: Sequence[int] = (5, 10, 20),
    budget: int = 1000,
    limit_questions: int | None = None,
    progress: Progress = _no_progress,
    judge: AnswerJudge | None = None,
) -> dict[str, Any]:
    """Every system over every conversation; the figures as one JSON-ready document.

    `limit_questions` keeps the first N questions of each conversation. With a
    `judge`, remem's systems also answer every question from the packet that
    fits the budget, and the judged answers are reported per category.
    """
    ks = sorted(set(ks))
    depth = search_depth(ks, budget)
    results: dict[str, Any] = {}
    n_questions = sum(len(c.questions[:limit_questions]) for c in data.conversations)
    for system in systems:
        scores: list[QuestionScore] = []
        latencies: list[float] = []
        graded: list[tuple[int, bool]] = []
        answering = judge is not None and system.name.startswith("remem")
        ingest = 0.0
        unscored = 0
        tick_ingest = progress(f"{system.name}: ingest", data.n_turns)
        tick_ask = progress(f"{system.name}: questions", n_questions)
        for conv in data.conversations:
            ingest += system.ingest(conv)
            tick_ingest(len(conv.turns))
            total_tokens = conversation_tokens(conv)
            for q in conv.questions[:limit_questions]:
                start = time.perf_counter()
                ranked = system.search(conv, q.text, depth)
                ms = (time.perf_counter() - start) * 1000
                latencies.append(ms)
                tick_ask(1)
                if answering and judge is not None:
                    kept, _, _ = pack([(it, it.tokens) for it in ranked], budget)
                    memories = [r.text for r in kept]
                    answer = judge.answer(q.text, memories)
                    graded.append((q.category, judge.grade(q.text, q.answer, answer, q.category)))
                if not q.evidence:
                    unscored += 1
                    continue
                scores.append(
                    score_question(
                        ranked,
                        q.evidence,
                        category=q.category,
                        ks=ks,
                        budget=budget,
                        conversation_tokens=total_tokens,
                        latency_ms=ms,
                    )
                )
        results[system.name] = {
            "categories": by_category(scores, ks),
            "ingest_seconds": round(ingest, 3),
            "turns_per_second": round(data.n_turns / ingest, 1) if ingest > 0 else None,
            "latency": latency(latencies),
            "questions_unscored": unscored,
        }
        if answering:
            results[system.name]["answers"] = answer_accuracy(graded)
    return {
        "dataset": {
            "conversations": len(data.conversations),
            "turns": data.n_turns,
            "questions": n_questions,
            "conversation_tokens": [conversation_tokens(c) for c in data.conversations],
            "skipped": data.skipped.as_dict(),
        },
        "ks": list(ks),
        "budget": budget,
        "systems": results,
    }
