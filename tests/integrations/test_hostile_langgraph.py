"""LangGraph's store under hostile input, on every backend: keys and labels that are
not Unicode or hold a NUL, and negative limits, are `InvalidInput` before anything is
read or written (LangGraph's own namespace check lets them through)."""

from __future__ import annotations

import pytest
from langgraph.store.base import ListNamespacesOp, MatchCondition, SearchOp

from remem import InvalidInput
from tests.support.adapters import NS, Backend, call, make, versions


def test_keys_and_labels_that_cannot_be_stored_are_invalid_input(backend: Backend) -> None:
    store = make(backend)
    for bad_key in ("k\ud800", "k\x00"):
        with pytest.raises(InvalidInput, match="key"):
            call(backend, store, "put", NS, bad_key, {"content": "Alice likes tea"})
        with pytest.raises(InvalidInput, match="key"):
            call(backend, store, "get", NS, bad_key)
    with pytest.raises(InvalidInput, match="label"):
        call(backend, store, "put", (*NS, "x\ud800"), "k", {"content": "Alice likes tea"})
    assert versions(backend) == []
    call(backend, store, "put", NS, "k", {"content": "Alice likes tea"})
    assert call(backend, store, "get", NS, "k").value == {"content": "Alice likes tea"}


def test_a_negative_limit_or_offset_is_invalid_input(backend: Backend) -> None:
    store = make(backend)
    call(backend, store, "put", NS, "k", {"content": "Alice likes tea"})
    for op in (
        SearchOp(NS[:2], limit=-1),
        SearchOp(NS[:2], offset=-2),
        ListNamespacesOp((MatchCondition("prefix", NS[:2]),), limit=-1),
    ):
        with pytest.raises(InvalidInput, match=r"limit|offset"):
            call(backend, store, "batch", [op])
    assert [i.key for i in call(backend, store, "search", NS[:2])] == ["k"]
