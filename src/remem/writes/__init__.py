"""The write paths beneath `Memory`: events (`events`), records (`records`), and the
input checks they share (`checks`). Each takes the memory's `remem.memory.deps.Deps`."""
