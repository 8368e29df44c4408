"""Where a language model is and how to talk to it: `LLMSettings`, plain data.

Apart from `remem.llm.client` (which loads pydantic and the HTTP client) so that
reading the configuration does not load them; `remem.llm.client` re-exports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from remem.errors import InvalidInput

ResponseFormat = Literal["json_object", "json_schema", "none"]


def shown_url(url: str) -> str:
    """`url` as remem shows it (a repr, `remem config show`): a user name or password in
    it, and its query, replaced by `***`, since either may carry credentials."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=netloc, query="***" if parts.query else ""))


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """Where a model is and how to talk to it. The key never appears in a repr."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout: float = 30.0
    response_format: ResponseFormat = "json_object"
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise InvalidInput(
                "llm base_url must be an http(s) URL, such as http://localhost:11434/v1 "
                "(the value given is not shown: a URL may carry credentials)"
            )
        if not self.model:
            raise InvalidInput("llm model must be named (e.g. model = 'gpt-4o-mini')")
        if self.timeout <= 0:
            raise InvalidInput(f"llm timeout must be positive; got {self.timeout}")

    @classmethod
    def from_env(cls) -> LLMSettings | None:
        """Settings from REMEM_LLM_BASE_URL, REMEM_LLM_MODEL and REMEM_LLM_API_KEY, if set."""
        url = os.environ.get("REMEM_LLM_BASE_URL")
        if not url:
            return None
        return cls(
            base_url=url,
            model=os.environ.get("REMEM_LLM_MODEL", ""),
            api_key=os.environ.get("REMEM_LLM_API_KEY", ""),
        )
