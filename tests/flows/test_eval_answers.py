"""`remem eval locomo --answers`: answers from the packet, judged against the gold
answer by a model (here a scripted OpenAI-compatible server on loopback)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from remem.cli.eval import run_locomo
from remem.cli.main import main
from remem.embed.base import HashEmbedder
from remem.eval.answers import AnswerJudge
from remem.eval.locomo import load
from remem.llm.client import ChatModel, LLMSettings
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.eval import LOCOMO_TINY


def reader(request: dict[str, Any]) -> Reply:
    """Answers with the top memory; grades by whether the gold answer's words are in it."""
    system, user = (m["content"] for m in request["messages"])
    if "You answer a question" in system:
        first = re.search(r"^\[1\] (.*)$", user, re.M)
        return Reply.json({"answer": first.group(1) if first else "not mentioned"})
    gold = re.search(r"^Gold answer: (.*)$", user, re.M)
    answer = re.search(r"^Answer: (.*)$", user, re.M)
    assert gold and answer
    words = re.findall(r"\w+", gold.group(1).lower())
    return Reply.json({"correct": all(w in answer.group(1).lower() for w in words)})


def test_answers_are_judged_per_category_beside_compression() -> None:
    with ScriptedLLM(responder=reader) as llm:
        judge = AnswerJudge(ChatModel(LLMSettings(base_url=llm.base_url, model="judge")))
        try:
            result = run_locomo(
                LOCOMO_TINY, ks=[5, 10], budget=200, mode="both", baselines=True,
                limit_questions=None, embedder=HashEmbedder(), progress=False, judge=judge,
            )  # fmt: skip
        finally:
            judge.chat.close()
        requests = llm.requests
    remem = result["systems"]["remem:both"]
    answers = remem["answers"]
    data = load(LOCOMO_TINY)
    per_cat = Counter(str(q.category) for c in data.conversations for q in c.questions)
    for cat, n in per_cat.items():
        assert answers[cat]["questions"] == n
    assert answers["overall"]["questions"] == sum(n for c, n in per_cat.items() if c != "5")
    # the puppy's name is in the top turn for "What is the name of Ben's puppy?"
    assert 0 < answers["overall"]["correct"] < answers["overall"]["questions"]
    assert answers["4"]["accuracy"] == round(answers["4"]["correct"] / per_cat["4"], 4)
    assert all(
        "answers" not in fig for name, fig in result["systems"].items() if name != "remem:both"
    )
    asked = [r for r in requests if "You answer a question" in r["messages"][0]["content"]]
    assert len(asked) == sum(per_cat.values())  # one answer per question, remem only
    # each answer reads only its own conversation's packet: tiny-2's beagle never
    # reaches a tiny-1 question
    for r in asked:
        user = r["messages"][1]["content"]
        if "Ana" in user.split("Question:")[1]:
            assert "fridge" not in user
    # the adversarial question is graded against "not mentioned", with the trap named
    judged = [
        r["messages"][1]["content"] for r in requests if "You grade" in r["messages"][0]["content"]
    ]
    adversarial = [u for u in judged if "half marathon" in u]
    assert adversarial and "Gold answer: not mentioned" in adversarial[0]
    assert "'yes, in May' is wrong" in adversarial[0]
    assert result["config"]["answer_calls"] == len(requests)


def test_the_cli_answers_with_the_configured_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedLLM(responder=reader) as llm:
        config = tmp_path / "remem.toml"
        config.write_text(f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "judge"\n')
        code = main(["--config", str(config), "--json", "eval", "locomo", str(LOCOMO_TINY),
                     "--answers", "--embedder", "hash", "--limit-questions", "2"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["systems"]["remem:both"]["answers"]["4"]["questions"] == 4  # 2 per conversation
    assert out["config"]["answer_model"] == "judge"


def test_answers_without_a_model_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("REMEM_CONFIG", raising=False)
    monkeypatch.delenv("REMEM_LLM_BASE_URL", raising=False)
    code = main(["--json", "eval", "locomo", str(LOCOMO_TINY), "--answers", "--embedder", "hash"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code != 0 and "needs a language model" in error["message"]
