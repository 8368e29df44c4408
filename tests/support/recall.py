"""A two-person conversation written as events, for the recall tests."""

from __future__ import annotations

from remem import Memory
from tests.support.clock import at


def say(mem: Memory, speaker: str, text: str, day: float) -> str:
    return mem.add_event(
        actor="pair", session="s1", role="user", text=text, time=at(day),
        metadata={"speaker": speaker},
    )  # fmt: skip
