"""The pipeline a configuration describes: its strategies, model door and settings."""

from __future__ import annotations

from remem.config.config import Config
from remem.errors import ConfigError
from remem.extract.llm import LLMStrategy, ModelConsolidator
from remem.extract.strategies import OfflineStrategy, Strategy
from remem.extract.summary import OfflineSummaryStrategy
from remem.llm.client import ChatModel
from remem.memory.deps import Deps
from remem.pipeline.jobs import Settings
from remem.pipeline.step import Pipeline


def build_pipeline(deps: Deps, config: Config, *, chat: ChatModel | None = None) -> Pipeline:
    """The pipeline `config` describes over `deps`; `chat` replaces the configured model door."""
    if chat is None and config.llm is not None:
        chat = ChatModel(config.llm, config.retry)
    strategies: dict[str, Strategy] = {}
    for s in config.strategies:
        if s.name == "offline":
            strategies[s.name] = OfflineStrategy()
        elif s.name == "offline-summary":
            strategies[s.name] = OfflineSummaryStrategy()
        elif chat is None:
            raise ConfigError(f"strategy {s.name!r} needs a language model; none is configured")
        else:
            strategies[s.name] = LLMStrategy(s.name, chat, s)
    consolidator = None
    if chat is not None and config.consolidation.enabled:
        consolidator = ModelConsolidator(chat, config.consolidation.model)
    settings = Settings(
        lease_seconds=config.worker.lease_seconds,
        context_events=config.worker.context_events,
        batch_events=config.worker.batch_events,
        retry=config.retry,
        namespaces={s.name: s.namespace for s in config.strategies if s.namespace},
    )
    pipeline = Pipeline(deps, strategies, consolidator=consolidator, settings=settings)
    if chat is not None:
        pipeline.chats.append(chat)
    return pipeline
