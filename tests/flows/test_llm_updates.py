"""The LLM semantic strategy supersedes on a change of state as well as the offline
rules do, given a model that follows its prompt: a scripted OpenAI-compatible server on
loopback answers as the prompt asks (the same attribute for the new state, a family key
for one of several), and only when the prompt asks it. Sentences written for this test."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.clock import Clock, at
from tests.support.llm import llm_config

# what a model that follows the prompt answers for each sentence: (attribute, value)
FOLLOWED = {
    "I'm vegetarian.": ("diet", "vegetarian"),
    "I've started eating fish again, so I'm pescatarian now.": ("diet", "pescatarian"),
    "We have a cat named Pickle.": ("relation:cat", "Pickle"),
    "Our cat passed away last week.": ("relation:cat", "Pickle, passed away"),
    "I'm allergic to shellfish.": ("allergy:shellfish", "allergic"),
    "I'm allergic to sesame too.": ("allergy:sesame", "allergic"),
}


def _follows_the_prompt(request: dict[str, Any]) -> Reply:
    system = str(request["messages"][0]["content"])
    user = str(request["messages"][-1]["content"])
    if "durable facts" not in system:
        return Reply.json({"decisions": []})
    # the prompt must ask for family keys and for the old attribute on a change
    asked = "allergy:shellfish" in system and "the very attribute the old state has" in system
    facts = []
    for line in user.splitlines():
        m = re.match(r"^\[(\d+)\] \S+ .+? \(user\): (.*)$", line)  # as remem lists events
        if not m:
            continue
        said = json.loads(m[2]) if m[2].startswith('"') else m[2]
        attribute, value = FOLLOWED.get(said, (None, None))
        if attribute and ":" in attribute and not asked:
            attribute = attribute.partition(":")[0]  # one attribute for the whole kind
        facts.append({"text": f"Noor: {said}", "attribute": attribute, "value": value,
                      "event": int(m[1])})  # fmt: skip
    return Reply.json({"facts": facts})


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.responder = _follows_the_prompt
        yield server


def test_a_model_that_follows_the_prompt_supersedes_and_answers_families(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    config = llm_config(llm, strategies={"semantic": {}})
    clock = Clock()
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), config=config, clock=clock) as mem:
        for day, said in enumerate(FOLLOWED):
            mem.add_event(actor="noor", session=f"s{day}", role="user", text=said,
                          time=at(days=10 * day))  # fmt: skip
            clock.advance(days=10)
            result = mem.process()
            assert result.failed == 0
        diet = mem.fact(actor="noor", field="diet")
        assert diet.found is not None and diet.found.value == "pescatarian"
        (old,) = [r for r in mem.records(actor="noor", all=True) if r.value == "vegetarian"]
        assert old.status.value == "invalid" and old.superseded_by == diet.found.record_id

        pets = mem.fact(actor="noor", field="pets")
        assert [(c.field, c.value) for c in pets.candidates] == [
            ("relation:cat", "Pickle, passed away")
        ]
        allergies = mem.fact(actor="noor", field="allergies")
        assert {c.field for c in allergies.candidates} == {"allergy:shellfish", "allergy:sesame"}
