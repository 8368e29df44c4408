"""What the flows written once (`remem.store.flows.events`, `remem.store.flows.jobs`) made hold
on every backend, where the two copies had drifted apart.

An `add_events` call with several tenants' events was one transaction on
SQLite and one per tenant on PostgreSQL, so a refused event of the second
tenant left the first tenant's events written there. A claim of no jobs (a
limit of 0 or less) claimed every ready job on SQLite (`LIMIT -1` is no limit
there) and was refused by PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from remem.policy.events import EventIdTaken
from remem.store.roles import Store
from tests.support.store import NOW, ev


def test_a_refused_event_of_one_tenant_writes_nothing_of_the_call(store: Store) -> None:
    store.events.add_events([ev(1, tenant="t2")], ["offline"])
    other = ev(1, tenant="t2", text="a different event under a taken id")
    with pytest.raises(EventIdTaken) as refused:
        store.events.add_events([ev(5, tenant="t1"), ev(6, tenant="t1"), other], ["offline"])
    assert refused.value.index == 2  # its place in the call
    assert store.events.get_events("t1", ["e5", "e6"]) == []
    assert store.jobs.job_counts("t1") == {"pending": 0, "running": 0, "done": 0, "failed": 0}
    # the same call without the refused event writes both tenants' events, once each
    assert store.events.add_events([ev(5, tenant="t1"), ev(1, tenant="t2")], ["offline"]) == [
        True,
        False,
    ]
    assert [e.id for e in store.events.get_events("t1", ["e5", "e6"])] == ["e5"]
    assert store.jobs.pending_jobs() == 2


def test_a_claim_of_no_jobs_takes_none(store: Store) -> None:
    store.events.add_events([ev(1), ev(2)], ["offline"])
    for limit in (0, -1):
        assert store.jobs.claim_jobs(NOW, limit, 60) == []
        assert store.jobs.claim_jobs(NOW, limit, 60, strategies=["offline"]) == []
    assert store.jobs.job_counts("t1")["pending"] == 2
    taken = store.jobs.claim_jobs(NOW + timedelta(seconds=1), 10, 60)
    assert sorted(j.event_id for j in taken) == ["e1", "e2"]
