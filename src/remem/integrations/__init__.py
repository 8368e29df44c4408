"""remem inside the frameworks agents are built with: one module per framework.

- `remem.integrations.langgraph`: `RememStore`, LangGraph's `BaseStore` on remem
  (`pip install 'remem[langgraph]'`);
- `remem.integrations.checkpointer`: `RememCheckpointer`, LangGraph's checkpointer on
  remem's thread state (also importable from `remem.integrations.langgraph`);
- `remem.integrations.openai_agents`: `RememSession`, the OpenAI Agents SDK's session
  on remem's event log, and the `remember` / `recall` function tools
  (`pip install 'remem[openai-agents]'`);
- `remem.integrations.google_adk`: `RememMemoryService`, Google ADK's
  `BaseMemoryService` on remem's events, recall and deletion
  (`pip install 'remem[google-adk]'`);
- `remem.integrations.strands`: `RememMemoryStore`, a Strands `MemoryStore` on
  remem's events, recall and deletion (`pip install 'remem[strands]'`);
- `remem.integrations.autogen`: `RememMemory`, AutoGen's `autogen_core.memory.Memory`
  on remem's recall and records (`pip install 'remem[autogen]'`);
- `remem.integrations.llamaindex`: `RememMemoryBlock`, a LlamaIndex memory block on
  remem's recall and events (`pip install 'remem[llamaindex]'`);
- `remem.integrations.crewai`: `RememMemory`, CrewAI's unified `Memory` on remem's
  recall, records and events (`pip install 'remem[crewai]'`, in an environment of
  its own: see docs/frameworks/crewai.md).

`remem.integrations.common` holds what they share (the backend, `ErasureUnsupported`,
erasure of an actor's own record, verified).

Each adapter takes a `Memory`, an `AsyncMemory` or a `Client` and maps the
framework's interface onto remem's own operations, so scope, supersession,
refused secrets and verified deletion hold on every path. Nothing here is
imported by `import remem`; a framework is imported only with its adapter.
"""
