"""`Telemetry`, the one door to spans and metrics, and the operation in progress.

A `Telemetry` is a value: a tracer (or None: no spans), a `Metrics` (or None: no
metrics) and whether content may be recorded. `OFF` has neither, and costs a hook
one attribute test. Nothing here imports opentelemetry unless spans are asked for.

The operation in progress (`active`) is a context variable set by the outer hooks
(a `Memory` method, an extraction batch), so an inner hook (a model call, the
packing of a recall) adds to the span and the tenant's metrics of what it is part of.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInput

if TYPE_CHECKING:
    from remem.telemetry.metrics import Metrics

OTEL_ENV = "REMEM_OTEL"  # "1": spans through OpenTelemetry's global tracer provider
CONTENT_ENV = "REMEM_OTEL_CONTENT"  # "1": record query and record text on spans
# the GenAI conventions' own opt-in switch, honoured too
OTEL_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# prometheus_client's multiprocess directory, read when it is first imported: named, every
# process's metrics are kept in files there and folded at scrape (remem.telemetry.metrics)
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
TRACER_NAME = "remem"
TRACER_VERSION = "0.1.0"
_TRUE = frozenset({"1", "true", "yes", "on"})


def _env_on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


@dataclass(frozen=True, slots=True)
class Telemetry:
    """Where remem's spans and metrics go; `OFF` (the default) sends them nowhere.

    `tracer` is an OpenTelemetry `Tracer`; `metrics` a `remem.telemetry.metrics.Metrics`
    (kept by `remem serve`); `capture_content` lets spans carry query and record text
    (`gen_ai.memory.query.text`, `gen_ai.memory.records`), which they never do otherwise.
    """

    tracer: Any = None
    metrics: Metrics | None = None
    capture_content: bool = False

    @property
    def on(self) -> bool:
        """Whether anything is recorded at all."""
        return self.tracer is not None or self.metrics is not None

    @classmethod
    def create(
        cls,
        tracer_provider: Any = None,
        *,
        metrics: Metrics | None = None,
        capture_content: bool | None = None,
    ) -> Telemetry:
        """Telemetry with spans through `tracer_provider`; without one, through the global
        provider when `$REMEM_OTEL` is 1, else no spans. `capture_content` None reads
        `$REMEM_OTEL_CONTENT` or `$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`."""
        tracer = None
        if tracer_provider is not None:
            tracer = tracer_provider.get_tracer(TRACER_NAME, TRACER_VERSION)
        elif _env_on(OTEL_ENV):
            from opentelemetry import trace

            tracer = trace.get_tracer(TRACER_NAME, TRACER_VERSION)
        if capture_content is None:
            capture_content = _env_on(CONTENT_ENV) or _env_on(OTEL_CONTENT_ENV)
        if tracer is None and metrics is None:
            return OFF if not capture_content else cls(capture_content=True)
        return cls(tracer, metrics, capture_content)

    @classmethod
    def given(cls, telemetry: Telemetry | None, tracer_provider: Any) -> Telemetry:
        """`telemetry` as given, or made for `tracer_provider` (`create`); not both."""
        if telemetry is not None and tracer_provider is not None:
            raise InvalidInput("give Memory a tracer_provider or a telemetry, not both")
        return telemetry if telemetry is not None else cls.create(tracer_provider)


OFF = Telemetry()


@dataclass(slots=True)
class Active:
    """The operation in progress: its telemetry, tenant, and what inner hooks noted."""

    telemetry: Telemetry
    tenant: str
    notes: dict[str, Any] = field(default_factory=dict)


_ACTIVE: ContextVar[Active | None] = ContextVar("remem_telemetry", default=None)


def active() -> Active | None:
    """The operation in progress in this context, or None."""
    return _ACTIVE.get()


def enter(telemetry: Telemetry, tenant: str) -> tuple[Active, Any]:
    """Make an operation the one in progress; pass the token to `leave`."""
    current = Active(telemetry, tenant)
    return current, _ACTIVE.set(current)


def leave(token: Any) -> None:
    """End the operation `enter` began."""
    _ACTIVE.reset(token)
