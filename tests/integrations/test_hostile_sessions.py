"""The OpenAI Agents session and the Strands store under hostile input, on every
backend: what is not a list of items, or a message of another shape, is `InvalidInput`
with nothing stored, never a TypeError or AttributeError, never silently dropped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from remem import InvalidInput
from remem.integrations.openai_agents import RememSession
from tests.support.adapters import Backend, make_store

OK = {"role": "user", "content": [{"text": "I like tea"}]}


def test_session_items_that_are_not_a_list_are_invalid_input(backend: Backend) -> None:
    session = RememSession("s", backend.memory, actor="alice")
    items: Any
    for items in (None, {"role": "user", "content": "hi"}, "hi", 5):
        with pytest.raises(InvalidInput, match="must be a list"):
            asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items()) == []


def test_strands_messages_of_another_shape_are_invalid_input(backend: Backend) -> None:
    store = make_store(backend)
    messages: Any
    for messages in (
        "I like tea",
        None,
        ["I like tea"],
        [OK, {"role": "user", "content": "I like coffee"}],  # content is a list of blocks
        [OK, 5],
    ):
        with pytest.raises(InvalidInput, match="must be a"):
            asyncio.run(store.add_messages(messages, None))
    assert backend.reader.events(actor="alice", session="strands") == []
    assert asyncio.run(store.add_messages([OK], None)) == {"added": 1}
