"""The store contract for one actor's view of the tenant's job queue, on every backend.

An actor-narrowed API key sees only the jobs of its actor's events: counts and
lists take an `actor`.
"""

from __future__ import annotations

from remem.store.roles import Store, Write
from tests.support.store import NOW, ev


def test_jobs_are_counted_and_listed_per_actor(store: Store) -> None:
    store.events.add_events(
        [ev(1), ev(2), ev(3, actor="bob"), ev(4, actor="bob"), ev(5, actor="bob", tenant="t2")],
        ["offline"],
    )
    jobs = {j.event_id: j for j in store.jobs.claim_jobs(NOW, 10, 60) if j.tenant == "t1"}
    store.records.apply(Write(tenant="t1", done_jobs=(jobs["e1"].id, jobs["e3"].id)))
    store.jobs.fail_job(jobs["e4"].id, "boom", NOW, max_attempts=1)
    assert store.jobs.job_counts("t1", "alice") == {
        "pending": 0,
        "running": 1,
        "done": 1,
        "failed": 0,
    }
    assert store.jobs.job_counts("t1", "bob") == {
        "pending": 0,
        "running": 0,
        "done": 1,
        "failed": 1,
    }
    assert store.jobs.job_counts("t1", "carol") == {
        "pending": 0,
        "running": 0,
        "done": 0,
        "failed": 0,
    }
    assert store.jobs.job_counts("t2", "bob")["running"] == 1
    assert store.jobs.job_counts("t1") == {"pending": 0, "running": 1, "done": 2, "failed": 1}
    assert [j.event_id for j in store.jobs.list_jobs("t1", actor="alice")] == ["e2", "e1"]
    assert [j.event_id for j in store.jobs.list_jobs("t1", actor="bob")] == ["e4", "e3"]
    (failed,) = store.jobs.list_jobs("t1", status="failed", actor="bob")
    assert (failed.event_id, failed.last_error) == ("e4", "boom")
    assert store.jobs.list_jobs("t1", status="failed", actor="alice") == []
    assert [j.event_id for j in store.jobs.list_jobs("t1", limit=1, actor="bob")] == ["e4"]
    assert [j.event_id for j in store.jobs.list_jobs("t2", actor="bob")] == ["e5"]
