"""`remem bench --llm-fake`: what the LLM pipeline costs per event, without a model.

A scripted OpenAI-compatible server on loopback (`remem.testing.llm_server`)
answers every prompt by rule (`remem.testing.responders.memory_model`), so
the run measures remem itself: how many model calls and tokens an event
costs with the four built-in strategies and model consolidation, and the
pipeline's own time per event (batching, validation, consolidation,
embedding, writes) once the time spent inside model calls is taken out.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from remem.config.config import ConfigFile, build
from remem.embed.base import Embedder, Vectors, default_embedder
from remem.eval.bench.synthetic import synthetic_facts
from remem.memory.memory import Memory

ASSISTANT = ["Noted.", "Got it, thanks!", "Anything else I can help with?", "Sounds good."]


def conversation(n: int, actors: int = 5, turns_per_session: int = 10) -> list[dict[str, Any]]:
    """`n` events: sessions of user, assistant and (every fifth turn) tool events."""
    facts = synthetic_facts(max(n, 50), seed=11)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(n):
        session = i // turns_per_session
        turn = i % turns_per_session
        if turn % 5 == 4:
            role, text = "tool", f"book_table #{i}: confirmed, ref R{i:05d}"
        elif turn % 2 == 0:
            role, text = "user", facts[i % len(facts)]
        else:
            role, text = "assistant", ASSISTANT[i % len(ASSISTANT)]
        rows.append(
            {
                "actor": f"llm-{session % actors}",
                "session": f"s{session}",
                "role": role,
                "text": text,
                "time": base + timedelta(minutes=i),
                "event_id": f"llm-ev-{i}",
            }
        )
    return rows


class _Timed:
    """An embedder that keeps the time spent embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


def run_llm_bench(
    *, events: int, embedder: Embedder | None = None, progress: bool = True
) -> dict[str, Any]:
    """Ingest and process `events` events through the LLM strategies; return the figures."""
    from remem.testing.llm_server import ScriptedLLM
    from remem.testing.responders import memory_model

    def say(message: str) -> None:
        if progress:
            print(message, file=sys.stderr)

    rows = conversation(events)
    with ScriptedLLM(responder=memory_model) as llm, tempfile.TemporaryDirectory() as tmp:
        config = build(
            ConfigFile.model_validate({"llm": {"base_url": llm.base_url, "model": "fake"}}),
            "bench",
            Path(tmp),
        )
        inner = embedder or default_embedder()
        emb = _Timed(inner) if inner is not None else None
        with Memory.open(Path(tmp) / "llm.db", config=config, embedder=emb) as mem:
            say(f"embedder: {emb.name if emb else 'none'}; strategies: {config.strategy_names}")
            import openai  # noqa: F401  (a one-time import, not per-event work)

            if emb is not None:
                emb.embed(["warm up"])
                emb.seconds = 0.0
            mem.add_events(rows)
            t0 = time.perf_counter()
            result = mem.process()
            wall = time.perf_counter() - t0
            usage = mem.store.model_calls.llm_usage(mem.tenant)
    say(f"processed {events} events in {wall:.2f}s: {result.as_dict()}")
    inside_calls = float(usage["seconds"])  # client-side time inside model calls
    embedding = emb.seconds if emb is not None else 0.0
    figures: dict[str, Any] = {
        "events": events,
        "strategies": list(config.strategy_names),
        "embedder": emb.name if emb else None,
        "llm_calls": int(usage["calls"]),
        "llm_calls_per_event": round(usage["calls"] / events, 3),
        "tokens_per_event": round(
            (usage["prompt_tokens"] + usage["completion_tokens"]) / events, 1
        ),
        "prompt_tokens_per_event": round(usage["prompt_tokens"] / events, 1),
        "records_written": result.records_added + result.records_updated + result.late,
        "failed": result.failed,
        "wall_s": round(wall, 2),
        "model_server_s": round(llm.server_seconds, 3),
        "inside_model_calls_s": round(inside_calls, 2),
        "overhead_ms_per_event": round((wall - inside_calls) / events * 1000, 2),
        "embedding_ms_per_event": round(embedding / events * 1000, 2),
        "overhead_without_embedding_ms_per_event": round(
            (wall - inside_calls - embedding) / events * 1000, 2
        ),
        "overhead_with_http_ms_per_event": round((wall - llm.server_seconds) / events * 1000, 2),
    }
    return figures
