"""An event time of "" is refused like one of only spaces, on every write path.

Written against an inconsistency: the library took an event time of "" as "now"
while one of spaces was refused (and over HTTP and MCP both were refused, as every
time field is). Now an event time is absent (None: the clock's now) or an ISO 8601
string; a blank one is refused with the field named, and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput

BLANK = ["", "   ", "\t"]


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as opened:
        yield opened


@pytest.mark.parametrize("blank", BLANK)
def test_a_blank_event_time_is_refused_on_add_event(mem: Memory, blank: str) -> None:
    with pytest.raises(InvalidInput, match="event time"):
        mem.add_event(actor="alice", session="s", role="user", text="I live in Porto", time=blank)
    assert mem.events(actor="alice") == []


@pytest.mark.parametrize("blank", BLANK)
def test_a_blank_event_time_in_a_batch_or_import_stores_nothing(mem: Memory, blank: str) -> None:
    rows = [
        {"actor": "alice", "session": "s", "role": "user", "text": "I live in Porto"},
        {"actor": "alice", "session": "s", "role": "user", "text": "I like tea", "time": blank},
    ]
    with pytest.raises(InvalidInput, match="event time"):
        mem.add_events(rows)
    with pytest.raises(InvalidInput, match="event time"):
        mem.import_events(rows[1:])  # (an import keeps the rows before a bad one: resumable)
    assert mem.events(actor="alice") == []


def test_an_absent_event_time_is_the_clocks_now(mem: Memory) -> None:
    mem.add_event(actor="alice", session="s", role="user", text="I live in Porto", time=None)
    (stored,) = mem.events(actor="alice")
    assert abs((stored.time - mem.deps.clock()).total_seconds()) < 60
