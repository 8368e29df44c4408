"""The store contract: events and outbox, records and history, scoped search, deletion."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from remem.errors import ConflictError, StoreError
from remem.model import (
    Authority,
    Event,
    HistoryEntry,
    Kind,
    LLMCall,
    Role,
    Sensitivity,
    Source,
    Status,
)
from remem.store.roles import FIELD_PREFIX_MOST, Scope, StatusChange, Store, Write
from tests.support.store import NOW, T, ev, put, rec, vec


def test_add_events_writes_one_job_per_event_and_strategy(store: Store) -> None:
    assert store.events.add_events([ev(1), ev(2)], ["offline", "other"]) == [True, True]
    assert store.jobs.pending_jobs() == 4
    jobs = store.jobs.claim_jobs(NOW, 10, 60)
    assert sorted((j.event_id, j.strategy) for j in jobs) == [
        ("e1", "offline"), ("e1", "other"), ("e2", "offline"), ("e2", "other"),
    ]  # fmt: skip


def test_repeated_client_id_is_not_a_second_event(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    retry = replace(ev(1), time=T + timedelta(days=3), metadata={"retry": True})
    assert store.events.add_events([retry], ["offline"]) == [False]
    events = store.events.list_events("t1", "alice")
    assert [(e.text, e.time, e.metadata) for e in events] == [("I like tea", ev(1).time, {})]
    assert store.jobs.pending_jobs() == 1


@pytest.mark.parametrize(
    "change",
    [
        {"actor": "bob"},
        {"session": "s2"},
        {"role": Role.ASSISTANT},
        {"text": "different text"},
    ],
)
def test_a_client_id_reused_by_a_different_event_is_refused_and_the_batch_writes_nothing(
    store: Store, change: dict[str, object]
) -> None:
    store.events.add_events([ev(1)], ["offline"])
    other = replace(ev(1), **change)  # type: ignore[arg-type]
    with pytest.raises(ConflictError, match="already used in this tenant by a different event"):
        store.events.add_events([ev(2), other, ev(3)], ["offline"])
    assert [e.id for e in store.events.list_events("t1", "alice")] == ["e1"]
    assert store.events.list_events("t1", "bob") == []
    assert store.jobs.pending_jobs() == 1


def test_a_conflict_message_never_shows_the_other_event(store: Store) -> None:
    store.events.add_events([ev(1, actor="alice", text="my secret plan")], ["offline"])
    with pytest.raises(ConflictError) as caught:
        store.events.add_events([ev(1, actor="mallory", text="probe")], ["offline"])
    message = str(caught.value)
    assert "e1" in message and "unique per tenant" in message
    assert "alice" not in message and "secret plan" not in message


def test_a_batch_that_reuses_its_own_id_is_one_event_or_a_conflict(store: Store) -> None:
    assert store.events.add_events([ev(1), ev(1)], ["offline"]) == [True, False]
    with pytest.raises(ConflictError):
        store.events.add_events([ev(2), ev(2, text="not the same")], ["offline"])
    assert [e.id for e in store.events.list_events("t1", "alice")] == ["e1"]


def test_same_client_id_in_two_tenants_is_two_events(store: Store) -> None:
    store.events.add_events([ev(1, tenant="t1"), ev(1, tenant="t2")], ["offline"])
    assert len(store.events.list_events("t1", "alice")) == 1
    assert len(store.events.list_events("t2", "alice")) == 1


def test_events_are_listed_by_their_own_time_not_arrival(store: Store) -> None:
    store.events.add_events([ev(5, text="later"), ev(1, text="earlier")], [])
    assert [e.text for e in store.events.list_events("t1", "alice")] == ["earlier", "later"]
    (last,) = store.events.get_events("t1", ["e5"])
    assert [e.text for e in store.events.session_context(last, 5)] == ["earlier"]


@pytest.mark.parametrize("year", [1, 999, 9999])
def test_times_of_any_year_are_kept_and_ordered(store: Store, year: int) -> None:
    odd = datetime(year, 1 if year < 9999 else 12, 1, 0, 0, 7, 123456, tzinfo=UTC)
    store.events.add_events([replace(ev(1, text="odd"), time=odd), ev(2, text="now")], ["offline"])
    listed = store.events.list_events("t1", "alice")
    assert [(e.text, e.time) for e in listed] == sorted(
        [("odd", odd), ("now", ev(2).time)], key=lambda p: p[1]
    )
    assert store.events.get_events("t1", ["e1"])[0].time == odd
    (job, _) = sorted(store.jobs.claim_jobs(NOW, 10, 60), key=lambda j: j.event_id)
    assert job.event_id == "e1"


def test_a_claimed_job_is_not_claimed_again_until_its_lease_ends(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert store.jobs.claim_jobs(NOW + timedelta(seconds=30), 10, 60) == []
    (again,) = store.jobs.claim_jobs(NOW + timedelta(seconds=61), 10, 60)
    assert again.id == job.id and again.attempts == 2


def test_done_job_is_never_claimed_again(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    store.records.apply(Write(tenant="t1", done_jobs=(job.id,)))
    assert store.jobs.claim_jobs(NOW + timedelta(hours=1), 10, 60) == []
    assert store.jobs.pending_jobs() == 0


def test_failed_job_is_retried_then_marked_failed(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    for attempt in range(1, 4):
        (job,) = store.jobs.claim_jobs(NOW, 10, 60)
        assert job.attempts == attempt
        store.jobs.fail_job(job.id, "boom", NOW)
    assert store.jobs.claim_jobs(NOW, 10, 60) == []
    assert store.stats()["jobs_failed"] == 1


def test_records_round_trip_with_every_field(store: Store) -> None:
    r = rec("r1", "Budget is $500", field="budget", value="$500", flags=("x",),
            valid_until=T + timedelta(days=3), authority=Authority.CONFIRMED,
            sensitivity=Sensitivity.PERSONAL)  # fmt: skip
    put(store, r)
    assert store.records.get_record("t1", "r1") == r
    assert store.records.get_record("t2", "r1") is None


def test_status_change_closes_and_links_record(store: Store) -> None:
    put(store, rec("r1", "Budget is $500", field="budget", value="$500"))
    new = rec("r2", "Budget is $750", field="budget", value="$750", supersedes="r1")
    store.records.apply(
        Write(
            tenant="t1",
            inserts=(new,),
            changes=(
                StatusChange("r1", Status.INVALID, T + timedelta(days=5), "r2", "SUPERSEDED"),
            ),
            history=(HistoryEntry("r1", "SUPERSEDED", NOW, None, Status.INVALID, "r2"),),
        )
    )
    old = store.records.get_record("t1", "r1")
    assert old is not None and old.status is Status.INVALID
    assert old.superseded_by == "r2" and old.valid_until == T + timedelta(days=5)
    assert [h.action for h in store.records.history("t1", "r1")] == ["ADD", "SUPERSEDED"]
    by_field = store.records.records_by_field(Scope("t1", "alice"), "budget")
    assert {r.id for r in by_field} == {"r1", "r2"}


def test_records_by_field_prefix_reads_a_family_of_one_scope(store: Store) -> None:
    put(
        store,
        rec("a1", "Is allergic to shellfish", field="allergy:shellfish", value="allergic"),
        rec("a2", "Is allergic to sesame", field="allergy:sesame", value="allergic"),
        rec("a3", "Allergic reactions are rare", field="allergyx", value="x"),
        rec("a4", "No field"),
        rec("b1", "Is allergic to kiwi", actor="bob", field="allergy:kiwi", value="allergic"),
    )
    put(store, rec("c1", "Is allergic to kiwi", tenant="t2", field="allergy:kiwi", value="x"))
    found = store.records.records_by_field_prefix(Scope("t1", "alice"), "allergy:")
    assert {r.id for r in found} == {"a1", "a2"}
    assert store.records.records_by_field_prefix(Scope("t1", "alice"), "relation:") == []


def test_records_by_field_prefix_reads_at_most_its_bound_newest_first(store: Store) -> None:
    many = [
        rec(f"s{i:03}", f"Wants style {i}", field=f"answer_style:a{i:03}", value="x",
            valid_from=T + timedelta(minutes=i))
        for i in range(FIELD_PREFIX_MOST + 5)
    ]  # fmt: skip
    put(store, *many, vectors=False)
    found = store.records.records_by_field_prefix(Scope("t1", "alice"), "answer_style:")
    assert [r.id for r in found] == [r.id for r in reversed(many)][:FIELD_PREFIX_MOST]


def test_records_by_field_prefix_of_now_reads_only_what_recall_may_return(
    store: Store,
) -> None:
    style = {"field": "answer_style:format", "value": "x"}
    put(
        store,
        rec("now", "Wants bullet points", **style),
        rec("old", "Wants prose", status=Status.INVALID, superseded_by="now", **style),
        rec("gone", "Wants tables", valid_until=NOW - timedelta(days=1), **style),
        rec("later", "Wants haiku", valid_from=NOW + timedelta(days=1), **style),
        rec("asked", "Wants emoji", status=Status.PROPOSED, **style),
        vectors=False,
    )
    scope = Scope("t1", "alice")
    found = store.records.records_by_field_prefix(scope, "answer_style:", current_at=NOW)
    assert [r.id for r in found] == ["now"]
    every = store.records.records_by_field_prefix(scope, "answer_style:")
    assert {r.id for r in every} == {"now", "old", "gone", "later"}  # as before: not proposed


def test_records_by_field_prefix_as_of_reads_what_may_have_been_held(store: Store) -> None:
    style = {"field": "answer_style:format", "value": "x"}
    put(
        store,
        rec("then", "Wants prose", status=Status.INVALID, created_at=T, **style),
        rec("now", "Wants bullet points", valid_from=NOW, created_at=NOW, **style),
        vectors=False,
    )
    found = store.records.records_by_field_prefix(
        Scope("t1", "alice"), "answer_style:", held_at=(NOW - timedelta(days=1), T)
    )
    assert [r.id for r in found] == ["then"]  # "now" was written after, valid from after


def test_records_by_field_prefix_reads_only_its_namespace(store: Store) -> None:
    style = {"field": "answer_style:format", "value": "x"}
    put(
        store,
        rec("work", "Wants bullet points", namespace="/work/a_b", **style),
        rec("home", "Wants prose", namespace="/home", **style),
        rec("like", "Wants tables", namespace="/workxa_b", **style),  # `_` is no wildcard
        vectors=False,
    )
    narrowed = Scope("t1", "alice", namespace_prefix="/work/a_")
    found = store.records.records_by_field_prefix(narrowed, "answer_style:")
    assert [r.id for r in found] == ["work"]


def test_lexical_search_is_scoped_to_tenant_and_actor(store: Store) -> None:
    put(store, rec("a1", "Loves green tea"), rec("a2", "Hates coffee"))
    put(store, rec("b1", "Loves green tea", actor="bob"))
    put(store, rec("c1", "Loves green tea", tenant="t2"))
    hits = store.search.search_records(Scope("t1", "alice"), "green tea", 10)
    assert [h.id for h in hits] == ["a1"]
    assert [h.id for h in store.search.search_records(Scope("t1", "bob"), "tea", 10)] == ["b1"]
    assert store.search.search_records(Scope("t1", "carol"), "tea", 10) == []


def test_lexical_search_survives_fts_syntax_in_queries(store: Store) -> None:
    put(store, rec("a1", "Loves green tea"))
    for q in ['"', "tea AND", "NEAR(", "*", "tea OR )", "col:tea", "", "   "]:
        hits = store.search.search_records(Scope("t1", "alice"), q, 10)
        assert all(h.id == "a1" for h in hits)


def test_namespace_prefix_escapes_like_wildcards(store: Store) -> None:
    put(store, rec("a1", "Loves tea", namespace="/tenants/t1/actors/alice/facts"))
    narrow = Scope("t1", "alice", "/tenants/t1/actors/al_ce/")
    assert store.search.search_records(narrow, "tea", 10) == []
    assert store.records.list_records(narrow) == []
    ok = Scope("t1", "alice", "/tenants/t1/actors/alice/")
    assert [r.id for r in store.records.list_records(ok)] == ["a1"]


def nearest(store: Store, scope: Scope, seed: int, **kw: object) -> list[str]:
    hits = store.search.vector_search(scope, "test-8", vec(seed), 10, NOW, **kw)  # type: ignore[arg-type]
    return [rid for rid, _ in hits]


def test_vector_search_is_scoped_ranked_and_follows_changes(store: Store) -> None:
    put(store, rec("a1", "one"), rec("a2", "two"))  # vectors vec(0), vec(1)
    put(store, rec("b1", "three", actor="bob"))  # vec(0) too, in bob's scope
    alice = Scope("t1", "alice")
    assert nearest(store, alice, 0) == ["a1", "a2"]
    assert nearest(store, alice, 1) == ["a2", "a1"]
    hits = store.search.vector_search(alice, "test-8", vec(0), 10, NOW)
    assert abs(hits[0][1] - 1.0) < 1e-3 and hits[0][1] > hits[1][1]
    put(store, rec("a3", "four"))  # vec(0) again
    assert set(nearest(store, alice, 0)) == {"a1", "a2", "a3"}
    assert nearest(store, Scope("t1", "nobody"), 0) == []
    assert store.search.vector_search(alice, "other-model", vec(0), 10, NOW) == []


def test_vector_search_masks_status_and_validity(store: Store) -> None:
    put(store, rec("a1", "one", valid_until=NOW - timedelta(days=1)), rec("a2", "two"))
    alice = Scope("t1", "alice")
    assert nearest(store, alice, 0) == ["a2"]  # a1 expired
    store.records.apply(
        Write(
            tenant="t1",
            changes=(StatusChange("a2", Status.INVALID, NOW, None, "INVALIDATE"),),
        )
    )
    assert nearest(store, alice, 0) == []
    past = store.search.vector_search(alice, "test-8", vec(0), 10, T, include_invalid=True)
    assert [rid for rid, _ in past] == ["a1", "a2"]


def test_record_vectors_come_back_as_stored(store: Store) -> None:
    put(store, rec("a1", "one"))
    got = store.search.record_vectors("t1", ["a1", "missing"], "test-8")
    assert list(got) == ["a1"] and got["a1"].dtype == np.float32
    assert np.allclose(got["a1"], vec(0), atol=1e-3)  # SQLite keeps float16
    assert store.search.record_vectors("t1", ["a1"], "other-model") == {}


def test_event_search_is_scoped(store: Store) -> None:
    store.events.add_events(
        [ev(1, text="flight to Kyoto"), ev(2, actor="bob", text="flight to Kyoto")], []
    )
    assert [h.id for h in store.search.search_events(Scope("t1", "alice"), "Kyoto", 10)] == ["e1"]


def test_forget_record_erases_every_surface_and_tombstones_its_events(store: Store) -> None:
    put(store, rec("a1", "Loves green tea"), rec("a2", "Hates coffee"))
    report = store.erasure.forget_record("t1", "a1", NOW)
    assert report.verified and report.deleted["records"] == 1
    assert report.deleted["vectors"] == 1 and report.deleted["fulltext"] == 1
    assert store.records.get_record("t1", "a1") is None
    assert store.search.search_records(Scope("t1", "alice"), "green tea", 10) == []
    assert nearest(store, Scope("t1", "alice"), 0) == ["a2"]
    assert all(h.text is None for h in store.records.history("t1", "a1"))
    assert store.records.history("t1", "a1")[-1].action == "DELETE"
    assert store.erasure.is_tombstoned("t1", "alice", ["src-a1"])
    assert not store.erasure.is_tombstoned("t1", "alice", ["src-a2"])


def test_forget_actor_erases_only_that_actor(store: Store) -> None:
    store.events.add_events([ev(1), ev(2, actor="bob")], ["offline"])
    put(store, rec("a1", "Loves green tea"))
    put(store, rec("b1", "Loves green tea", actor="bob"))
    report = store.erasure.forget_actor("t1", "alice", NOW)
    assert report.verified and report.deleted["events"] == 1 and report.deleted["records"] == 1
    assert store.events.list_events("t1", "alice") == []
    assert store.search.search_events(Scope("t1", "alice"), "tea", 10) == []
    assert store.records.list_records(Scope("t1", "alice")) == []
    assert [r.id for r in store.records.list_records(Scope("t1", "bob"))] == ["b1"]
    assert len(store.events.list_events("t1", "bob")) == 1
    assert store.erasure.is_tombstoned("t1", "alice", ["e1"])  # it arrived before the erasure
    assert not store.erasure.is_tombstoned("t1", "bob", ["e2"])
    assert (
        store.erasure.erased_at("t1", "alice") == NOW
        and store.erasure.erased_at("t1", "bob") is None
    )
    assert store.jobs.pending_jobs("t1") == 1  # bob's job remains, alice's is gone


def test_an_erased_actors_later_events_are_a_fresh_start(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    store.erasure.forget_actor("t1", "alice", NOW)
    assert store.events.add_events([ev(5, text="I like coffee")], ["offline"]) == [True]
    assert not store.erasure.is_tombstoned("t1", "alice", ["e5"])  # stored after the erasure
    assert store.erasure.is_tombstoned("t1", "alice", ["e1", "e5"])  # e1 was erased
    assert store.jobs.pending_jobs("t1") == 1  # the new event's job
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert job.event_id == "e5"
    put(store, rec("a5", "Likes coffee", source=Source("event", ("e5",), "offline", "v1")))
    assert [r.id for r in store.records.list_records(Scope("t1", "alice"))] == ["a5"]
    later = NOW + timedelta(days=1)
    store.erasure.forget_actor("t1", "alice", later)  # a second erasure moves the tombstone's time
    assert store.erasure.erased_at("t1", "alice") == later
    assert store.erasure.is_tombstoned("t1", "alice", ["e5"])
    assert store.records.list_records(Scope("t1", "alice")) == []


def test_a_write_from_work_an_erasure_overtook_is_dropped(store: Store) -> None:
    store.events.add_events([ev(1), ev(2, actor="bob")], ["offline"])
    jobs = {j.event_id: j for j in store.jobs.claim_jobs(NOW, 10, 60)}  # a worker took both
    store.erasure.forget_actor("t1", "alice", NOW)  # and alice is erased while it extracts
    late = Source("event", ("e1",), "offline", "v1")
    store.records.apply(Write(tenant="t1", inserts=(rec("a1", "Likes tea", source=late),),
                      done_jobs=(jobs["e1"].id,)))  # fmt: skip
    assert store.records.list_records(Scope("t1", "alice"), limit=10) == []
    bobs = Source("event", ("e2",), "offline", "v1")
    store.records.apply(
        Write(
            tenant="t1",
            inserts=(rec("b1", "Likes tea", actor="bob", source=bobs),),
            done_jobs=(jobs["e2"].id,),
        )
    )
    assert [r.id for r in store.records.list_records(Scope("t1", "bob"))] == ["b1"]
    assert store.jobs.pending_jobs("t1") == 0


def test_a_write_from_a_forgotten_records_events_is_dropped(store: Store) -> None:
    store.events.add_events([ev(1)], [])
    made = Source("event", ("e1",), "offline", "v1")
    put(store, rec("a1", "Likes tea", source=made))
    store.erasure.forget_record("t1", "a1", NOW)
    put(store, rec("a2", "Likes tea a lot", source=made))  # a late job's copy of a1
    assert store.records.list_records(Scope("t1", "alice")) == []


def test_erasing_the_actor_lifts_its_record_level_tombstones(store: Store) -> None:
    store.events.add_events([ev(1)], [])
    put(store, rec("a1", "Likes tea", source=Source("event", ("e1",), "offline", "v1")))
    store.erasure.forget_record("t1", "a1", NOW)
    assert store.erasure.is_tombstoned("t1", "alice", ["e1"])
    store.erasure.forget_actor("t1", "alice", NOW)
    store.events.add_events([ev(1, text="I like coffee")], [])  # the same id, in a fresh start
    assert not store.erasure.is_tombstoned("t1", "alice", ["e1"])


def test_events_with_records(store: Store) -> None:
    put(store, rec("a1", "Loves green tea"))
    assert store.records.events_with_records("t1", ["src-a1", "other"]) == {"src-a1": ["active"]}
    assert store.records.events_with_records("t2", ["src-a1"]) == {}


def test_events_with_records_counts_each_record_and_leaves_summaries_out(store: Store) -> None:
    made = Source("event", ("e1",), "offline", "v1")
    covers = Source("summary", ("e1", "e2"), "offline-summary", "v1")
    summary = rec("s1", "Summary: food", kind=Kind.SUMMARY, source=covers, status=Status.INVALID)
    put(store, rec("a1", "Is vegetarian", source=made), rec("a2", "Hates cilantro", source=made),
        summary)  # fmt: skip
    found = store.records.events_with_records("t1", ["e1", "e2"])
    assert sorted(found["e1"]) == ["active", "active"]
    assert "e2" not in found  # only a summary covers it


def test_event_vectors_are_scoped_and_follow_erasure(store: Store) -> None:
    store.events.add_events([ev(1), ev(2), ev(3, actor="bob")], [])
    e1, e2 = store.events.list_events("t1", "alice")
    (b3,) = store.events.list_events("t1", "bob")
    store.search.add_event_vectors("t1", [(e1, vec(0)), (e2, vec(1)), (b3, vec(0))], "test-8")
    alice = Scope("t1", "alice")
    hits = store.search.vector_search_events(alice, "test-8", vec(0), 10, NOW)
    assert [eid for eid, _ in hits] == ["e1", "e2"]
    assert store.search.vector_search_events(alice, "other", vec(0), 10, NOW) == []
    assert store.search.vector_search_events(alice, "test-8", vec(0), 10, T) == []  # before both
    report = store.erasure.forget_actor("t1", "alice", NOW)
    assert report.verified and report.deleted["event_vectors"] == 2
    assert store.search.vector_search_events(alice, "test-8", vec(0), 10, NOW) == []
    assert [
        e
        for e, _ in store.search.vector_search_events(Scope("t1", "bob"), "test-8", vec(0), 5, NOW)
    ] == ["e3"]


def test_events_near_stay_in_their_session_with_their_distance(store: Store) -> None:
    other = Event("x9", "t1", "alice", "s2", Role.USER, "elsewhere", T + timedelta(minutes=2))
    bobs = Event("b1", "t1", "bob", "s1", Role.USER, "bob's", T + timedelta(minutes=2))
    same_time = Event("e6", "t1", "alice", "s1", Role.USER, "tied", T + timedelta(minutes=5))
    store.events.add_events([ev(i) for i in range(1, 6)] + [other, bobs, same_time], [])
    e1, e3, e5 = ev(1), ev(3), ev(5)

    def near(event: Event, reach: int = 2) -> list[tuple[int, str]]:
        found = store.events.events_near([event], reach).get(event.id, [])
        return sorted((d, e.id) for d, e in found)

    assert near(e3) == [(1, "e2"), (1, "e4"), (2, "e1"), (2, "e5")]
    assert near(e1) == [(1, "e2"), (2, "e3")]
    assert near(e3, reach=1) == [(1, "e2"), (1, "e4")]
    # e5 and e6 share a time: arrival order breaks the tie, as in the thread log
    assert near(e5) == [(1, "e4"), (1, "e6"), (2, "e3")]
    assert near(other) == [] and near(bobs) == []
    many = store.events.events_near([e1, e5, other], 1)
    assert {k: sorted(e.id for _, e in v) for k, v in many.items()} == {
        "e1": ["e2"],
        "e5": ["e4", "e6"],
    }
    assert store.events.events_near([], 2) == {} and store.events.events_near([e3], 0) == {}


# -- the extraction worker's jobs (schema: run_after, leases, llm_calls) ------------------


def test_a_failed_job_waits_until_its_retry_time(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    retry_at = NOW + timedelta(minutes=5)
    assert store.jobs.fail_job(job.id, "timeout", NOW, retry_at=retry_at) == "pending"
    assert store.jobs.claim_jobs(NOW + timedelta(minutes=4), 10, 60) == []
    (info,) = store.jobs.list_jobs("t1")
    assert info.run_after == retry_at and info.last_error == "timeout"
    (again,) = store.jobs.claim_jobs(retry_at, 10, 60)
    assert again.id == job.id and again.attempts == 2


def test_a_job_fails_for_good_after_max_attempts(store: Store) -> None:
    store.events.add_events([ev(1)], ["offline"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert store.jobs.fail_job(job.id, "bad answer", NOW, max_attempts=2) == "pending"
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert store.jobs.fail_job(job.id, "bad answer", NOW, max_attempts=2) == "failed"
    assert store.jobs.claim_jobs(NOW + timedelta(days=1), 10, 60) == []
    assert store.jobs.fail_job(job.id, "late", NOW) == "gone"  # no longer running
    assert store.jobs.fail_job(10_000, "no such job", NOW) == "gone"
    assert store.jobs.job_counts("t1")["failed"] == 1


def test_claim_can_take_only_some_strategies(store: Store) -> None:
    store.events.add_events([ev(1), ev(2)], ["semantic", "summary", "episodic"])
    jobs = store.jobs.claim_jobs(NOW, 10, 60, strategies=["summary"])
    assert sorted((j.event_id, j.strategy) for j in jobs) == [("e1", "summary"), ("e2", "summary")]
    assert store.jobs.claim_jobs(NOW, 10, 60, strategies=["summary"]) == []
    assert store.jobs.claim_jobs(NOW, 10, 60, strategies=[]) == []
    rest = store.jobs.claim_jobs(NOW, 10, 60)
    assert {j.strategy for j in rest} == {"semantic", "episodic"} and len(rest) == 4


def test_heartbeat_keeps_a_lease_alive_past_its_first_end(store: Store) -> None:
    store.events.add_events([ev(1), ev(2)], ["offline"])
    first, second = store.jobs.claim_jobs(NOW, 10, 60)
    assert store.jobs.heartbeat([first.id], NOW + timedelta(seconds=50), 60) == 1
    # at 90 s the first lease (60 s) is over, but the heartbeat moved it to 110 s
    (taken,) = store.jobs.claim_jobs(NOW + timedelta(seconds=90), 10, 60)
    assert taken.id == second.id  # only the job nobody kept alive
    assert store.jobs.claim_jobs(NOW + timedelta(seconds=100), 10, 60) == []
    store.records.apply(Write(tenant="t1", done_jobs=(first.id,)))
    assert store.jobs.heartbeat([first.id], NOW + timedelta(seconds=100), 60) == 0
    assert store.jobs.heartbeat([], NOW, 60) == 0


def test_jobs_are_listed_and_counted_per_tenant_and_status(store: Store) -> None:
    store.events.add_events([ev(1), ev(2), ev(3), ev(4, tenant="t2")], ["offline"])
    jobs = {j.event_id: j for j in store.jobs.claim_jobs(NOW, 3, 60)}  # e1, e2, e3 of t1
    store.records.apply(Write(tenant="t1", done_jobs=(jobs["e1"].id,)))
    store.jobs.fail_job(jobs["e2"].id, "boom", NOW, max_attempts=1)
    assert store.jobs.job_counts("t1") == {"pending": 0, "running": 1, "done": 1, "failed": 1}
    assert store.jobs.job_counts("t2") == {"pending": 1, "running": 0, "done": 0, "failed": 0}
    assert store.jobs.job_counts("t3") == {"pending": 0, "running": 0, "done": 0, "failed": 0}
    listed = store.jobs.list_jobs("t1")
    assert [j.event_id for j in listed] == ["e3", "e2", "e1"]  # newest first
    assert [j.status for j in listed] == ["running", "failed", "done"]
    (failed,) = store.jobs.list_jobs("t1", status="failed")
    assert (failed.event_id, failed.attempts, failed.last_error) == ("e2", 1, "boom")
    assert failed.strategy == "offline" and failed.updated_at == NOW
    assert [j.event_id for j in store.jobs.list_jobs("t2")] == ["e4"]
    assert [j.event_id for j in store.jobs.list_jobs("t1", limit=1)] == ["e3"]
    assert store.jobs.list_jobs("t1", status="pending") == []


def test_retry_puts_failed_jobs_back_with_fresh_attempts(store: Store) -> None:
    store.events.add_events([ev(1), ev(2), ev(3, tenant="t2")], ["offline"])
    for job in store.jobs.claim_jobs(NOW, 10, 60):
        store.jobs.fail_job(job.id, "boom", NOW, max_attempts=1)
    assert store.jobs.job_counts("t1")["failed"] == 2
    assert store.jobs.retry_jobs("t1") == 2
    assert store.jobs.job_counts("t1") == {"pending": 2, "running": 0, "done": 0, "failed": 0}
    assert store.jobs.job_counts("t2")["failed"] == 1  # another tenant's jobs stay as they were
    assert store.jobs.retry_jobs("t1") == 0
    assert store.jobs.retry_jobs("t1", statuses=()) == 0
    again = store.jobs.claim_jobs(NOW, 10, 60)
    assert sorted(j.event_id for j in again) == ["e1", "e2"]
    assert all(j.attempts == 1 for j in again)


def test_model_calls_are_logged_and_summed_per_tenant(store: Store) -> None:
    store.model_calls.record_llm_calls(
        "t1",
        [
            LLMCall("semantic", "gpt-x", "v1", 100, 20, 0.5, True, job_id=1),
            LLMCall("semantic", "gpt-x", "v1", 50, 0, 1.25, False, error="timeout"),
        ],
    )
    store.model_calls.record_llm_calls("t2", [LLMCall("summary", "local", "v2", 7, 3, 0.1, True)])
    store.model_calls.record_llm_calls("t1", [])
    usage = store.model_calls.llm_usage("t1")
    assert usage == {
        "calls": 2, "errors": 1, "prompt_tokens": 150, "completion_tokens": 20, "seconds": 1.75,
        "calls_with_dropped_items": 0,
    }  # fmt: skip
    assert (
        store.model_calls.llm_usage("t2")["calls"] == 1
        and store.model_calls.llm_usage("t2")["prompt_tokens"] == 7
    )
    assert store.model_calls.llm_usage("t3") == {
        "calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
        "calls_with_dropped_items": 0,
    }  # fmt: skip
    # a usable answer with items dropped for naming unlisted events: an ok call with a note
    note = "dropped 1 item(s) naming events not listed (99; the prompt listed 1-1)"
    store.model_calls.record_llm_calls(
        "t4", [LLMCall("semantic", "m", "v1", 1, 1, 0.1, True, note, 2, 1)]
    )
    assert store.model_calls.llm_usage("t4")["calls_with_dropped_items"] == 1
    assert store.model_calls.llm_usage("t4")["errors"] == 0


def test_one_write_marks_every_job_it_came_from_done(store: Store) -> None:
    store.events.add_events([ev(1), ev(2), ev(3)], ["offline"])
    j1, j2, j3 = store.jobs.claim_jobs(NOW, 10, 60)
    store.records.apply(
        Write(
            tenant="t1",
            inserts=(rec("a1", "Loves tea"),),
            vectors=(vec(0),),
            vector_model="test-8",
            done_jobs=(j1.id, j2.id),
        )
    )
    assert store.records.get_record("t1", "a1") is not None
    assert {j.event_id: j.status for j in store.jobs.list_jobs("t1")} == {
        "e1": "done", "e2": "done", "e3": "running",
    }  # fmt: skip
    # a write that fails writes nothing and leaves its jobs undone
    broken = Write(
        tenant="t1",
        inserts=(rec("a2", "Hates coffee"),),
        changes=(StatusChange("missing", Status.INVALID, NOW, None, "INVALIDATE"),),
        done_jobs=(j3.id,),
    )
    with pytest.raises(StoreError):
        store.records.apply(broken)
    assert store.records.get_record("t1", "a2") is None
    assert store.jobs.job_counts("t1") == {"pending": 0, "running": 1, "done": 2, "failed": 0}


def test_one_job_can_be_run_again_unless_it_is_running(store: Store) -> None:
    store.events.add_events([ev(1)], ["summary"])
    (job,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert store.jobs.requeue_job("t1", "e1", "summary") is False  # a worker holds it
    store.records.apply(Write(tenant="t1", done_jobs=(job.id,)))
    assert store.jobs.requeue_job("t2", "e1", "summary") is False  # another tenant's: none
    assert store.jobs.requeue_job("t1", "e1", "other") is False
    assert store.jobs.requeue_job("t1", "e1", "summary") is True
    (again,) = store.jobs.claim_jobs(NOW, 10, 60)
    assert (again.id, again.attempts) == (job.id, 1)


def _done(
    store: Store, tenant: str, actor: str, rid: str, op: str, outcome: dict[str, Any]
) -> None:
    entry = store.ledger.claim_request(tenant, actor, rid, op, None, None, f"tok-{actor}", 60)
    assert entry.token == f"tok-{actor}" and entry.outcome is None
    assert store.ledger.finish_request(tenant, actor, rid, f"tok-{actor}", outcome)


def test_a_request_id_is_claimed_once_then_keeps_its_first_outcome(store: Store) -> None:
    first = store.ledger.claim_request("t1", "alice", "req-1", "create", None, "sha-a", "tok-a", 60)
    assert (first.token, first.operation, first.outcome) == ("tok-a", "create", None)
    assert first.digest == "sha-a"  # what the request asked, kept to compare a repeat with
    # a second claimant, while the first runs: the claim is not its own
    second = store.ledger.claim_request("t1", "alice", "req-1", "delete", "r9", None, "tok-b", 60)
    assert second.token == "tok-a" and second.operation == "create" and second.outcome is None
    assert not store.ledger.finish_request("t1", "alice", "req-1", "tok-b", {"record_id": "r9"})
    assert store.ledger.finish_request("t1", "alice", "req-1", "tok-a", {"record_id": "r1"})
    again = store.ledger.claim_request("t1", "alice", "req-1", "create", None, "sha-c", "tok-c", 60)
    assert (again.token, again.outcome, again.digest) == (None, {"record_id": "r1"}, "sha-a")
    # another tenant's request id of the same name is its own
    other = store.ledger.claim_request("t2", "alice", "req-1", "update", "r2", None, "tok-d", 60)
    assert other.token == "tok-d" and other.outcome is None


def test_two_actors_with_one_request_id_have_two_entries(store: Store) -> None:
    _done(store, "t1", "alice", "r1", "create", {"record_id": "rec-alice"})
    bob = store.ledger.claim_request("t1", "bob", "r1", "create", None, None, "tok-bob", 60)
    assert bob.token == "tok-bob" and bob.outcome is None and bob.actor == "bob"
    assert store.ledger.finish_request("t1", "bob", "r1", "tok-bob", {"record_id": "rec-bob"})
    alice = store.ledger.claim_request("t1", "alice", "r1", "create", None, None, "tok-x", 60)
    assert alice.outcome == {"record_id": "rec-alice"}
    bob = store.ledger.claim_request("t1", "bob", "r1", "create", None, None, "tok-x", 60)
    assert bob.outcome == {"record_id": "rec-bob"}


def test_a_released_or_expired_claim_is_taken_again(store: Store) -> None:
    store.ledger.claim_request("t1", "alice", "r1", "create", None, None, "tok-a", 60)
    store.ledger.release_request("t1", "alice", "r1", "tok-a")  # the write failed
    assert (
        store.ledger.claim_request("t1", "alice", "r1", "create", None, None, "tok-b", 60).token
        == "tok-b"
    )
    # a claimant that died: no outcome, and its lease has passed
    store.ledger.claim_request("t1", "alice", "r2", "create", None, "sha-1", "tok-dead", -1)
    taken = store.ledger.claim_request("t1", "alice", "r2", "create", None, "sha-2", "tok-new", 60)
    assert taken.token == "tok-new" and taken.outcome is None and taken.digest == "sha-2"
    assert not store.ledger.finish_request("t1", "alice", "r2", "tok-dead", {"record_id": "late"})
    assert store.ledger.finish_request("t1", "alice", "r2", "tok-new", {"record_id": "rec-2"})


def test_a_request_is_found_by_its_target_once_final(store: Store) -> None:
    store.ledger.claim_request("t1", "alice", "d1", "delete", "rec-9", None, "tok-a", 60)
    assert store.ledger.request_for_target("t1", "d1", "rec-9") is None  # not final yet
    store.ledger.finish_request("t1", "alice", "d1", "tok-a", {"record_id": "rec-9"})
    found = store.ledger.request_for_target("t1", "d1", "rec-9")
    assert found is not None and (found.actor, found.operation) == ("alice", "delete")
    assert store.ledger.request_for_target("t2", "d1", "rec-9") is None
    assert store.ledger.request_for_target("t1", "d1", "rec-8") is None


def test_forget_actor_drops_its_request_ids(store: Store) -> None:
    _done(store, "t1", "alice", "req-a", "create", {"record_id": "r1"})
    _done(store, "t1", "bob", "req-b", "create", {"record_id": "r2"})
    report = store.erasure.forget_actor("t1", "alice", NOW)
    assert report.verified and report.deleted["requests"] == 1
    assert (
        store.ledger.claim_request("t1", "alice", "req-a", "create", None, None, "t", 60).outcome
        is None
    )
    assert (
        store.ledger.claim_request("t1", "bob", "req-b", "create", None, None, "t", 60).outcome
        is not None
    )
