"""Test doubles that behave like the real thing, for remem's tests and yours.

`remem.testing.llm_server.ScriptedLLM` is an OpenAI-compatible server on
loopback that a test scripts reply by reply, faults included;
`remem.testing.responders.memory_model` answers remem's own prompts by rule.
"""
