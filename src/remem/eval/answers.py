"""Answer quality: answer each question from its recall packet, and grade it.

With a language model configured, `remem eval locomo --answers` asks the
model to answer every question from the packet remem recalled within the
token budget (nothing else of the conversation), then asks it to grade the
answer against the gold one. For adversarial questions (category 5) the
gold answer is that the conversation does not say; the trap answer the
dataset records is wrong. Prompts are versioned files in `prompts/`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from remem.llm.client import ChatModel
from remem.model import LLMCall

ANSWER_PROMPT = "answer/1"
JUDGE_PROMPT = "judge/1"
NOT_MENTIONED = "not mentioned"

T = TypeVar("T", bound=BaseModel)


class Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answer: str = Field(max_length=1000)


class Grade(BaseModel):
    model_config = ConfigDict(extra="ignore")
    correct: bool
    reason: str = Field(default="", max_length=1000)


def _prompt(name: str) -> str:
    return (resources.files("remem.eval") / "prompts" / f"{name}.v1.md").read_text(encoding="utf-8")


class AnswerJudge:
    """Answers questions from recalled memories and grades the answers, with one model."""

    def __init__(self, chat: ChatModel) -> None:
        self.chat = chat
        self.calls: list[LLMCall] = []
        self._answer = _prompt("answer")
        self._judge = _prompt("judge")

    def answer(self, question: str, memories: Sequence[str]) -> str:
        """The model's short answer from `memories` alone."""
        numbered = "\n".join(f"[{i}] {m}" for i, m in enumerate(memories, start=1))
        asked = f"Memories:\n{numbered or '(none)'}\n\nQuestion: {question}"
        return self._ask(self._answer, asked, Answer, ANSWER_PROMPT).answer.strip()

    def grade(self, question: str, gold: str | None, answer: str, category: int) -> bool:
        """Whether `answer` states the gold answer (for category 5: that it is not said)."""
        if category == 5:
            expected = NOT_MENTIONED
            trap = f"\n(The answer {gold!r} is wrong: the conversation does not say it.)"
        else:
            expected, trap = (gold or NOT_MENTIONED), ""
        asked = f"Question: {question}\nGold answer: {expected}{trap}\nAnswer: {answer}"
        return self._ask(self._judge, asked, Grade, JUDGE_PROMPT).correct

    def _ask(self, prompt: str, content: str, schema: type[T], version: str) -> T:
        return self.chat.complete(
            [{"role": "system", "content": prompt}, {"role": "user", "content": content}],
            schema,
            strategy=f"eval:{version.split('/')[0]}",
            prompt_version=version,
            calls=self.calls,
        )
