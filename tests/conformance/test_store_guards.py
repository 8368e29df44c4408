"""What used to hold on one backend only: one write is one tenant's, and deletion records.

A `Write` names its tenant; nothing in it may reach another tenant's rows: a
record of another tenant is refused, a change naming another tenant's record
finds nothing, and another tenant's job is not marked done. A deletion is
logged with a status read off its report: done only when verified.
"""

from __future__ import annotations

import pytest

from remem.errors import StoreError
from remem.model import HistoryEntry, Status
from remem.store.roles import ForgetReport, Scope, StatusChange, Store, Write
from tests.support.store import NOW, ev, put, rec, vec


def test_a_write_with_a_record_of_another_tenant_is_refused_whole(store: Store) -> None:
    mine, theirs = rec("a1", "Likes tea"), rec("b1", "Likes coffee", tenant="t2")
    write = Write(
        tenant="t1",
        inserts=(mine, theirs),
        vectors=(vec(0), vec(1)),
        vector_model="test-8",
        history=(HistoryEntry("a1", "ADD", NOW, "Likes tea", Status.ACTIVE),),
    )
    with pytest.raises(StoreError, match="tenant"):
        store.records.apply(write)
    assert store.records.get_record("t1", "a1") is None
    assert store.records.get_record("t2", "b1") is None
    assert store.records.get_record("t1", "b1") is None
    assert store.records.history("t1", "a1") == []


def test_a_write_cannot_close_a_record_of_another_tenant(store: Store) -> None:
    put(store, rec("b1", "Budget is $500", tenant="t2"))
    close = StatusChange("b1", Status.INVALID, NOW, "a1", "SUPERSEDED")
    write = Write(tenant="t1", inserts=(rec("a1", "Budget is $750"),), changes=(close,))
    with pytest.raises(StoreError):
        store.records.apply(write)
    theirs = store.records.get_record("t2", "b1")
    assert theirs is not None and theirs.status is Status.ACTIVE
    assert theirs.superseded_by is None and theirs.valid_until is None
    assert [h.action for h in store.records.history("t2", "b1")] == ["ADD"]
    assert store.records.get_record("t1", "a1") is None  # the write wrote nothing


def test_a_write_does_not_finish_another_tenants_job(store: Store) -> None:
    store.events.add_events([ev(1, tenant="t2")], ["offline"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert job.tenant == "t2"
    store.records.apply(Write(tenant="t1", inserts=(rec("a1", "Likes tea"),), done_jobs=(job.id,)))
    assert store.jobs.job_counts("t2") == {"pending": 0, "running": 1, "done": 0, "failed": 0}
    # a step naming a job that is not its tenant's is not that job's step: dropped whole
    assert store.records.list_records(Scope("t1", "alice")) == []


def test_a_verified_deletion_is_done_and_keeps_its_counts(store: Store) -> None:
    report = ForgetReport(deleted={"records": 1}, verified=True, remaining={"records": 0})
    job_id = store.erasure.record_deletion("t1", "record", "a1", report, None, NOW)
    (entry,) = store.erasure.deletions("t1")
    assert entry["id"] == job_id
    assert entry["status"] == "done"
    assert entry["target"] == "record" and entry["key"] == "a1"
    assert entry["attempts"] == 1 and entry["last_error"] is None
    assert entry["result"] == {
        "deleted": {"records": 1}, "remaining": {"records": 0}, "verified": True,
    }  # fmt: skip
    assert entry["created_at"].startswith("2026-06-01")


def test_an_unverified_or_failed_deletion_is_failed(store: Store) -> None:
    unverified = ForgetReport(deleted={"records": 1}, verified=False, remaining={"vectors": 1})
    first = store.erasure.record_deletion("t1", "actor", "alice", unverified, None, NOW, attempts=3)
    second = store.erasure.record_deletion("t1", "record", "a9", None, "the database was busy", NOW)
    newest, oldest = store.erasure.deletions("t1")
    assert (newest["id"], oldest["id"]) == (second, first)
    assert oldest["status"] == "failed" and oldest["attempts"] == 3
    assert oldest["result"]["remaining"] == {"vectors": 1}
    assert newest["status"] == "failed" and newest["result"] == {}
    assert newest["last_error"] == "the database was busy"
    assert [d["key"] for d in store.erasure.deletions("t1", limit=1)] == ["a9"]


def test_deletion_records_are_the_tenants_own(store: Store) -> None:
    store.erasure.record_deletion("t1", "record", "a1", ForgetReport(verified=True), None, NOW)
    assert store.erasure.deletions("t2") == []
    assert len(store.erasure.deletions("t1")) == 1


def test_forgetting_a_record_reports_what_went_and_verifies(store: Store) -> None:
    store.events.add_events([ev(1)], [])
    from remem.model import Source

    put(store, rec("a1", "Likes tea", source=Source("event", ("e1",), "offline", "v1")))
    report = store.erasure.forget_record("t1", "a1", NOW)
    assert report.verified and not any(report.remaining.values())
    assert report.deleted["records"] == 1 and report.deleted["event_texts"] == 1
    missing = store.erasure.forget_record("t1", "nope", NOW)
    assert missing.verified is False and missing.deleted == {}
    assert store.erasure.record_deletion("t1", "record", "nope", missing, None, NOW) > 0
    assert store.erasure.deletions("t1")[0]["status"] == "failed"


def test_the_stores_clock_stamps_what_it_writes(clocked_store: Store) -> None:
    from tests.support.store import CLOCK_TIME

    store = clocked_store
    store.events.add_events([ev(1), ev(2)], ["offline"])
    assert {j.updated_at for j in store.jobs.list_jobs("t1")} == {CLOCK_TIME}  # arrival
    j1, _ = store.jobs.claim_jobs(NOW, 10, 60)
    put(store, rec("a1", "Budget is $500"))
    close = StatusChange("a1", Status.INVALID, None, "a2", "SUPERSEDED")
    store.records.apply(Write(tenant="t1", inserts=(rec("a2", "Budget is $750"),), changes=(close,),
                      done_jobs=(j1.id,)))  # fmt: skip
    closed = store.records.get_record("t1", "a1")
    assert closed is not None and closed.updated_at == CLOCK_TIME  # not the wall clock
    done = {j.id: j for j in store.jobs.list_jobs("t1")}[j1.id]
    assert done.status == "done" and done.updated_at == CLOCK_TIME
