"""The configuration file's schema: pydantic models that validate a parsed TOML file.

`remem.config.config.load_config` uses them only when there is a file to read, so a
process run on the defaults never loads pydantic. Each section's defaults are
those of the plain values a `Config` holds (`remem.config.sections`, and
`RetryPolicy`), taken from there, not repeated.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from remem.config.sections import (
    STRATEGIES,
    Consolidation,
    Documents,
    Embed,
    Events,
    Recall,
    Worker,
)
from remem.errors import InvalidInput
from remem.llm.retry import RetryPolicy
from remem.policy.fields import canonical_field
from remem.policy.scope import actor_prefix, namespace_problem

_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
_ACTOR_ROOT = actor_prefix("{tenant}", "{actor}")  # a template: placeholders kept
_C, _R, _W, _E, _D = Consolidation(), RetryPolicy(), Worker(), Events(), Documents()
_M = Embed()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMSection(_Strict):
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    api_key_env: str | None = None
    timeout: float = Field(default=30.0, gt=0, le=600)
    response_format: Literal["json_object", "json_schema", "none"] = "json_object"
    temperature: float = Field(default=0.0, ge=0, le=2)


class StrategySection(_Strict):
    enabled: bool = True
    model: str | None = None
    namespace: str | None = None
    prompt_append: str | None = None
    prompt_replace: str | None = None
    prompt_file: str | None = None  # a file whose text replaces the default prompt

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        if value is None:
            return value
        unknown = set(_PLACEHOLDER.findall(value)) - {"tenant", "actor", "session", "strategy"}
        if unknown:
            raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}} in namespace")
        if (problem := namespace_problem(value)) is not None:
            raise ValueError(problem)
        # a strategy writes about one actor: its namespace must stay inside the actor's
        if not value.startswith(_ACTOR_ROOT) or value.rstrip("/") == _ACTOR_ROOT.rstrip("/"):
            raise ValueError(f"namespace must start with {_ACTOR_ROOT} and name a folder below it")
        return value


class ConsolidationSection(_Strict):
    enabled: bool = _C.enabled
    model: str | None = _C.model
    neighbours: int = Field(default=_C.neighbours, ge=1, le=20)


class RetrySection(_Strict):
    attempts: int = Field(default=_R.attempts, ge=1, le=20)
    malformed_attempts: int = Field(default=_R.malformed_attempts, ge=1, le=10)
    base_seconds: float = Field(default=_R.base_seconds, ge=0, le=60)
    max_seconds: float = Field(default=_R.max_seconds, ge=0, le=3600)
    job_attempts: int = Field(default=_R.job_attempts, ge=1, le=100)
    job_base_seconds: float = Field(default=_R.job_base_seconds, ge=0, le=3600)
    job_max_seconds: float = Field(default=_R.job_max_seconds, ge=0, le=86400)


class WorkerSection(_Strict):
    lease_seconds: float = Field(default=_W.lease_seconds, ge=5, le=3600)
    batch_events: int = Field(default=_W.batch_events, ge=1, le=200)
    context_events: int = Field(default=_W.context_events, ge=0, le=100)


class EventsSection(_Strict):
    # how far ahead of this machine's clock an event's time may be (a client's clock)
    max_clock_skew_seconds: float = Field(default=_E.max_clock_skew_seconds, ge=0, le=366 * 86400)


class DocumentsSection(_Strict):
    # how many chunks one document may cut into (it is refused whole above)
    max_chunks: int = Field(default=_D.max_chunks, ge=1, le=1_000_000)
    # pages of a PDF, and CPU seconds to parse one document (refused above)
    max_pages: int = Field(default=_D.max_pages, ge=1, le=1_000_000)
    max_parse_seconds: float = Field(default=_D.max_parse_seconds, gt=0, le=3600)


class RecallSection(_Strict):
    # fields looked up exactly and put at the head of every packet (`remem.facts.lookup`)
    pin: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("pin")
    @classmethod
    def _fields(cls, value: list[str]) -> list[str]:
        try:
            return list(dict.fromkeys(canonical_field(f) for f in value))
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None


class EmbedSection(_Strict):
    # an OpenAI-compatible embeddings server (`remem.embed.server`); the key is never
    # written here: `api_key_env` names the environment variable that holds it
    base_url: str | None = None
    model: str | None = None
    dimensions: int | None = Field(default=None, ge=1, le=16384)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    batch_size: int = Field(default=_M.batch_size, ge=1, le=2048)
    timeout: float = Field(default=_M.timeout, gt=0, le=600)
    cooldown_seconds: float = Field(default=_M.cooldown_seconds, ge=0, le=3600)
    send_dimensions: bool = _M.send_dimensions
    name: str | None = Field(default=None, min_length=1, max_length=200)
    # or a local sentence-transformers folder (`remem.embed.folder`)
    path: str | None = None
    # or one of remem's own (`remem.embed.choose.BUILTINS`)
    builtin: Literal["default", "minilm", "minilm-int8", "hash", "none"] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> EmbedSection:
        chosen = [self.base_url, self.path, self.builtin]
        if sum(c is not None for c in chosen) > 1:
            raise ValueError("give one of base_url (a server), path (a folder) or builtin")
        if self.base_url is not None and (self.model is None or self.dimensions is None):
            raise ValueError(
                "an embeddings server needs model and dimensions (the length of its vectors)"
            )
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL, such as http://localhost:11434/v1")
        return self


class ConfigFile(_Strict):
    """A whole configuration file; `remem.config.config.build` makes it the effective `Config`."""

    llm: LLMSection = LLMSection()
    strategies: dict[str, StrategySection] | None = None
    consolidation: ConsolidationSection = ConsolidationSection()
    retry: RetrySection = RetrySection()
    worker: WorkerSection = WorkerSection()
    events: EventsSection = EventsSection()
    recall: RecallSection = RecallSection()
    documents: DocumentsSection = DocumentsSection()
    embed: EmbedSection = EmbedSection()

    @field_validator("strategies")
    @classmethod
    def _known(cls, value: dict[str, StrategySection] | None) -> Any:
        for name in value or {}:
            if name not in STRATEGIES:
                raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
        return value

    def sections(
        self,
    ) -> tuple[Consolidation, RetryPolicy, Worker, Events, Recall, Documents, Embed]:
        """The validated sections as the plain values a `Config` holds."""
        return (
            Consolidation(**self.consolidation.model_dump()),
            RetryPolicy(**self.retry.model_dump()),
            Worker(**self.worker.model_dump()),
            Events(**self.events.model_dump()),
            Recall(list(self.recall.pin)),
            Documents(**self.documents.model_dump()),
            Embed(**self.embed.model_dump()),
        )
