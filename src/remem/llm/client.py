"""The one door to language models: OpenAI-compatible chat completions.

Any endpoint that speaks the chat-completions API works (OpenAI, Azure,
Ollama, vLLM, llama.cpp server, LiteLLM proxies). Answers are JSON, validated
by a pydantic model; a call that times out, is rate limited, gets a 5xx or is
cut mid-response is retried with backoff and jitter (a 429's Retry-After is
honoured), an answer that does not match its schema is asked for again, and
every attempt is logged as an `LLMCall` with its tokens and time. The key is
never logged: it is not part of any repr, message or log line.

The test double is `remem.testing.llm_server.ScriptedLLM`, a real server on
loopback.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from remem.errors import InvalidInput, LLMBadOutput, LLMRefused, LLMUnavailable
from remem.llm.retry import RetryPolicy, describe, retry_after, retryable
from remem.llm.settings import LLMSettings as LLMSettings  # its home before; re-exported
from remem.llm.settings import shown_url
from remem.model import LLMCall
from remem.telemetry.hooks import observed_model_call

log = logging.getLogger("remem.llm")

T = TypeVar("T", bound=BaseModel)
Message = dict[str, str]

_FENCE = re.compile(r"\s*```(?:json)?\s*(.*?)\s*```\s*", re.DOTALL)


class ChatModel:
    """A chat-completions endpoint that answers in validated JSON. Thread-safe."""

    def __init__(
        self,
        settings: LLMSettings,
        retry: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rng = rng
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChatModel({shown_url(self.settings.base_url)!r}, model={self.settings.model!r})"

    def close(self) -> None:
        """Close the HTTP connections to the endpoint (it reopens them if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise InvalidInput(
                        "a language model needs the llm extra: pip install 'remem[llm]'"
                    ) from None
                self._client = openai.OpenAI(
                    base_url=self.settings.base_url,
                    # local servers take any key; the SDK insists on one
                    api_key=self.settings.api_key or "unused",
                    timeout=self.settings.timeout,
                    max_retries=0,  # retries are ours: logged, with our backoff
                )
            return self._client

    @observed_model_call
    def complete(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        strategy: str,
        prompt_version: str,
        calls: list[LLMCall],
        model: str | None = None,
    ) -> T:
        """Ask for a JSON answer matching `schema`; append every attempt to `calls`.

        Raises `LLMUnavailable` when transient failures outlast the retries,
        `LLMRefused` on a 4xx that retrying cannot fix, and `LLMBadOutput` when
        the answers never matched the schema.
        """
        import openai

        name = model or self.settings.model
        transient = malformed = 0
        while True:
            started = time.perf_counter()
            usage: tuple[int, int] = (0, 0)
            try:
                content, usage = self._create(messages, schema, name)
                parsed = _parse(content, schema)
            except LLMBadOutput as exc:
                malformed += 1
                calls.append(_call(strategy, name, prompt_version, usage, started, False, str(exc)))
                if malformed >= self.retry.malformed_attempts:
                    raise
                continue
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                error = describe(exc)
                calls.append(_call(strategy, name, prompt_version, usage, started, False, error))
                if isinstance(exc, openai.APIStatusError) and not retryable(exc.status_code):
                    raise LLMRefused(f"the model endpoint refused the request: {error}") from None
                transient += 1
                if transient >= self.retry.attempts:
                    raise LLMUnavailable(
                        f"the model endpoint failed {transient} times; last: {error}"
                    ) from None
                wait = self.retry.delay(transient, retry_after(exc), self._rng)
                log.info("model call failed (%s); retrying in %.1fs", error, wait)
                self._sleep(wait)
                continue
            calls.append(_call(strategy, name, prompt_version, usage, started, True, ""))
            return parsed

    def _create(
        self, messages: Sequence[Message], schema: type[BaseModel], model: str
    ) -> tuple[str, tuple[int, int]]:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": list(messages),
            "temperature": self.settings.temperature,
        }
        if self.settings.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        elif self.settings.response_format == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
            }
        resp = self._openai().chat.completions.create(**kwargs)
        usage = (0, 0)
        if resp.usage is not None:
            usage = (int(resp.usage.prompt_tokens or 0), int(resp.usage.completion_tokens or 0))
        if not resp.choices:
            raise LLMBadOutput("the model answered with no choices")
        return resp.choices[0].message.content or "", usage


def _parse(content: str, schema: type[T]) -> T:
    fenced = _FENCE.fullmatch(content)
    text = fenced.group(1) if fenced else content
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors()
        where, kind = "answer", "invalid"
        if errors:
            where = ".".join(str(p) for p in errors[0]["loc"]) or "answer"
            kind = "not JSON" if errors[0]["type"] == "json_invalid" else errors[0]["msg"]
        raise LLMBadOutput(
            f"the model's answer did not match {schema.__name__}: {where}: {kind}"
        ) from None
    except json.JSONDecodeError:
        raise LLMBadOutput(f"the model's answer was not JSON for {schema.__name__}") from None


def _call(
    strategy: str,
    model: str,
    prompt_version: str,
    usage: tuple[int, int],
    started: float,
    ok: bool,
    error: str,
) -> LLMCall:
    return LLMCall(
        strategy=strategy,
        model=model,
        prompt_version=prompt_version,
        prompt_tokens=usage[0],
        completion_tokens=usage[1],
        seconds=time.perf_counter() - started,
        ok=ok,
        error=error,
    )
