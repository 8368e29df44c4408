"""Every role a store offers keeps its protocol, on every backend.

A store is a composition root: `store.events`, `store.jobs`, ... are objects of their
own (`remem.store.roles.ROLES`). Here each role object of each backend is checked
against its protocol: every method the protocol names is there, with the same
parameters (names, kinds, defaults), so a caller written against the protocol (or a
fake of it) works on both. A backend that lacks a role says so (`Store.lacks`) and
its cases are skipped by that declaration, here and in every conformance test that
calls the role (`conftest.py`).
"""

from __future__ import annotations

import inspect

import pytest

from remem.store.roles import ROLES, Store


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    """The public methods a protocol names, with their signatures."""
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if callable(member) and not name.startswith("_")
    }


def _parameters(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    """Each parameter's name, kind and default."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_role_object_keeps_its_protocol(store: Store, role: str) -> None:
    if role in store.lacks:
        pytest.skip(f"{type(store).__name__} declares it lacks {role}")
    held = getattr(store, role)
    wanted = _methods(ROLES[role])
    assert wanted, role  # the check sees the protocol's methods
    for name, signature in wanted.items():
        method = getattr(held, name, None)
        assert callable(method), f"{role}.{name} is missing"
        # the protocol's own signature has `self`; the bound method's does not
        expected = _parameters(signature)[1:]
        found = _parameters(inspect.signature(method))
        assert len(found) == len(expected), f"{role}.{name}"
        for got, want in zip(found, expected, strict=True):
            if want[2] is Ellipsis:  # the protocol says only that there is a default
                got, want = (*got[:2], got[2] is inspect.Parameter.empty), (*want[:2], False)
            assert got == want, f"{role}.{name}"


def test_the_store_declares_what_it_lacks(store: Store) -> None:
    assert isinstance(store.lacks, frozenset)
    assert store.lacks <= set(ROLES)  # only roles it could offer
