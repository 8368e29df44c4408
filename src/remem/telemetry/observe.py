"""What the hooks record when telemetry is on: spans (`spans`) and metrics (`metrics`).

Each observed `Memory` method is described by `OPERATIONS`: its GenAI memory
operation, the attributes of its request and those of its result. Content (text)
is added only with `Telemetry.capture_content`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from remem.telemetry.core import Active, Telemetry, enter, leave

Attrs = dict[str, Any]
Describe = Callable[[tuple[Any, ...], Mapping[str, Any]], Attrs]
Result = Callable[[Any], Attrs]


@contextmanager
def _span(tel: Telemetry, name: str, attrs: Attrs, *, client: bool = False) -> Iterator[Any]:
    """The span of an operation, or None when only metrics are kept."""
    if tel.tracer is None:
        yield None
        return
    from remem.telemetry import spans

    with spans.span(tel.tracer, name, attrs, client=client) as current:
        yield current


def _add(current: Any, attrs: Attrs) -> None:
    if current is not None:
        from remem.telemetry import spans

        spans.add(current, attrs)


# -- memory operations ------------------------------------------------------------------


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], name: str, at: int = 0) -> Any:
    return kwargs[name] if name in kwargs else (args[at] if len(args) > at else None)


def _scope(args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    ask = _arg(args, kw, "request")  # a `RememberAsk` (`Memory.ask_remember`)
    return {"remem.actor": ask.actor, "remem.namespace": ask.namespace}


def _event_in(args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    row = _arg(args, kw, "row")  # the row `add_event` builds (`Memory._add_event`)
    return {
        "remem.actor": row.get("actor"),
        "remem.namespace": None,
        "gen_ai.conversation.id": row.get("session"),
    }


def _event_out(event_id: str) -> Attrs:
    return {"gen_ai.memory.record.id": event_id, "gen_ai.memory.record.count": 1}


def _no_request(_args: tuple[Any, ...], _kw: Mapping[str, Any]) -> Attrs:
    return {}


def _events_out(new: Sequence[bool]) -> Attrs:
    return {"gen_ai.memory.record.count": len(new), "remem.memory.new_count": sum(new)}


def _record_out(record: Any) -> Attrs:
    return {
        "gen_ai.memory.record.id": record.id,
        "gen_ai.memory.record.count": 1,
        "remem.actor": record.actor,
        "remem.namespace": record.namespace,
        "remem.memory.kind": str(record.kind.value),
    }


def _update_in(args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    return {"gen_ai.memory.record.id": _arg(args, kw, "record_id"), "remem.by": kw.get("by")}


def _update_out(record: Any) -> Attrs:
    return {
        "gen_ai.memory.record.count": 1,
        "remem.memory.record.ids": [i for i in (record.supersedes, record.id) if i],
        "remem.actor": record.actor,
    }


def _batch_out(results: Sequence[Mapping[str, Any]]) -> Attrs:
    return {"gen_ai.memory.record.count": len(results)}


def _recall_in(args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    ask = _arg(args, kw, "request")  # a `RecallAsk` (`Memory.ask`)
    return {
        "remem.actor": ask.actor,
        "remem.namespace": ask.namespace,
        "remem.recall.k": ask.k,
        "remem.recall.budget": ask.budget,
    }


def _recall_out(packet: Any) -> Attrs:
    items = (*packet.pinned, *packet.records)
    return {
        "gen_ai.memory.record.count": len(items),
        "remem.memory.record.ids": [it.id for it in items],
        "remem.recall.tokens": packet.tokens,
        "remem.recall.conflicts": len(packet.conflicts),
    }


def _forget_in(args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    return {"gen_ai.memory.record.id": kw.get("record_id"), "remem.actor": kw.get("actor")}


def _forget_out(report: Any) -> Attrs:
    return {
        "gen_ai.memory.record.count": int(report.deleted.get("records", 0)),
        "remem.deletion.verified": bool(report.verified),
        "remem.deletion.job_id": report.job_id,
    }


# method name -> (GenAI memory operation, request attributes, result attributes)
OPERATIONS: dict[str, tuple[str, Describe, Result]] = {
    "add_event": ("create_memory", _event_in, _event_out),
    "add_events": ("create_memory", _no_request, _events_out),
    "remember": ("create_memory", _scope, _record_out),
    "write_records": ("upsert_memory", _no_request, _batch_out),
    "update": ("update_memory", _update_in, _update_out),
    "recall": ("search_memory", _recall_in, _recall_out),
    "forget": ("delete_memory", _forget_in, _forget_out),
}


def _content_in(method: str, args: tuple[Any, ...], kw: Mapping[str, Any]) -> Attrs:
    if method == "recall":
        return {"gen_ai.memory.query.text": _arg(args, kw, "request").query}
    return {}


def _content_out(method: str, result: Any) -> Attrs:
    rows: list[dict[str, Any]] = []
    if method == "recall":
        rows = [
            {"id": it.id, "content": it.text, "score": it.score}
            for it in (*result.pinned, *result.records)
        ]
    elif method in ("remember", "update"):
        rows = [{"id": result.id, "content": result.text}]
    return {"gen_ai.memory.records": json.dumps(rows)} if rows else {}


def memory_call(
    tel: Telemetry,
    tenant: str,
    method: str,
    fn: Callable[..., Any],
    obj: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    """Run one `Memory` method inside its memory span; record its metrics."""
    operation, describe, outcome = OPERATIONS[method]
    attrs: Attrs = {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store.id": tenant,
        "remem.tenant": tenant,
        "remem.operation": method,
        **describe(args, kwargs),
    }
    if tel.capture_content:
        attrs.update(_content_in(method, args, kwargs))
    current, token = enter(tel, tenant)
    result: Any = None
    state = "ok"
    try:
        with _span(tel, operation, attrs) as span:
            result = fn(obj, *args, **kwargs)
            if span is not None:
                done = {**outcome(result), **current.notes}
                if tel.capture_content:
                    done.update(_content_out(method, result))
                _add(span, done)
    except BaseException as exc:
        state = str(getattr(exc, "code", "error"))  # a RememError's code: refused_content, ...
        raise
    finally:
        leave(token)
        if tel.metrics is not None:
            notes = {**attrs, **current.notes}
            tel.metrics.memory_operation(tenant, method, state, result, notes)
    return result


# -- extraction batches -----------------------------------------------------------------


def extraction(
    tel: Telemetry, fn: Callable[..., Any], obj: Any, args: tuple[Any, ...], kw: Mapping[str, Any]
) -> Any:
    """Run one extraction batch (`Pipeline.run_group(tenant, jobs, events)`) in its span."""
    tenant: str = _arg(args, kw, "tenant", 0)
    jobs: Sequence[Any] = _arg(args, kw, "jobs", 1)
    events: Mapping[str, Any] = _arg(args, kw, "events", 2)
    strategy = jobs[0].strategy if jobs else ""
    mine = [events[j.event_id] for j in jobs if j.event_id in events]
    attrs: Attrs = {
        "remem.tenant": tenant,
        "remem.strategy": strategy,
        "remem.extract.job.count": len(jobs),
        "remem.extract.event.count": len(mine),
        "remem.actor": mine[0].actor if mine else None,
        "gen_ai.conversation.id": mine[0].session if mine else None,
    }
    _, token = enter(tel, tenant)
    state = "error"
    result: Any = None
    try:
        with _span(tel, f"extract {strategy}", attrs) as span:
            result = fn(obj, *args, **kw)
            state, done = _extraction_outcome(result)
            _add(span, done)
            if span is not None and state != "done":
                from remem.telemetry import spans

                spans.fail(span, state)
    finally:
        leave(token)
        if tel.metrics is not None:
            tel.metrics.extraction(tenant, strategy, state, len(jobs), result)
    return result


def _extraction_outcome(result: Any) -> tuple[str, Attrs]:
    """'done', 'retry' or 'failed', and the span attributes of a batch's result."""
    if hasattr(result, "retry"):  # `remem.pipeline.jobs.Failed`: the worker backs off or gives up
        return ("retry" if result.retry else "failed"), {"remem.extract.outcome": "failed"}
    return "done", {
        "remem.extract.outcome": "done",
        "remem.extract.records.added": result.records_added,
        "remem.extract.records.updated": result.records_updated,
        "remem.extract.noops": result.noops,
        "remem.extract.refused": result.refused,
    }


