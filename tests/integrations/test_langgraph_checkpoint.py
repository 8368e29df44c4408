"""`RememCheckpointer`: LangGraph's own conformance suite on every backend, a graph that
is interrupted, resumed in another process and time-travelled, and erasure by actor."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from remem.errors import InvalidInput, RefusedContent
from remem.integrations.langgraph import RememCheckpointer
from remem.thread import api
from tests.support.adapters import Backend
from tests.support.secrets import OPENAI

# a graph of two steps with a person's approval between them, as a user would write it
GRAPH = textwrap.dedent(
    """
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict):
        order: str
        steps: list[str]
        approved: str

    def quote(state: State) -> dict:
        return {"steps": state["steps"] + ["quote " + state["order"]]}

    def approve(state: State) -> dict:
        answer = interrupt({"question": "refund " + state["order"] + "?"})
        return {"approved": answer, "steps": state["steps"] + ["approved"]}

    def pay(state: State) -> dict:
        return {"steps": state["steps"] + ["paid " + state["approved"]]}

    def build(saver):
        g = StateGraph(State)
        g.add_node("quote", quote)
        g.add_node("approve", approve)
        g.add_node("pay", pay)
        g.add_edge(START, "quote")
        g.add_edge("quote", "approve")
        g.add_edge("approve", "pay")
        g.add_edge("pay", END)
        return g.compile(checkpointer=saver)
    """
)

# a process that opens remem as the test says, builds the graph and runs one command
RUN = textwrap.dedent(
    """
    import json, os, sys
    from langgraph.types import Command
    from remem import Memory
    from remem.integrations.langgraph import RememCheckpointer
    from remem.service.client import Client
    from graph import build

    where = os.environ["REMEM_AT"]
    if where.startswith("http"):
        memory = Client(where, os.environ["REMEM_KEY"])
    else:
        memory = Memory.open(where)
    graph = build(RememCheckpointer(memory, actor="u42"))
    config = {"configurable": {"thread_id": "refund-981"}}
    if sys.argv[1] == "start":
        out = graph.invoke({"order": "981", "steps": [], "approved": ""}, config)
    else:
        out = graph.invoke(Command(resume=sys.argv[2]), config)
    print(json.dumps({k: v for k, v in out.items() if k != "__interrupt__"}
                     | {"interrupted": "__interrupt__" in out}))
    """
)


def _saver(backend: Backend, actor: str = "u42") -> RememCheckpointer:
    return RememCheckpointer(backend.memory, actor=actor)


def test_langgraph_conformance_suite_passes(backend: Backend) -> None:
    @checkpointer_test(name=f"RememCheckpointer[{backend.name}]")
    async def remem_saver() -> AsyncIterator[RememCheckpointer]:
        yield _saver(backend)

    report = asyncio.run(validate(remem_saver))
    failures = {cap: result.failures for cap, result in report.results.items() if result.failures}
    assert report.passed_all_base(), failures
    base = ("put", "put_writes", "get_tuple", "list", "delete_thread")
    assert all(report.results[c].tests_passed > 0 for c in base)


@pytest.mark.parametrize("backend", ["sqlite", "client"], indirect=True)
def test_a_graph_resumes_in_another_process_and_travels_back(
    backend: Backend, tmp_path: Path
) -> None:
    (tmp_path / "graph.py").write_text(GRAPH)
    (tmp_path / "run.py").write_text(RUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    if backend.server is not None:
        env |= {"REMEM_AT": backend.server.url, "REMEM_KEY": backend.server.keys["admin"]}
    else:
        env["REMEM_AT"] = str(backend.reader.deps.store.path)

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, str(tmp_path / "run.py"), *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return out

    first = run("start")
    assert first["interrupted"] and first["steps"] == ["quote 981"]
    # the interrupt is thread state remem can see: a workflow awaiting approval
    waiting = [
        cp for cp in _scan(backend, "u42") if cp.awaiting_approval and cp.state.data["task_id"]
    ]
    assert len(waiting) == 1

    second = run("resume", "yes")  # a new process: nothing of the first is in memory
    assert second == {
        "order": "981", "steps": ["quote 981", "approved", "paid yes"],
        "approved": "yes", "interrupted": False,
    }  # fmt: skip

    # time travel, in this process, beside the same commands on LangGraph's own saver
    sys.path.insert(0, str(tmp_path))
    try:
        from graph import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    config = {"configurable": {"thread_id": "refund-981"}}
    reference = build(InMemorySaver())
    reference.invoke({"order": "981", "steps": [], "approved": ""}, config)
    reference.invoke(Command(resume="yes"), config)
    seen = _travel(build(_saver(backend)), config)
    assert seen == _travel(reference, config)
    assert seen[0] == [(), ("pay",), ("approve",), ("quote",), ("__start__",)]
    assert seen[-1]["steps"] == ["quote 981", "approved", "paid no"]


def _travel(graph: Any, config: dict[str, Any]) -> list[Any]:
    """Back to the checkpoint before the approval: replayed as it is (its recorded answer
    stands), then forked with another order and answered differently. What was seen."""
    from langgraph.types import Command

    def shown(out: dict[str, Any]) -> dict[str, Any]:
        asked = [i.value for i in out.get("__interrupt__", [])]
        return {k: v for k, v in out.items() if k != "__interrupt__"} | {"asked": asked}

    history = list(graph.get_state_history(config))
    before = history[2]
    seen: list[Any] = [[h.next for h in history], [t.interrupts[0].value for t in before.tasks]]
    seen.append(shown(graph.invoke(Command(resume="no"), before.config)))
    seen.append(shown(graph.invoke(None, before.config)))
    fork = graph.update_state(before.config, {"order": "982"})
    seen.append(shown(graph.invoke(None, fork)))
    seen.append(shown(graph.invoke(Command(resume="no"), config)))
    seen.append(len(list(graph.get_state_history(config))))
    seen.append(graph.get_state(config).values)
    return seen


def test_forget_actor_erases_its_threads_only(backend: Backend) -> None:
    from langgraph.checkpoint.conformance.test_utils import (
        generate_checkpoint,
        generate_config,
        generate_metadata,
    )

    mine, theirs = _saver(backend, "u42"), _saver(backend, "u43")
    for saver in (mine, theirs):
        stored = saver.put(generate_config("t1"), generate_checkpoint(), generate_metadata(), {})
        saver.put_writes(stored, [("ch", "v")], "task-1")
    assert mine.get_tuple(generate_config("t1")) is not None

    report = backend.reader.forget(actor="u42")
    assert report.verified

    assert mine.get_tuple(generate_config("t1")) is None
    assert list(mine.list(None)) == []
    assert _scan(backend, "u42") == []
    kept = theirs.get_tuple(generate_config("t1"))
    assert kept is not None and kept.pending_writes == [("task-1", "ch", "v")]


def test_a_secret_in_graph_state_is_refused_and_nothing_is_stored(backend: Backend) -> None:
    from langgraph.checkpoint.conformance.test_utils import (
        generate_checkpoint,
        generate_config,
        generate_metadata,
    )

    saver = _saver(backend)
    leaked = generate_checkpoint(channel_values={"messages": [f"my key is {OPENAI}"]})
    with pytest.raises(RefusedContent) as refused:
        saver.put(generate_config("t-secret"), leaked, generate_metadata(), {"messages": 1})
    assert OPENAI not in str(refused.value)
    stored = saver.put(generate_config("t-secret"), generate_checkpoint(), generate_metadata(), {})
    with pytest.raises(RefusedContent):
        saver.put_writes(stored, [("messages", {"text": OPENAI})], "task-1")
    tup = saver.get_tuple(stored)
    assert tup is not None and tup.pending_writes == []


def test_a_checkpoint_too_large_is_refused_whole(backend: Backend) -> None:
    from langgraph.checkpoint.conformance.test_utils import (
        generate_checkpoint,
        generate_config,
        generate_metadata,
    )

    saver = _saver(backend)
    big = generate_checkpoint(channel_values={"blob": "x" * 300_000})
    with pytest.raises(InvalidInput, match="bytes"):
        saver.put(generate_config("t-big"), big, generate_metadata(), {"blob": 1})
    assert saver.get_tuple(generate_config("t-big")) is None


def _scan(backend: Backend, actor: str) -> list[Any]:
    if backend.server is not None:
        return list(backend.reader.checkpoint_scan(actor=actor, prefix="lg."))
    return api.checkpoint_scan(backend.reader, actor=actor, prefix="lg.")
