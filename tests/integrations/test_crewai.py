"""`RememMemory` against the real CrewAI: a `Crew` whose agent's model is CrewAI's own
OpenAI client pointed at a scripted OpenAI-compatible server on loopback
(`ScriptedLLM`), with remem as its memory, on SQLite, PostgreSQL and a `Client` of a
real `remem serve`; and the docs page's example.

CrewAI cannot be installed beside the [dev] set (tests/support/venvs.py says why):
the crew runs in a child process of CrewAI's own environment, built once from
pyproject.toml's [crewai] and [postgres] extras, on this checkout's source. The test
starts the database, the server and the model, and reads back through remem itself
what the crew wrote. Skipped, with the reason, only when the registry is unreachable
to build that environment."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from remem import Memory, NotFound
from remem.embed import HashEmbedder
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support import ROOT, pg
from tests.support.processes import free_port
from tests.support.servers import running_server
from tests.support.venvs import RegistryUnreachable, framework_python, run_in

ANSWER = "Alice likes aisle seats."
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)


@pytest.fixture(scope="session")
def crewai_python() -> Path:
    try:
        return framework_python("crewai", "crewai", "postgres")
    except RegistryUnreachable as exc:
        pytest.skip(f"CrewAI's environment cannot be built: {exc}")


BACKENDS = ["sqlite", "postgres", "client"]


@pytest.fixture(scope="module")
def crews(
    request: pytest.FixtureRequest, crewai_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[dict[str, Any], Any, ScriptedLLM]]]:
    """The crew's run on each backend, all in one child process (CrewAI takes seconds
    to import): by backend, what it printed, the reader the test checks it through (a
    `Memory` or the server's admin `Client`), and the model it talked to (one per
    backend)."""
    tmp = tmp_path_factory.mktemp("crews")
    with ExitStack() as stack:
        specs: list[dict[str, Any]] = []
        readers: dict[str, Any] = {}
        llms: dict[str, ScriptedLLM] = {}
        for name in BACKENDS:
            llm = llms[name] = stack.enter_context(ScriptedLLM(lambda _r: Reply.text(ANSWER)))
            reader, spec = _backend(stack, name, request, tmp)
            readers[name] = reader
            reader.remember(actor="alice", text="Alice prefers aisle seats on long flights")
            bobs = reader.remember(actor="bob", text="Bob prefers window seats on long flights")
            specs.append({**spec, "backend": name, "llm": llm.base_url, "bobs": bobs.id})
        printed = run_in(crewai_python, "-m", "tests.support.crewai_run", json.dumps(specs))
        outs = json.loads(printed.splitlines()[-1])  # CrewAI may print before it
        runs = zip(BACKENDS, outs, strict=True)
        yield {name: (out, readers[name], llms[name]) for name, out in runs}


def _backend(
    stack: ExitStack, name: str, request: pytest.FixtureRequest, tmp: Path
) -> tuple[Any, dict[str, Any]]:
    """The reader of one backend, kept open by `stack`, and where the crew finds it."""
    if name == "client":
        server = stack.enter_context(running_server(str(tmp / "service.db")))
        return server.client("admin"), {"target": server.url, "key": server.keys["alice"]}
    if name == "postgres":
        admin = request.getfixturevalue("pg_admin_dsn")
        url = pg.as_url(stack.enter_context(pg.fresh_database(admin)))
    else:
        url = str(tmp / "memory.db")
    return stack.enter_context(Memory.open(url, embedder=HashEmbedder())), {"target": url}


@pytest.fixture(params=BACKENDS)
def crew(
    request: pytest.FixtureRequest, crews: dict[str, tuple[dict[str, Any], Any, ScriptedLLM]]
) -> tuple[dict[str, Any], Any, ScriptedLLM]:
    """The crew's run on one backend (see `crews`)."""
    return crews[request.param]


def test_the_crews_agent_is_shown_what_remem_recalls_for_its_user(crew: Any) -> None:
    out, _reader, llm = crew
    assert out["answer"] == "Alice likes aisle seats."
    prompt = json.dumps(llm.requests[0]["messages"])
    assert "Alice prefers aisle seats on long flights" in prompt
    assert "window" not in prompt  # bob's memory is not alice's