# -- model calls ------------------------------------------------------------------------


def model_call(
    current: Active, fn: Callable[..., Any], args: tuple[Any, ...], kw: Mapping[str, Any]
) -> Any:
    """Run `ChatModel.complete(self, messages, schema, *, strategy, prompt_version, calls,
    model)` in an inference span; its attempts (`LLMCall`s) give tokens and outcomes."""
    chat = args[0]
    calls: list[Any] = kw["calls"]
    model = kw.get("model") or chat.settings.model
    where = urlsplit(chat.settings.base_url)
    attrs: Attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "server.address": where.hostname,
        "server.port": where.port,
        "remem.tenant": current.tenant,
        "remem.strategy": kw.get("strategy"),
        "remem.prompt.version": kw.get("prompt_version"),
    }
    tel = current.telemetry
    first = len(calls)
    try:
        with _span(tel, f"chat {model}", attrs, client=True) as span:
            result = fn(*args, **kw)
            _add(span, _usage(calls[first:]))
        return result
    finally:
        if tel.metrics is not None:
            tel.metrics.model_calls(current.tenant, calls[first:])


def _usage(attempts: Sequence[Any]) -> Attrs:
    return {
        "gen_ai.usage.input_tokens": sum(c.prompt_tokens for c in attempts),
        "gen_ai.usage.output_tokens": sum(c.completion_tokens for c in attempts),
        "remem.model.attempts": len(attempts),
    }
