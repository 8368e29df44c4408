"""The memory configuration: one TOML file (`--config` or `REMEM_CONFIG`).

    [llm]                       # any OpenAI-compatible endpoint
    base_url = "http://localhost:11434/v1"
    model = "llama3.1"
    api_key_env = "OPENAI_API_KEY"   # the key stays in the environment

    [strategies.semantic]
    model = "gpt-4o-mini"            # a model per strategy
    namespace = "/tenants/{tenant}/actors/{actor}/facts"
    prompt_append = "Also keep the names of pets."

    [retry]
    attempts = 4

    [events]
    max_clock_skew_seconds = 3600    # how far ahead of the clock an event may be dated

    [recall]
    pin = ["timezone", "language"]   # exact facts at the head of every packet

With no file, remem runs the offline extractor only; with an endpoint (in the
file, or `REMEM_LLM_BASE_URL` / `REMEM_LLM_MODEL` / `REMEM_LLM_API_KEY`) and
no `[strategies]` table, the four built-in LLM strategies run. An invalid file
is refused with its line and the reason.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from remem.errors import ConfigError, InvalidInput
from remem.llm.client import LLMSettings
from remem.llm.retry import RetryPolicy
from remem.policy.fields import canonical_field
from remem.policy.scope import actor_prefix, namespace_problem

LLM_STRATEGIES = ("semantic", "preference", "summary", "episodic")
OFFLINE_STRATEGIES = ("offline", "offline-summary")
STRATEGIES = (*OFFLINE_STRATEGIES, *LLM_STRATEGIES)
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
_ACTOR_ROOT = actor_prefix("{tenant}", "{actor}")  # a template: placeholders kept


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
    enabled: bool = True
    model: str | None = None
    neighbours: int = Field(default=5, ge=1, le=20)


class RetrySection(_Strict):
    attempts: int = Field(default=4, ge=1, le=20)
    malformed_attempts: int = Field(default=2, ge=1, le=10)
    base_seconds: float = Field(default=0.5, ge=0, le=60)
    max_seconds: float = Field(default=30.0, ge=0, le=3600)
    job_attempts: int = Field(default=5, ge=1, le=100)
    job_base_seconds: float = Field(default=10.0, ge=0, le=3600)
    job_max_seconds: float = Field(default=600.0, ge=0, le=86400)


class WorkerSection(_Strict):
    lease_seconds: float = Field(default=120.0, ge=5, le=3600)
    batch_events: int = Field(default=16, ge=1, le=200)
    context_events: int = Field(default=6, ge=0, le=100)


class EventsSection(_Strict):
    # how far ahead of this machine's clock an event's time may be (a client's clock)
    max_clock_skew_seconds: float = Field(default=3600.0, ge=0, le=366 * 86400)


class RecallSection(_Strict):
    # fields looked up exactly and put at the head of every packet (`remem.facts`)
    pin: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("pin")
    @classmethod
    def _fields(cls, value: list[str]) -> list[str]:
        try:
            return list(dict.fromkeys(canonical_field(f) for f in value))
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None


class ConfigFile(_Strict):
    llm: LLMSection = LLMSection()
    strategies: dict[str, StrategySection] | None = None
    consolidation: ConsolidationSection = ConsolidationSection()
    retry: RetrySection = RetrySection()
    worker: WorkerSection = WorkerSection()
    events: EventsSection = EventsSection()
    recall: RecallSection = RecallSection()

    @field_validator("strategies")
    @classmethod
    def _known(cls, value: dict[str, StrategySection] | None) -> Any:
        for name in value or {}:
            if name not in STRATEGIES:
                raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
        return value


@dataclass(frozen=True, slots=True)
class StrategyConfig:
    """One strategy as it will run: its model, namespace template and prompt."""

    name: str
    model: str | None
    namespace: str | None
    prompt_append: str | None
    prompt_replace: str | None


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration: what `remem config show` prints."""

    strategies: tuple[StrategyConfig, ...]
    llm: LLMSettings | None
    consolidation: ConsolidationSection
    retry: RetryPolicy
    worker: WorkerSection
    source: str  # the file it came from, or "defaults"
    events: EventsSection = field(default_factory=EventsSection)
    recall: RecallSection = field(default_factory=RecallSection)

    @property
    def strategy_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.strategies)

    def strategy(self, name: str) -> StrategyConfig:
        for s in self.strategies:
            if s.name == name:
                return s
        raise InvalidInput(f"strategy {name!r} is not configured")

    def as_dict(self) -> dict[str, Any]:
        """The configuration as JSON-ready data; the API key shows only as set or not."""
        llm = None
        if self.llm is not None:
            llm = {
                "base_url": self.llm.base_url,
                "model": self.llm.model,
                "api_key": "set" if self.llm.api_key else "not set",
                "timeout": self.llm.timeout,
                "response_format": self.llm.response_format,
                "temperature": self.llm.temperature,
            }
        return {
            "source": self.source,
            "llm": llm,
            "strategies": {
                s.name: {
                    "model": s.model
                    or (self.llm.model if self.llm and s.name != "offline" else None),
                    "namespace": s.namespace,
                    "prompt": "replaced"
                    if s.prompt_replace
                    else ("appended" if s.prompt_append else "default"),
                }
                for s in self.strategies
            },
            "consolidation": self.consolidation.model_dump(),
            "retry": {f: getattr(self.retry, f) for f in RetryPolicy.__dataclass_fields__},
            "worker": self.worker.model_dump(),
            "events": self.events.model_dump(),
            "recall": self.recall.model_dump(),
        }


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the configuration from `path`, else `$REMEM_CONFIG`, else the defaults."""
    raw_path = str(path) if path is not None else os.environ.get("REMEM_CONFIG")
    if not raw_path:
        return build(ConfigFile(), "defaults", Path.cwd())
    file = Path(raw_path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {file} is not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    try:
        parsed = ConfigFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        line = _line_of(text, loc)
        where = f" line {line}" if line else ""
        reason = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{file}:{where} {'.'.join(loc) or 'file'}: {reason}") from None
    return build(parsed, str(file), file.parent)


def build(parsed: ConfigFile, source: str, base: Path) -> Config:
    """Turn a validated file into the effective configuration (env fills the gaps)."""
    llm = _llm_settings(parsed.llm, source)
    if parsed.strategies is None:
        chosen = {n: StrategySection() for n in (LLM_STRATEGIES if llm else ("offline",))}
    else:
        chosen = {n: s for n, s in parsed.strategies.items() if s.enabled}
    strategies = []
    for name, section in chosen.items():
        if name not in OFFLINE_STRATEGIES and llm is None:
            raise ConfigError(
                f"{source}: strategy {name!r} needs a language model: set [llm] base_url and "
                "model (or REMEM_LLM_BASE_URL and REMEM_LLM_MODEL)"
            )
        replace = section.prompt_replace
        if section.prompt_file is not None:
            prompt_path = base / section.prompt_file
            try:
                replace = prompt_path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"{source}: strategies.{name}.prompt_file: cannot read {prompt_path}: "
                    f"{exc.strerror or exc}"
                ) from None
        strategies.append(
            StrategyConfig(name, section.model, section.namespace, section.prompt_append, replace)
        )
    if not strategies:
        raise ConfigError(f"{source}: every strategy is disabled; enable at least one")
    r = parsed.retry
    retry = RetryPolicy(
        attempts=r.attempts,
        malformed_attempts=r.malformed_attempts,
        base_seconds=r.base_seconds,
        max_seconds=r.max_seconds,
        job_attempts=r.job_attempts,
        job_base_seconds=r.job_base_seconds,
        job_max_seconds=r.job_max_seconds,
    )
    return Config(
        tuple(strategies),
        llm,
        parsed.consolidation,
        retry,
        parsed.worker,
        source,
        parsed.events,
        parsed.recall,
    )


def _llm_settings(section: LLMSection, source: str) -> LLMSettings | None:
    env = LLMSettings.from_env()
    base_url = section.base_url or (env.base_url if env else None)
    if not base_url:
        return None
    model = section.model or (env.model if env else "")
    key = section.api_key or ""
    if section.api_key_env:
        key = os.environ.get(section.api_key_env, "")
    elif not key and env is not None:
        key = env.api_key
    try:
        return LLMSettings(
            base_url=base_url,
            model=model,
            api_key=key,
            timeout=section.timeout,
            response_format=section.response_format,
            temperature=section.temperature,
        )
    except InvalidInput as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _line_of(text: str, loc: tuple[str, ...]) -> int | None:
    """The line in a TOML text that best matches a key path: the key, else its table."""
    table: tuple[str, ...] = ()
    best, best_len = None, 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            table = tuple(p.strip().strip("\"'") for p in line.strip("[]").split("."))
            path = table
        elif "=" in line and not line.startswith("#"):
            path = (*table, line.split("=", 1)[0].strip().strip("\"'"))
        else:
            continue
        if path == loc[: len(path)] and len(path) > best_len:
            best, best_len = number, len(path)
        elif best is None and len(path) > len(loc) and path[: len(loc)] == loc:
            best = number  # the error is about a table below this key: its first line
    return best
