"""A model's event numbers are checked, never trusted: an item naming an event it was not
shown is dropped (and counted), never attached to another event.

Against a real OpenAI-compatible server on loopback (`ScriptedLLM`) that answers
each strategy with one good item and one naming an event outside the numbered
new events; on a SQLite file and on PostgreSQL (`tests.support.pg`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed.base import HashEmbedder
from remem.model import Kind
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.cli import ok

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def _hostile(request: dict[str, Any]) -> Reply:
    """Each strategy's answer: one item that names a listed event, one that does not."""
    system = str(request["messages"][0]["content"])
    if "durable facts" in system:  # one numbered event: the user's turn
        return Reply.json({"facts": [
            {"text": "Ana lives in Lisbon", "attribute": "home city", "value": "Lisbon",
             "event": 1},
            {"text": "Ana works at Acme", "attribute": "employer", "value": "Acme",
             "event": 99},
            {"text": "Ana has a cat", "event": 0},
        ]})  # fmt: skip
    if "running summary" in system:  # two numbered events: the user's turn and the tool's
        return Reply.json({"topics": [
            {"topic": "travel", "summary": "A flight to Berlin was booked.", "key_events": [2]},
            {"topic": "work", "summary": "Ana works at Acme.", "key_events": [1, 7]},
        ]})  # fmt: skip
    if "attempted" in system:  # one numbered event: the tool's
        return Reply.json({"episodes": [
            {"attempt": "book a flight to Berlin", "actions": ["book_flight"],
             "outcome": "confirmed", "verified": True, "events": [1]},
            {"attempt": "book a hotel", "outcome": "paid", "verified": True, "events": [0]},
        ]})  # fmt: skip
    return memory_model(request)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.responder = _hostile
        yield server


def _config_data(llm: ScriptedLLM) -> dict[str, Any]:
    return {
        "llm": {"base_url": llm.base_url, "model": "fake-model", "timeout": 5},
        "strategies": {"semantic": {}, "summary": {}, "episodic": {}},
    }


def _events(mem: Memory) -> None:
    mem.add_event(actor="ana", session="s1", role="user", event_id="e0", time=T0,
                  text="I live in Lisbon. Please book me a flight to Berlin.")  # fmt: skip
    mem.add_event(actor="ana", session="s1", role="tool", event_id="e1",
                  time=T0 + timedelta(minutes=1),
                  text="book_flight LIS-BER: confirmed, ref ABC123")  # fmt: skip


def test_items_naming_unlisted_events_are_dropped_and_counted(db: str, llm: ScriptedLLM) -> None:
    config = build(ConfigFile.model_validate(_config_data(llm)), "test", Path.cwd())
    with Memory.open(db, embedder=HashEmbedder(), config=config) as mem:
        _events(mem)
        result = mem.process()
        assert result.failed == 0
        recs = mem.records(actor="ana", all=True)
        texts = " | ".join(r.text for r in recs)
        for dropped in ("Acme", "cat", "hotel"):
            assert dropped not in texts  # attributed to nothing
        (fact,) = [r for r in recs if r.kind is Kind.SEMANTIC]
        assert fact.value == "Lisbon" and fact.source.event_ids == ("e0",)
        (summary,) = [r for r in recs if r.kind is Kind.SUMMARY]
        assert "(travel)" in summary.text and json.loads(summary.value or "")["key_events"] == [
            "e1"
        ]
        (episode,) = [r for r in recs if r.kind is Kind.EPISODIC]
        assert "Berlin" in episode.text and episode.source.event_ids == ("e1",)
        assert result.dropped_references == 4  # two facts, a summary topic, an episode
        usage = mem.store.model_calls.llm_usage(mem.tenant)
        assert usage["calls_with_dropped_items"] == 3 and usage["errors"] == 0


def test_the_command_line_shows_the_count_and_the_call_log_notes_it(
    tmp_path: Path, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "remem.toml"
    config.write_text(
        f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "fake-model"\n[strategies.semantic]\n',
        encoding="utf-8",
    )
    db = tmp_path / "cli.db"
    run = ("--config", str(config))
    ok(capsys, db, *run, "event", "add", "--actor", "ana", "--session", "s1", "--role", "user",
       "--text", "I live in Lisbon.")  # fmt: skip
    processed = ok(capsys, db, *run, "process")
    assert processed["dropped_references"] == 2 and processed["records_added"] == 1
    listed = ok(capsys, db, *run, "jobs", "list")
    assert listed["llm_usage"]["calls_with_dropped_items"] == 1
    assert listed["llm_usage"]["errors"] == 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT strategy, ok, error FROM llm_calls").fetchall()
    assert rows == [
        ("semantic", 1, "dropped 2 item(s) naming events not listed (0, 99; the prompt listed 1-1)")
    ]
