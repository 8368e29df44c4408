"""OpenTelemetry spans of remem's operations, read back with the SDK's in-memory exporter.

Through the public `Memory` API (on both backends) and through the HTTP service:
memory operations are `gen_ai.memory.client` spans named by operation, extraction
batches and model calls have spans of their own, content appears only when opted in,
and with telemetry off nothing of opentelemetry is even imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from remem import Memory
from remem.config.config import ConfigFile, build
from remem.embed import HashEmbedder
from remem.errors import InvalidInput, RefusedContent
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.open import open_store
from remem.telemetry import Telemetry
from remem.testing.llm_server import ScriptedLLM
from remem.testing.responders import memory_model
from tests.support import SRC as SRC_DIR

SRC = str(SRC_DIR)
SECRET_WORDS = ("vegetarian", "Lisbon", "fish")  # content of the events, records and query


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _no_content(exporter: InMemorySpanExporter) -> None:
    for span in exporter.get_finished_spans():
        shown = json.dumps({k: str(v) for k, v in _attrs(span).items()})
        shown += str(span.status.description or "")
        for word in SECRET_WORDS:
            assert word not in shown, (span.name, word)


def test_memory_operations_are_gen_ai_memory_spans_without_content(
    db: str, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    with Memory.open(db, tenant="acme", embedder=HashEmbedder(), tracer_provider=provider) as mem:
        event_id = mem.add_event(
            actor="alice", session="s1", role="user", text="I'm vegetarian and live in Lisbon"
        )
        mem.process()
        rec = mem.remember(actor="alice", text="I'm vegetarian, no fish")
        packet = mem.recall(actor="alice", query="is alice vegetarian in Lisbon?")
        new = mem.update(rec.id, text="I'm vegetarian, fish is fine")
        report = mem.forget(record_id=new.id)

    (added, remembered) = _named(exporter, "create_memory")
    assert _attrs(added)["gen_ai.operation.name"] == "create_memory"
    assert _attrs(added)["gen_ai.memory.record.id"] == event_id
    assert _attrs(added)["gen_ai.conversation.id"] == "s1"
    assert _attrs(remembered)["gen_ai.memory.record.id"] == rec.id
    assert _attrs(remembered)["gen_ai.memory.record.count"] == 1
    for span in exporter.get_finished_spans():
        if span.name.endswith("_memory"):
            assert span.kind is SpanKind.INTERNAL
            assert _attrs(span)["gen_ai.memory.store.id"] == "acme"
            assert _attrs(span)["remem.tenant"] == "acme"

    (search,) = _named(exporter, "search_memory")
    found = _attrs(search)
    assert packet.records  # the test means something only if recall found memories
    assert found["gen_ai.memory.record.count"] == len(packet.records) + len(packet.pinned)
    assert list(found["remem.memory.record.ids"]) == [it.id for it in packet.records]
    assert found["remem.actor"] == "alice"
    assert found["remem.recall.candidates"] >= len(packet.records)
    assert "gen_ai.memory.query.text" not in found and "gen_ai.memory.records" not in found

    (updated,) = _named(exporter, "update_memory")
    assert _attrs(updated)["gen_ai.memory.record.id"] == rec.id
    assert list(_attrs(updated)["remem.memory.record.ids"]) == [rec.id, new.id]
    (deleted,) = _named(exporter, "delete_memory")
    assert _attrs(deleted)["gen_ai.memory.record.id"] == new.id
    assert _attrs(deleted)["remem.deletion.verified"] is report.verified is True

    (extract,) = _named(exporter, "extract offline")
    done = _attrs(extract)
    assert done["remem.strategy"] == "offline" and done["remem.extract.event.count"] == 1
    assert done["remem.extract.outcome"] == "done"
    assert done["remem.extract.records.added"] >= 1
    _no_content(exporter)


def test_content_is_recorded_only_when_opted_in(
    tmp_path: Path,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider, exporter = spans
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(), tracer_provider=provider) as mem:
        rec = mem.remember(actor="alice", text="I'm vegetarian")
        packet = mem.recall(actor="alice", query="vegetarian")
    (remembered,) = _named(exporter, "create_memory")
    assert json.loads(_attrs(remembered)["gen_ai.memory.records"]) == [
        {"id": rec.id, "content": "I'm vegetarian"}
    ]
    (search,) = _named(exporter, "search_memory")
    assert _attrs(search)["gen_ai.memory.query.text"] == "vegetarian"
    rows = json.loads(_attrs(search)["gen_ai.memory.records"])
    assert [r["id"] for r in rows] == [it.id for it in packet.records]
    assert rows[0]["content"] == "I'm vegetarian" and rows[0]["score"] > 0


def test_a_failed_operation_names_its_error_type_never_its_message(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    with Memory.open(tmp_path / "m.db", embedder=None, tracer_provider=provider) as mem:
        with pytest.raises(RefusedContent):
            mem.remember(actor="alice", text=f"my api key is {secret}")
    (span,) = _named(exporter, "create_memory")
    assert span.status.status_code is StatusCode.ERROR
    assert _attrs(span)["error.type"] == "remem.errors.RefusedContent"
    assert secret not in json.dumps({k: str(v) for k, v in _attrs(span).items()})
    assert secret not in str(span.status.description)


def test_model_calls_are_inference_spans_inside_their_extraction_batch(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    with ScriptedLLM(responder=memory_model) as llm:
        data = {"llm": {"base_url": llm.base_url, "model": "fake"}, "strategies": {"semantic": {}}}
        config = build(ConfigFile.model_validate(data), "test", tmp_path)
        url = llm.base_url
        with Memory.open(
            tmp_path / "m.db", embedder=None, config=config, tracer_provider=provider
        ) as mem:
            mem.add_event(actor="ana", session="s1", role="user", text="I live in Faro.")
            result = mem.process()
    assert result.records_added == 1
    (batch,) = _named(exporter, "extract semantic")
    chats = _named(exporter, "chat fake")
    assert chats and all(c.parent is not None for c in chats)
    assert {c.parent.span_id for c in chats if c.parent} == {batch.context.span_id}
    first = _attrs(chats[0])
    assert chats[0].kind is SpanKind.CLIENT
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "fake"
    assert f"http://{first['server.address']}:{first['server.port']}" in url
    assert first["remem.strategy"] == "semantic" and first["remem.prompt.version"]
    assert first["gen_ai.usage.input_tokens"] > 0 and first["gen_ai.usage.output_tokens"] > 0
    assert _attrs(batch)["remem.extract.records.added"] == 1
    assert "Faro" not in json.dumps({k: str(v) for s in chats for k, v in _attrs(s).items()})


def test_spans_through_the_http_service_carry_the_keys_scope(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    db = str(tmp_path / "s.db")
    store = open_store(db)
    _, key = keyring.create_key(store.keys, tenant="acme", actor="alice")
    store.close()
    app = create_app(
        db, embedder=HashEmbedder(), worker=False, telemetry=Telemetry.create(provider)
    )
    with TestClient(app) as http:
        auth = {"Authorization": f"Bearer {key}"}
        body = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I eat fish"}
        assert http.post("/v1/events", headers=auth, json=body).status_code == 201
        got = http.post("/v1/memories/retrieve", headers=auth, json={"query": "eat fish"})
        assert got.status_code == 200
    (added,) = _named(exporter, "create_memory")
    assert _attrs(added)["remem.tenant"] == "acme"
    (search,) = _named(exporter, "search_memory")
    assert _attrs(search)["remem.actor"] == "alice"
    assert _attrs(search)["gen_ai.memory.record.count"] == len(got.json()["records"]) >= 1
    assert "eat fish" not in json.dumps({k: str(v) for k, v in _attrs(search).items()})


_PROGRAM = """
import sys
from remem import Memory
from remem.embed import HashEmbedder
from remem.telemetry import OFF
with Memory.open(sys.argv[1], embedder=HashEmbedder()) as mem:
    mem.add_event(actor="a", session="s", role="user", text="I'm vegetarian")
    mem.process()
    mem.recall(actor="a", query="vegetarian")
    off = mem.deps.telemetry is OFF
