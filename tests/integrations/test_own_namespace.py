"""`remember(namespace=...)`: a record filed in an application's own namespace under its
actor (what the framework adapters write), on every backend and through the HTTP
service's batch-create and `Client`."""

from __future__ import annotations

import pytest

from remem import InvalidInput
from tests.support.adapters import Backend


def test_remember_in_an_own_namespace_names_records_by_field(backend: Backend) -> None:
    mem = backend.reader
    tenant = backend.tenant or "default"
    space = f"/tenants/{tenant}/actors/alice/app/notes"
    tea = {"text": "Alice likes tea", "value": "tea", "namespace": space}
    a = mem.remember(actor="alice", field="app:a", **tea)
    b = mem.remember(actor="alice", field="app:b", **tea)
    assert a.id != b.id and a.namespace == b.namespace == space
    # the same field again: the same value is the same record, a new one supersedes it
    assert mem.remember(actor="alice", field="app:a", **tea).id == a.id
    green = {"text": "Alice likes green tea", "value": "green tea", "namespace": space}
    c = mem.remember(actor="alice", field="app:a", **green)
    assert c.supersedes == a.id and mem.get(a.id).superseded_by == c.id
    for bad in [f"/tenants/{tenant}/actors/bob/app", f"/tenants/{tenant}/actors/alice/", "x y"]:
        with pytest.raises(InvalidInput, match="namespace"):
            mem.remember(actor="alice", text="Alice likes tea", namespace=bad)
    assert sorted(r.id for r in mem.records(actor="alice")) == sorted([b.id, c.id])
