"""Google ADK's memory service under hostile input, on every backend: an event whose
timestamp no calendar holds is `InvalidInput` (not a raw OverflowError or ValueError),
and the batch it came in stores nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from google.adk.events.event import Event

from remem import InvalidInput
from remem.integrations.google_adk import RememMemoryService
from tests.support.adapters import APP, Backend, stored, user_says


def test_an_event_time_out_of_every_calendar_is_invalid_input(backend: Backend) -> None:
    service = RememMemoryService(backend.memory)
    now = datetime.now(UTC).timestamp()
    for timestamp in (1e20, -1e20, float("nan"), float("inf"), 253402300800.0):
        events = [
            Event(id="ok", author="user", timestamp=now, content=user_says("I live in Lyon")),
            Event(id="odd", author="user", timestamp=timestamp, content=user_says("I like tea")),
        ]
        add = service.add_events_to_memory(app_name=APP, user_id="alice", events=events)
        with pytest.raises(InvalidInput, match="'odd'"):
            asyncio.run(add)
    assert stored(backend, "adk") == []
