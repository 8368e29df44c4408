"""`fits`: which model's vectors a write may store beside a tenant's (issue 36)."""

from __future__ import annotations

from remem.store.flows.vector_fit import fits


def test_the_first_vectors_of_a_tenant_set_its_model() -> None:
    assert fits([], None, "a", 64)


def test_a_model_held_fits_at_its_own_dimension_only() -> None:
    assert fits([("a", 64)], None, "a", 64)
    assert not fits([("a", 64)], None, "a", 128)


def test_another_model_fits_only_as_the_pending_reindex() -> None:
    assert not fits([("a", 64)], None, "b", 128)
    assert fits([("a", 64)], ("b", 128), "b", 128)
    assert not fits([("a", 64)], ("b", 128), "b", 64)
    assert not fits([("a", 64)], ("b", 128), "c", 128)


def test_the_old_model_fits_while_a_reindex_is_pending_not_after() -> None:
    assert fits([("a", 64)], ("b", 128), "a", 64)  # re-embedded before the switch
    assert not fits([("b", 128)], None, "a", 64)  # after it
