"""OpenTelemetry spans, imported only when a tracer is configured.

The names follow the GenAI semantic conventions (open-telemetry/semantic-conventions-genai,
docs/gen-ai/gen-ai-spans.md, status Development, as of 2026-12):

- memory (`gen_ai.memory.client`): the span is named by `gen_ai.operation.name`,
  one of create_memory, update_memory, upsert_memory, search_memory,
  delete_memory; kind INTERNAL, as the conventions allow for a memory system in
  the caller's process (`remem serve` runs `Memory` in its own). Attributes:
  `gen_ai.memory.record.id` when the operation is about one record,
  `gen_ai.memory.record.count` (search: returned; others: attempted),
  `gen_ai.memory.store.id` (remem's store of one tenant: the tenant's name),
  `error.type`; opt-in only, `gen_ai.memory.query.text` and `gen_ai.memory.records`
  (a JSON string of `{"id", "content", "score"}` objects, the conventions' schema).
- inference (`gen_ai.inference.client`): `chat {gen_ai.request.model}`, kind CLIENT,
  with `gen_ai.provider.name` openai (the chat-completions API flavour),
  `gen_ai.request.model`, `server.address`, `server.port`,
  `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` over every attempt.

What the conventions do not name is under `remem.`: the scope (`remem.tenant`,
`remem.actor`, `remem.namespace`), every id of a multi-record operation
(`remem.memory.record.ids`), the extraction span's strategy and counts, a model
call's prompt version and attempts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode

Attrs = Mapping[str, Any]


@contextmanager
def span(tracer: Any, name: str, attrs: Attrs, *, client: bool = False) -> Iterator[Span]:
    """A span made current for the block; an exception marks it failed with `error.type`
    (the exception's class, never its message: a message may quote content)."""
    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    with tracer.start_as_current_span(
        name,
        kind=kind,
        attributes=clean(attrs),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            kind_name = f"{type(exc).__module__}.{type(exc).__qualname__}"
            current.set_attribute("error.type", kind_name)
            current.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            raise


def add(current: Span, attrs: Attrs) -> None:
    """Set attributes on a span (None values left out)."""
    current.set_attributes(clean(attrs))


def fail(current: Span, error: str) -> None:
    """Mark a span failed with a low-cardinality `error.type`."""
    current.set_attribute("error.type", error)
    current.set_status(Status(StatusCode.ERROR, error))


def clean(attrs: Attrs) -> dict[str, Any]:
    """Attributes OpenTelemetry takes: no None, sequences as lists."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        out[key] = list(value) if isinstance(value, tuple | list) else value
    return out
