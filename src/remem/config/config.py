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

    [documents]
    max_chunks = 5000                # a document cutting into more is refused whole
    max_pages = 2000                 # pages of a PDF
    max_parse_seconds = 10           # CPU time to parse one document

    [embed]                          # default: the installed all-MiniLM-L6-v2
    base_url = "http://localhost:11434/v1"   # an OpenAI-compatible embeddings server
    model = "nomic-embed-text"
    dimensions = 768
    api_key_env = "OPENAI_API_KEY"   # the key stays in the environment
    # path = "/models/my-bert"       # or a local sentence-transformers folder

With no file, remem runs the offline extractor only; with an endpoint (in the
file, or `REMEM_LLM_BASE_URL` / `REMEM_LLM_MODEL` / `REMEM_LLM_API_KEY`) and
no `[strategies]` table, the four built-in LLM strategies run. An invalid file
is refused with its line and the reason.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remem.config.sections import (
    LLM_STRATEGIES,
    OFFLINE_STRATEGIES,
    STRATEGIES,
    Consolidation,
    Documents,
    Embed,
    Events,
    Recall,
    Worker,
)
from remem.errors import ConfigError, InvalidInput
from remem.llm.retry import RetryPolicy
from remem.llm.settings import LLMSettings, shown_url

if TYPE_CHECKING:  # the file's schema (pydantic): loaded only to read a file
    from remem.config.file import ConfigFile, LLMSection, StrategySection

__all__ = [
    "LLM_STRATEGIES",
    "OFFLINE_STRATEGIES",
    "STRATEGIES",
    "Config",
    "ConfigFile",
    "StrategyConfig",
    "build",
    "defaults",
    "load_config",
]


def __getattr__(name: str) -> object:
    """`ConfigFile`, the file's pydantic schema, imported from `remem.config.file` when
    named (as `remem.config.config.ConfigFile` it predates that module)."""
    if name == "ConfigFile":
        from remem.config.file import ConfigFile

        return ConfigFile
    raise AttributeError(f"module 'remem.config.config' has no attribute {name!r}")


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
    consolidation: Consolidation
    retry: RetryPolicy
    worker: Worker
    source: str  # the file it came from, or "defaults"
    events: Events = field(default_factory=Events)
    recall: Recall = field(default_factory=Recall)
    documents: Documents = field(default_factory=Documents)
    embed: Embed = field(default_factory=Embed)

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
                "base_url": shown_url(self.llm.base_url),
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
            "consolidation": asdict(self.consolidation),
            "retry": {f: getattr(self.retry, f) for f in RetryPolicy.__dataclass_fields__},
            "worker": asdict(self.worker),
            "events": asdict(self.events),
            "recall": asdict(self.recall),
            "documents": asdict(self.documents),
            "embed": {**asdict(self.embed), "base_url": _shown(self.embed.base_url)},
        }


def _shown(url: str | None) -> str | None:
    return shown_url(url) if url else None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the configuration from `path`, else `$REMEM_CONFIG`, else the defaults."""
    raw_path = str(path) if path is not None else os.environ.get("REMEM_CONFIG")
    if not raw_path:
        return defaults()
    from pydantic import ValidationError

    from remem.config.file import ConfigFile

    file = Path(raw_path)
    text = _read(file, "config file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib reads nested arrays by recursion
        raise ConfigError(f"{file}: the TOML nests too deep to read") from None
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


def defaults() -> Config:
    """The configuration with no file, as `build` makes it of an empty one: the offline
    extractor, or the four built-in LLM strategies when the environment names an
    endpoint (`REMEM_LLM_BASE_URL`); the file's schema (pydantic) is not loaded."""
    llm = _llm_settings(None, "defaults")
    strategies = _strategies(llm, None, "defaults", Path.cwd())
    return Config(strategies, llm, Consolidation(), RetryPolicy(), Worker(), "defaults")


def build(parsed: ConfigFile, source: str, base: Path) -> Config:
    """Turn a validated file into the effective configuration (env fills the gaps)."""
    llm = _llm_settings(parsed.llm, source)
    chosen = None
    if parsed.strategies is not None:
        chosen = {n: s for n, s in parsed.strategies.items() if s.enabled}
    strategies = _strategies(llm, chosen, source, base)
    consolidation, retry, worker, events, recall, documents, embed = parsed.sections()
    return Config(
        strategies, llm, consolidation, retry, worker, source, events, recall, documents, embed
    )


def _strategies(
    llm: LLMSettings | None, chosen: Mapping[str, StrategySection] | None, source: str, base: Path
) -> tuple[StrategyConfig, ...]:
    """The strategies that run: the enabled ones of the file's `[strategies]` table, else
    (no table) the four LLM strategies with a model, the offline extractor without."""
    if chosen is None:
        names = LLM_STRATEGIES if llm else ("offline",)
        return tuple(StrategyConfig(n, None, None, None, None) for n in names)
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
            replace = _read(prompt_path, f"{source}: strategies.{name}.prompt_file")
        strategies.append(
            StrategyConfig(name, section.model, section.namespace, section.prompt_append, replace)
        )
    if not strategies:
        raise ConfigError(f"{source}: every strategy is disabled; enable at least one")
    return tuple(strategies)


def _llm_settings(section: LLMSection | None, source: str) -> LLMSettings | None:
    """The model the file's `[llm]` (None: no file) and the environment name, if any."""
    env = LLMSettings.from_env()
    base_url = (section.base_url if section else None) or (env.base_url if env else None)
    if not base_url:
        return None
    model = (section.model if section else None) or (env.model if env else "")
    key = (section.api_key if section else None) or ""
    if section is not None and section.api_key_env:
        key = os.environ.get(section.api_key_env, "")
    elif not key and env is not None:
        key = env.api_key
    try:
        if section is None:
            return LLMSettings(base_url=base_url, model=model, api_key=key)
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


MAX_CONFIG_FILE_BYTES = 1024 * 1024  # a configuration or prompt file, read up to this


def _read(path: Path, what: str) -> str:
    """A configuration or prompt file's text, read up to `MAX_CONFIG_FILE_BYTES`;
    ConfigError saying what is wrong with it otherwise."""
    from remem.files import read_text

    try:
        return read_text(path, MAX_CONFIG_FILE_BYTES, "a configuration or prompt file",
                         "is it the file you meant?")  # fmt: skip
    except InvalidInput as exc:
        raise ConfigError(f"{what}: {exc}") from None