def test_the_tasks_outcome_is_an_event_remem_extracts_from(crew: Any) -> None:
    _out, reader, _llm = crew
    events = reader.events(actor="alice", session="crewai")
    texts = [e["text"] if isinstance(e, dict) else e.text for e in events]
    (outcome,) = [t for t in texts if t.startswith("Task: Which seat")]
    assert "Result: Alice likes aisle seats." in outcome
    (event,) = [e for e in events if "Result:" in (e["text"] if isinstance(e, dict) else e.text)]
    meta = event["metadata"] if isinstance(event, dict) else event.metadata
    assert meta["crewai"]["agent_role"] == "Travel agent"


def test_crewais_memory_tools_save_and_search_through_remem(crew: Any) -> None:
    out, reader, _llm = crew
    assert out["tools"] == ["Save to memory", "Search memory"]
    assert "Alice's dog is called Rex" in out["searched"]
    (dog,) = [r for r in reader.records(actor="alice") if r.text == "Alice's dog is called Rex"]
    assert dog.status == "active"


def test_remember_keeps_metadata_and_a_filtered_memory_recalls_only_those(crew: Any) -> None:
    out, reader, _llm = crew
    assert out["filtered"] == ["Alice's cat is called Tom"]
    (car,) = [r for r in reader.records(actor="alice") if "Fiat" in r.text]
    assert car.metadata == {"topic": "cars"}
    assert "Alice's car is a red Fiat" in out["listed"]
    assert not any("window" in text for text in out["listed"])


def test_secrets_narrowing_and_bulk_erasure_are_refused_and_forget_erases(crew: Any) -> None:
    out, reader, _llm = crew
    assert out["refused"] == {
        "secret": "RefusedContent",
        "secret_metadata": "RefusedContent",
        "scope": "InvalidInput",
        "reset": "ErasureUnsupported",
        "forget_all": "ErasureUnsupported",
        "bobs": "NotFound",
        "update": "InvalidInput",
        "save_with_a_secret": "RefusedContent",
    }
    written = [r.text for r in reader.records(actor="alice", all=True)]
    assert not any("hunter2" in text or "Nemo" in text for text in written)  # all or nothing
    assert out["forgot"] == 1 and all("Tom" not in text for text in out["after"])
    assert "event" not in out["kinds"]  # raw events come back only with include_events
    with pytest.raises(NotFound):
        reader.get(out["pets_id"])
    bobs = reader.records(actor="bob")
    assert [r.text for r in bobs] == ["Bob prefers window seats on long flights"]


def test_the_docs_example_runs_and_prints_what_it_shows(
    crewai_python: Path, tmp_path: Path
) -> None:
    blocks = BLOCK.findall((ROOT / "docs" / "frameworks" / "crewai.md").read_text())
    examples = [
        (body, blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text" else None)
        for i, (kind, body) in enumerate(blocks)
        if kind == "python"
    ]
    assert examples, "docs/frameworks/crewai.md has no python example"
    for n, (code, shown) in enumerate(examples, 1):
        script = tmp_path / f"example{n}.py"
        script.write_text(code)
        printed = run_in(crewai_python, str(script), cwd=tmp_path)
        if shown is not None:
            assert printed == shown, f"example {n} of docs/frameworks/crewai.md"


def test_an_unreachable_registry_is_told_apart_from_a_failed_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_TEST_VENVS", str(tmp_path / "venvs"))
    monkeypatch.setenv("UV_INDEX_URL", f"http://127.0.0.1:{free_port()}/simple")  # refused
    monkeypatch.setenv("UV_NO_CACHE", "1")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # uv's three retries would wait 6 s
    with pytest.raises(RegistryUnreachable, match="could not reach the registry"):
        framework_python("crewai", "crewai")
    assert list((tmp_path / "venvs").iterdir()) == []  # no half-built environment is kept
