"""Observability: OpenTelemetry spans and Prometheus metrics, off unless configured.

    from opentelemetry.sdk.trace import TracerProvider
    mem = Memory.open("memory.db", tracer_provider=TracerProvider())   # spans on
    REMEM_OTEL=1 remem serve            # spans to the global provider (opentelemetry-instrument)

`Telemetry` is the one door: a `Memory` carries one in its `Deps` (`OFF` by
default), and the hooks at the call sites, one line each (`hooks`), read it.
Off, a hook is one attribute test and a call: neither opentelemetry nor
prometheus_client is imported, by this package or because of it.

Spans (`spans`) follow the OpenTelemetry GenAI semantic conventions for memory
(`gen_ai.memory.client`) and inference (`gen_ai.inference.client`); content (query
text, record text) is recorded only when opted in. Metrics (`metrics`) are kept by
`remem serve` and scraped at `/metrics`; see docs/guide/observability.md.
"""

from remem.telemetry.core import (
    CONTENT_ENV,
    OFF,
    OTEL_CONTENT_ENV,
    OTEL_ENV,
    Telemetry,
    active,
)

__all__ = ["CONTENT_ENV", "OFF", "OTEL_CONTENT_ENV", "OTEL_ENV", "Telemetry", "active"]
