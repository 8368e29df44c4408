"""The write paths beneath `Memory`: events (`events`), records (`records`), and the
input checks they share (`checks`); the application's own batches of create / update /
delete (`batch`) and the request ledger that runs a write with a request id at most once
(`ledger`). Each takes the memory's `remem.memory.deps.Deps`. `request` holds what a face
asks of them (`RememberAsk`, `ImportAsk`), built once and passed through."""

from __future__ import annotations

from remem.writes.request import ImportAsk, RememberAsk

__all__ = ["ImportAsk", "RememberAsk"]
