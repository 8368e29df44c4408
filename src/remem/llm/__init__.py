"""The door to language models: `ChatModel` over any OpenAI-compatible endpoint."""

from remem.llm.client import ChatModel, LLMSettings
from remem.llm.retry import RetryPolicy

__all__ = ["ChatModel", "LLMSettings", "RetryPolicy"]
