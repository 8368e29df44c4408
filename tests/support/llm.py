"""Configuration for a scripted OpenAI-compatible server on loopback
(`remem.testing.llm_server.ScriptedLLM`), with retries fast enough for a test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remem.config.config import ConfigFile, build
from remem.llm.retry import RetryPolicy
from remem.testing.llm_server import ScriptedLLM

FAST = RetryPolicy(
    attempts=3,
    malformed_attempts=2,
    base_seconds=0.01,
    max_seconds=0.05,
    job_attempts=2,
    job_base_seconds=0.0,
    job_max_seconds=0.0,
)


def llm_config(llm: ScriptedLLM, strategies: dict[str, Any] | None = None, **llm_extra: Any) -> Any:
    data: dict[str, Any] = {
        "llm": {"base_url": llm.base_url, "model": "fake-model", "timeout": 2, **llm_extra},
        "retry": {
            "attempts": FAST.attempts,
            "malformed_attempts": FAST.malformed_attempts,
            "base_seconds": FAST.base_seconds,
            "max_seconds": FAST.max_seconds,
            "job_attempts": FAST.job_attempts,
            "job_base_seconds": 0,
            "job_max_seconds": 0,
        },
    }
    if strategies is not None:
        data["strategies"] = strategies
    return build(ConfigFile.model_validate(data), "test", Path.cwd())
