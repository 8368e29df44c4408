"""Thread summaries: lossy indexes with their range, summariser, unresolved items and
key events; running per session; regenerated when an event they cover is forgotten."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed.base import HashEmbedder
from remem.model import Kind, Record, Status
from remem.testing.llm_server import ScriptedLLM
from remem.testing.responders import memory_model

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
TURNS = [
    ("user", "Hi! I live in Lisbon and I am vegetarian."),
    ("assistant", "Noted. Where would you like to go?"),
    ("user", "Book me a table for Friday, somewhere quiet."),
    ("tool", "book_table Casa Verde Friday 20:00: confirmed, ref T-889"),
    ("user", "Can you also find a train to Porto?"),
]


def _config(strategies: dict[str, Any], llm: ScriptedLLM | None = None) -> Any:
    data: dict[str, Any] = {"strategies": strategies}
    if llm is not None:
        data["llm"] = {"base_url": llm.base_url, "model": "fake-model"}
    return build(ConfigFile.model_validate(data), "test", Path.cwd())


def _add(mem: Memory, turns: list[tuple[str, str]], start: int = 0, session: str = "s1") -> None:
    for i, (role, text) in enumerate(turns, start=start):
        mem.add_event(actor="ana", session=session, role=role, text=text,
                      time=T0 + timedelta(minutes=i), event_id=f"e{i}")  # fmt: skip


def _summaries(mem: Memory, all_: bool = False) -> list[Record]:
    return [r for r in mem.records(actor="ana", all=all_) if r.kind is Kind.SUMMARY]


@pytest.fixture
def offline(tmp_path: Path) -> Memory:
    config = _config({"offline": {}, "offline-summary": {}})
    return Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), config=config)


def test_an_offline_summary_records_what_it_covers(offline: Memory) -> None:
    with offline as mem:
        _add(mem, TURNS)
        mem.process()
        (summary,) = _summaries(mem)
        assert summary.field == "summary:s1:session"
        assert summary.source.event_ids == ("e0", "e1", "e2", "e3", "e4")
        assert summary.source.extractor == "offline-summary/1"
        assert summary.authority.value == "summary"
        meta = json.loads(summary.value or "{}")
        assert meta["first_event"] == "e0" and meta["last_event"] == "e4"
        assert meta["key_events"] == ["e3"]  # the confirmed tool result
        assert meta["unresolved"] == ["Can you also find a train to Porto?"]
        assert meta["summariser"] == "offline-summary/1"
        assert "Lisbon" in summary.text and "T-889" in summary.text
        assert "Noted" not in summary.text  # chatter is left out
        packet = mem.recall(actor="ana", query="summary of the session table booking", k=10)
        kinds = {item.kind for item in packet.records}
        assert "summary" in kinds  # handed back, and marked as a summary


def test_a_running_summary_supersedes_its_previous_version(offline: Memory) -> None:
    with offline as mem:
        _add(mem, TURNS[:3])
        mem.process()
        (first,) = _summaries(mem)
        _add(mem, TURNS[3:], start=3)
        mem.process()
        (current,) = _summaries(mem)
        assert current.id != first.id and current.supersedes == first.id
        assert mem.get(first.id).status is Status.INVALID
        assert current.source.event_ids == ("e0", "e1", "e2", "e3", "e4")


def test_forgetting_a_covered_record_regenerates_the_summary(offline: Memory) -> None:
    with offline as mem:
        _add(mem, TURNS)
        mem.process()
        (summary,) = _summaries(mem)
        home = next(r for r in mem.records(actor="ana") if r.field == "home city")
        report = mem.forget(record_id=home.id)
        assert report.verified and report.deleted["summaries"] == 1
        # the old summary quoted the forgotten event: it is gone everywhere
        assert all("Lisbon" not in r.text for r in mem.records(actor="ana", all=True))
        assert mem.store.records.get_record(mem.tenant, summary.id) is None
        mem.process()
        (fresh,) = _summaries(mem)
        assert "Lisbon" not in fresh.text and "T-889" in fresh.text
        assert "e0" not in fresh.source.event_ids  # the erased turn is no longer covered
        assert set(fresh.source.event_ids) == {"e1", "e2", "e3", "e4"}
        # the events the summary covered were not erased with it
        texts = {e.id: e.text for e in mem.events(actor="ana")}
        assert texts["e3"].startswith("book_table") and texts["e0"] == ""


def test_forgetting_a_summary_leaves_its_events(offline: Memory) -> None:
    with offline as mem:
        _add(mem, TURNS)
        mem.process()
        (summary,) = _summaries(mem)
        report = mem.forget(record_id=summary.id)
        assert report.verified and "summaries" not in report.deleted
        assert all(e.text for e in mem.events(actor="ana"))
        assert _summaries(mem) == []


def test_an_llm_summary_is_regenerated_without_the_forgotten_event(tmp_path: Path) -> None:
    with ScriptedLLM(responder=memory_model) as llm:
        config = _config({"semantic": {}, "summary": {}}, llm)
        with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as mem:
            _add(mem, TURNS)
            mem.process()
            (summary,) = _summaries(mem)
            assert "Lisbon" in summary.text
            fact = next(r for r in mem.records(actor="ana") if r.source.event_ids == ("e0",))
            assert mem.forget(record_id=fact.id).deleted["summaries"] == 1
            before = llm.calls
            mem.process()
            asked = [r for r in llm.requests[before:] if "running summary" in str(r)]
            assert asked and all("Lisbon" not in json.dumps(r) for r in asked)
            (fresh,) = _summaries(mem)
            assert "Lisbon" not in fresh.text
            meta = json.loads(fresh.value or "{}")
            assert meta["first_event"] == "e1" and meta["last_event"] == "e4"
            assert "e0" not in fresh.source.event_ids


def test_a_superseded_summary_leaves_the_turns_it_covered_recallable(offline: Memory) -> None:
    with offline as mem:
        _add(mem, TURNS)
        mem.process()
        _add(mem, [("user", "And a hotel near the station, please.")], start=len(TURNS))
        mem.process()
        assert [r.status for r in _summaries(mem, all_=True)].count(Status.INVALID) == 1
        # e4 made no record of its own; only the summaries cover it, the older one closed
        packet = mem.recall(actor="ana", query="train to Porto", explain=True)
        assert "e4" in [it.id for it in packet.records]
        assert packet.explain is not None
        assert "e4" not in {r["id"] for r in packet.explain["rejected"]}
