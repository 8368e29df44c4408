"""What a language model must answer, per strategy: pydantic models, one per prompt.

Each default prompt is a file in `prompts/` named after its strategy and
version (`semantic.v1.md` is version "semantic/1"); a record keeps the prompt
version that made it. Event numbers refer to the numbered new events the
prompt lists; an item naming any other number is dropped by
`remem.extract.llm`, not refused here, so one bad number does not cost the
whole answer. Anything else the model writes is ignored.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PROMPT_VERSIONS = {
    "semantic": "semantic/3",
    "preference": "preference/1",
    "summary": "summary/1",
    "episodic": "episodic/1",
    "consolidation": "consolidation/1",
}

_Text = Field(min_length=1, max_length=1000)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Fact(_Answer):
    text: str = _Text
    # a field of the vocabulary (`remem.policy.fields`) when one fits, else a free name
    attribute: str | None = Field(
        default=None,
        max_length=100,
        description="one of: name, preferred name, home city, timezone, language, employer, "
        "role, diet, allergies, budget, partner, pets, birthday, origin, pronouns, "
        "nationality; "
        "else a short lowercase name",
    )
    value: str | None = Field(default=None, max_length=300)
    event: int  # checked against the numbered events, not here: a bad one drops the item


class Facts(_Answer):
    facts: list[Fact] = Field(default_factory=list, max_length=50)


class Preference(_Answer):
    text: str = _Text
    category: str = Field(default="general", max_length=100)
    context: str | None = Field(default=None, max_length=300)
    event: int  # checked against the numbered events, not here: a bad one drops the item


class Preferences(_Answer):
    preferences: list[Preference] = Field(default_factory=list, max_length=50)


class Topic(_Answer):
    topic: str = Field(min_length=1, max_length=100)
    summary: str = Field(min_length=1, max_length=2000)
    unresolved: list[str] = Field(default_factory=list, max_length=20)
    key_events: list[int] = Field(default_factory=list, max_length=50)


class SessionSummary(_Answer):
    topics: list[Topic] = Field(default_factory=list, max_length=10)


class Episode(_Answer):
    attempt: str = _Text
    actions: list[str] = Field(default_factory=list, max_length=30)
    outcome: str = _Text
    verified: bool = False
    events: list[int] = Field(default_factory=list, max_length=50)


class Episodes(_Answer):
    episodes: list[Episode] = Field(default_factory=list, max_length=20)


class Verdict(_Answer):
    candidate: int = Field(ge=1)
    action: Literal["ADD", "UPDATE", "NOOP", "INVALIDATE"]
    target: str | None = None
    reason: str = Field(default="", max_length=500)


class Verdicts(_Answer):
    decisions: list[Verdict] = Field(default_factory=list, max_length=100)
