"""Retrieval metrics over evidence turns: pure functions of rankings, no I/O.

A system answers a question with a ranked list of `Retrieved` items, each
standing for one or more turns (a raw turn stands for itself; a record for
the events it was extracted from) and costing some tokens. Per question:

- evidence recall@k: the share of the question's evidence turns that some
  item of the top k stands for;
- all-evidence hit@k: 1 when every evidence turn is in the top k, else 0;
- budget recall: the same share for the items that fit in a token budget,
  packed greedily in rank order exactly as recall packs a packet
  (`remem.recall.budget.pack`);
- compression: the budget packet's tokens over the whole conversation's.

Questions without a usable evidence turn are counted but not scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from remem.eval.locomo import CATEGORIES, SCORED
from remem.recall.budget import pack


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One ranked item: the turns (dia_ids) it stands for and what it costs."""

    turns: tuple[str, ...]
    tokens: int
    text: str = ""  # what a reader of the packet sees (answer quality reads it)


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """One question's figures for one system."""

    category: int
    recall: dict[int, float]  # k -> evidence recall@k
    hit: dict[int, float]  # k -> 1.0 when all evidence is in the top k
    budget_recall: float
    budget_hit: float
    budget_tokens: int
    compression: float
    latency_ms: float


def covered(items: Sequence[Retrieved]) -> set[str]:
    """The turns some item of `items` stands for."""
    return {t for it in items for t in it.turns}


def score_question(
    ranked: Sequence[Retrieved],
    evidence: Sequence[str],
    *,
    category: int,
    ks: Sequence[int],
    budget: int,
    conversation_tokens: int,
    latency_ms: float = 0.0,
) -> QuestionScore:
    """Score one ranking against a non-empty set of evidence turns."""
    gold = set(evidence)
    if not gold:
        raise ValueError("a question without evidence cannot be scored")
    recall: dict[int, float] = {}
    hit: dict[int, float] = {}
    for k in ks:
        found = len(gold & covered(ranked[:k]))
        recall[k] = found / len(gold)
        hit[k] = float(found == len(gold))
    kept, _, used = pack([(it, it.tokens) for it in ranked], budget)
    found = len(gold & covered(kept))
    return QuestionScore(
        category=category,
        recall=recall,
        hit=hit,
        budget_recall=found / len(gold),
        budget_hit=float(found == len(gold)),
        budget_tokens=used,
        compression=used / max(1, conversation_tokens),
        latency_ms=latency_ms,
    )


def summarise(scores: Sequence[QuestionScore], ks: Sequence[int]) -> dict[str, float | int]:
    """Mean figures of some questions (an empty list gives only `questions: 0`)."""
    out: dict[str, float | int] = {"questions": len(scores)}
    if not scores:
        return out
    for k in ks:
        out[f"recall@{k}"] = _mean(s.recall[k] for s in scores)
    for k in ks:
        out[f"hit@{k}"] = _mean(s.hit[k] for s in scores)
    out["budget_recall"] = _mean(s.budget_recall for s in scores)
    out["budget_hit"] = _mean(s.budget_hit for s in scores)
    out["budget_tokens"] = _mean(s.budget_tokens for s in scores)
    out["compression"] = _mean(s.compression for s in scores)
    return out


def by_category(
    scores: Sequence[QuestionScore], ks: Sequence[int]
) -> dict[str, dict[str, float | int]]:
    """Figures per category (keys "1".."5"), "overall" over categories 1-4."""
    out: dict[str, dict[str, float | int]] = {}
    for cat in sorted({s.category for s in scores} | set(SCORED)):
        out[str(cat)] = summarise([s for s in scores if s.category == cat], ks)
    out["overall"] = summarise([s for s in scores if s.category in SCORED], ks)
    return out


def answer_accuracy(graded: Sequence[tuple[int, bool]]) -> dict[str, dict[str, float | int]]:
    """Judged answers per category and over 1-4: questions, correct, accuracy."""

    def one(marks: list[bool]) -> dict[str, float | int]:
        return {
            "questions": len(marks),
            "correct": sum(marks),
            "accuracy": round(sum(marks) / len(marks), 4) if marks else 0.0,
        }

    out = {
        str(c): one([ok for cat, ok in graded if cat == c]) for c in sorted({c for c, _ in graded})
    }
    out["overall"] = one([ok for cat, ok in graded if cat in SCORED])
    return out


def latency(values_ms: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean of some latencies in milliseconds."""
    if not values_ms:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
    arr = np.asarray(values_ms, dtype=np.float64)
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), 2),
        "p95_ms": round(float(np.percentile(arr, 95)), 2),
        "mean_ms": round(float(arr.mean()), 2),
    }


def category_name(key: str) -> str:
    """ "1" -> "multi-hop"; "overall" -> "overall (1-4)"."""
    if key == "overall":
        return "overall (1-4)"
    return CATEGORIES.get(int(key), f"category {key}") if key.isdigit() else key


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return round(sum(vals) / len(vals), 4) if vals else 0.0
