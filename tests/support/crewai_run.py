"""A real CrewAI crew on `RememMemory`, run in CrewAI's own environment
(`tests.support.venvs`) by tests/integrations/test_crewai.py, which started the
database or `remem serve` and the scripted model this process talks to.

    python -m tests.support.crewai_run '[{"backend": "sqlite", "target": "...", "llm": "..."}]'

Each spec's `backend` is "sqlite" or "postgres" (`target`: the file or URL, opened here
with a `HashEmbedder`, as the test opens it) or "client" (`target`: the server's URL,
`key`: an API key). One process runs every spec in turn (importing CrewAI takes
seconds) and prints one JSON list: for each spec, an object of what each step saw, for
the test to check against what it reads back from remem itself.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def open_backend(spec: dict[str, Any]) -> Any:
    """The `Memory` or `Client` the spec names."""
    if spec["backend"] == "client":
        from remem.service.client import Client

        return Client(spec["target"], spec["key"])
    from remem import Memory
    from remem.embed import HashEmbedder

    return Memory.open(spec["target"], embedder=HashEmbedder())


def refused(call: Any) -> str:
    """The class of the error `call` raised, or "" when it raised none."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return ""


def main(spec: dict[str, Any]) -> dict[str, Any]:
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools.memory_tools import create_memory_tools

    from remem.integrations.crewai import RememMemory

    out: dict[str, Any] = {}
    backend = open_backend(spec)
    try:
        memory = RememMemory(backend, actor="alice")
        llm = LLM(model="openai/fake-model", base_url=spec["llm"], api_key="test")
        agent = Agent(role="Travel agent", goal="Answer about the traveller",
                      backstory="You book trips.", llm=llm)  # fmt: skip
        task = Task(description="Which seat does Alice like on long flights?",
                    expected_output="The seat", agent=agent)  # fmt: skip
        crew = Crew(agents=[agent], tasks=[task], memory=memory)
        out["answer"] = str(crew.kickoff().raw)

        # CrewAI's own memory tools, as an agent's tool calls run them
        tools = {t.name: t for t in create_memory_tools(memory)}
        out["tools"] = sorted(tools)
        out["saved"] = tools["Save to memory"].run(contents=["Alice's dog is called Rex"])
        out["searched"] = tools["Search memory"].run(queries=["what is Alice's dog called?"])

        pets = memory.remember("Alice's cat is called Tom", metadata={"topic": "pets"})
        memory.remember("Alice's car is a red Fiat", metadata={"topic": "cars"})
        out["pets_id"] = pets.id if pets else None
        only = RememMemory(backend, actor="alice", metadata={"topic": "pets"})
        out["filtered"] = [m.record.content for m in only.recall("Alice's cat and car")]
        out["listed"] = [r.content for r in memory.list_records()]
        out["refused"] = {
            "secret": refused(lambda: memory.remember("my password is hunter2x7")),
            "secret_metadata": refused(
                lambda: memory.remember("Alice's fish", metadata={"password": "hunter2-Horse"})
            ),
            "scope": refused(lambda: memory.recall("cat", scope="/other")),
            "reset": refused(memory.reset),
            "forget_all": refused(memory.forget),
            "bobs": refused(lambda: memory.forget(record_ids=[spec["bobs"]])),
            "update": refused(lambda: memory.update(out["pets_id"], content="x")),
            "save_with_a_secret": refused(
                lambda: tools["Save to memory"].run(
                    contents=["Alice's fish is called Nemo", "my password is hunter2x7"]
                )
            ),
        }
        out["forgot"] = memory.forget(record_ids=[out["pets_id"]])
        out["after"] = [m.record.content for m in memory.recall("Alice's cat")]
        out["kinds"] = sorted({m.record.categories[0] for m in memory.recall("Alice's task")})
    finally:
        backend.close()
    return out


if __name__ == "__main__":
    print(json.dumps([main(spec) for spec in json.loads(sys.argv[1])]))
