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

from pydantic import BaseModel, ConfigDict, Field

from remem.llm.client import ChatModel
from remem.model import LLMCall

ANSWER_PROMPT = "answer/1"
JUDGE_PROMPT = "judge/1"
NOT_MENTIONED = "not mentioned"


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
        reply = self.chat.complete(
            [
                {"role": "system", "content": self._answer},
                {"role": "user", "content": f"Memories:\n{numbered or '(none)'}\n\n"
                 f"Question: {question}"},
            ],
            Answer,
            strategy="eval:answer",
            prompt_version=ANSWER_PROMPT,
            calls=self.calls,
        )  # fmt: skip
        return reply.answer.strip()

    def grade(self, question: str, gold: str | None, answer: str, category: int) -> bool:
        """Whether `answer` states the gold answer (for category 5: that it is not said)."""
        if category == 5:
            expected = NOT_MENTIONED
            trap = f"\n(The answer {gold!r} is wrong: the conversation does not say it.)"
        else:
            expected, trap = (gold or NOT_MENTIONED), ""
        reply = self.chat.complete(
            [
                {"role": "system", "content": self._judge},
                {"role": "user", "content": f"Question: {question}\nGold answer: {expected}"
                 f"{trap}\nAnswer: {answer}"},
            ],
            Grade,
            strategy="eval:judge",
            prompt_version=JUDGE_PROMPT,
            calls=self.calls,
        )  # fmt: skip
        return reply.correct