print(off, sorted(m for m in sys.modules if m.startswith(("opentelemetry", "prometheus"))))
"""


def _child(tmp_path: Path, program: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("REMEM_", "OTEL_"))}
    environ.update(PYTHONPATH=SRC, **env)
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path / "child.db")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_off_by_default_and_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    assert _child(tmp_path, _PROGRAM) == "True []"


_GLOBAL = """
import sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from remem import Memory
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with Memory.open(sys.argv[1], embedder=None) as mem:
    mem.remember(actor="a", text="I'm vegetarian")
print([s.name for s in exporter.get_finished_spans()])
"""


def test_remem_otel_sends_spans_to_the_global_provider(tmp_path: Path) -> None:
    assert _child(tmp_path, _GLOBAL) == "[]"
    assert _child(tmp_path, _GLOBAL, REMEM_OTEL="1") == "['create_memory']"


def test_a_memory_takes_a_tracer_provider_or_a_telemetry_not_both(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    with pytest.raises(InvalidInput, match="not both"):
        Memory.open(
            tmp_path / "m.db", tracer_provider=provider, telemetry=Telemetry.create(provider)
        )
    with Memory.open(tmp_path / "m.db", embedder=None, telemetry=Telemetry.create(provider)) as mem:
        mem.remember(actor="a", text="I'm vegetarian")
    assert [s.name for s in exporter.get_finished_spans()] == ["create_memory"]
