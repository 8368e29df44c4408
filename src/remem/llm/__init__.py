"""The door to language models: `ChatModel` over any OpenAI-compatible endpoint.

The names below are imported when first used (PEP 562), so that importing
`remem.llm.retry` or `remem.llm.settings` does not load `remem.llm.client`
(pydantic and the HTTP client).
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remem.llm.client import ChatModel
    from remem.llm.retry import RetryPolicy
    from remem.llm.settings import LLMSettings

_LAZY = {
    "ChatModel": "remem.llm.client",
    "LLMSettings": "remem.llm.settings",
    "RetryPolicy": "remem.llm.retry",
}


def __getattr__(name: str) -> object:
    """`ChatModel`, `LLMSettings`, `RetryPolicy`, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'remem.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["ChatModel", "LLMSettings", "RetryPolicy"]
