"""remem inside the frameworks agents are built with: one module per framework.

- `remem.integrations.langgraph`: `RememStore`, LangGraph's `BaseStore` on remem
  (`pip install 'remem[langgraph]'`);
- `remem.integrations.openai_agents`: `RememSession`, the OpenAI Agents SDK's session
  on remem's event log, and the `remember` / `recall` function tools
  (`pip install 'remem[openai-agents]'`).

Each adapter takes a `Memory`, an `AsyncMemory` or a `Client` and maps the
framework's interface onto remem's own operations, so scope, supersession,
refused secrets and verified deletion hold on every path. Nothing here is
imported by `import remem`; a framework is imported only with its adapter.
"""
