"""The path of a memory end to end, through the library, on real SQLite files."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from remem import InvalidInput, Memory, NotFound, Status
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from tests.support.clock import Clock, at


def say(mem: Memory, text: str, day: float, actor: str = "alice", session: str = "s1",
        role: str = "user") -> str:  # fmt: skip
    return mem.add_event(actor=actor, session=session, role=role, text=text, time=at(day))


def texts(mem: Memory, actor: str = "alice", all: bool = False) -> list[str]:
    return [r.text for r in mem.records(actor=actor, all=all)]


def test_event_to_record_to_recall(mem: Memory) -> None:
    eid = say(mem, "I prefer aisle seats on long flights.", 0)
    result = mem.process()
    assert result.jobs_done == 1 and result.records_added >= 1
    packet = mem.recall(actor="alice", query="which seat should I book?", include_events=False)
    assert packet.records, "the preference should be recalled"
    top = packet.records[0]
    assert "aisle" in top.text.lower()
    assert top.source["event_ids"] == [eid]
    assert top.kind == "preference" and top.status == "active"
    assert top.source_date.isoformat() == at(0)


def test_chatter_stores_nothing(mem: Memory) -> None:
    for i, text in enumerate(["hmm, let me think", "ok", "thanks!", "sounds good"]):
        say(mem, text, i)
    result = mem.process()
    assert result.jobs_done == 4
    assert mem.records(actor="alice", all=True) == []


def test_newer_statement_supersedes_older(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500.", 0)
    say(mem, "Our budget increased to $750.", 3)
    result = mem.process()
    assert result.records_updated == 1
    active = mem.records(actor="alice")
    assert any("$750" in r.text for r in active)
    assert not any("$500" in r.text for r in active)
    old = next(r for r in mem.records(actor="alice", all=True) if "$500" in r.text)
    new = next(r for r in active if "$750" in r.text)
    assert old.status is Status.INVALID
    assert old.superseded_by == new.id and new.supersedes == old.id
    assert [h.action for h in mem.history(old.id)] == ["ADD", "SUPERSEDED"]
    packet = mem.recall(actor="alice", query="trip budget", include_events=False)
    assert [it.id for it in packet.records] == [new.id]


def test_valid_at_answers_what_is_known_now_about_then(mem: Memory) -> None:
    # a history imported today (the clock is in June): its records were written now
    say(mem, "Our budget for the trip is $500.", 0)
    say(mem, "Our budget increased to $750.", 3)
    mem.process()
    before = mem.recall(actor="alice", query="trip budget", valid_at=at(1), include_events=False)
    assert ["$500" in it.text for it in before.records] == [True]
    after = mem.recall(actor="alice", query="trip budget", valid_at=at(4), include_events=False)
    assert ["$750" in it.text for it in after.records] == [True]
    ancient = mem.recall(actor="alice", query="trip budget", valid_at=at(-1), include_events=False)
    assert ancient.records == ()
    # as of day 1 nothing of it was known yet: nothing written after a time is known at it
    then = mem.recall(actor="alice", query="trip budget", as_of=at(1), explain=True)
    assert then.records == ()
    assert then.explain is not None
    assert {r["reason"] for r in then.explain["rejected"]} == {
        "written after known_at",
        "received after known_at",
    }


def test_late_arriving_old_event_does_not_overwrite_newer_fact(mem: Memory) -> None:
    say(mem, "Actually I moved to Porto.", 10)
    mem.process()
    say(mem, "I live in Lisbon.", 2)  # older, arrives later
    result = mem.process()
    assert result.late == 1 and result.records_updated == 0
    active = mem.records(actor="alice")
    assert any("Porto" in r.text for r in active)
    assert not any("Lisbon" in r.text for r in active)
    lisbon = next(r for r in mem.records(actor="alice", all=True) if "Lisbon" in r.text)
    assert lisbon.status is Status.INVALID
    assert mem.recall(actor="alice", query="Lisbon", valid_at=at(5), include_events=False).records


def test_correction_in_order_supersedes(mem: Memory) -> None:
    say(mem, "I live in Lisbon.", 0)
    say(mem, "Actually I moved to Porto.", 5)
    mem.process()
    assert any("Porto" in t for t in texts(mem))
    assert not any("Lisbon" in t for t in texts(mem))


def test_near_duplicates_are_not_stored_twice(mem: Memory) -> None:
    say(mem, "I love pizza.", 0)
    say(mem, "I like pizza.", 1)
    result = mem.process()
    assert result.noops == 1
    assert len([t for t in texts(mem) if "pizza" in t.lower()]) == 1


def test_processing_is_idempotent_per_event(mem: Memory, clock: Clock) -> None:
    say(mem, "I'm vegetarian.", 0)
    mem.process()
    first = mem.records(actor="alice", all=True)
    # the same event again (a client retry) is not a second event or job
    mem.add_event(actor="alice", session="s1", role="user", text="I'm vegetarian.",
                  time=at(0), event_id=mem.events(actor="alice")[0].id)  # fmt: skip
    assert mem.process().jobs_done == 0
    assert mem.records(actor="alice", all=True) == first


def test_a_killed_workers_job_is_taken_again_after_its_lease(mem: Memory, clock: Clock) -> None:
    say(mem, "I'm allergic to peanuts.", 0)
    (_job,) = mem.store.jobs.claim_jobs(clock(), 10, 60)  # a worker takes it and dies
    assert mem.process().jobs_done == 0
    clock.advance(seconds=61)
    assert mem.process().jobs_done == 1
    assert any("peanut" in t.lower() for t in texts(mem))


def test_actors_are_isolated(mem: Memory) -> None:
    say(mem, "I'm vegetarian.", 0, actor="alice")
    say(mem, "I love steak.", 0, actor="bob")
    mem.process()
    bob = mem.recall(actor="bob", query="vegetarian diet food")
    assert all("vegetarian" not in it.text.lower() for it in bob.records)
    alice = mem.recall(actor="alice", query="steak")
    assert all("steak" not in it.text.lower() for it in alice.records)


def test_tenants_are_isolated(db_path: Path, clock: Clock) -> None:
    with Memory.open(db_path, tenant="acme", embedder=HashEmbedder(), clock=clock) as a:
        a.remember(actor="u1", text="Prefers window seats")
    with Memory.open(db_path, tenant="globex", embedder=HashEmbedder(), clock=clock) as b:
        assert b.records(actor="u1") == []
        assert b.recall(actor="u1", query="window seats").records == ()
        rid = "nonexistent"
        with pytest.raises(NotFound):
            b.get(rid)
    with Memory.open(db_path, tenant="acme", embedder=HashEmbedder(), clock=clock) as a:
        (rec,) = a.records(actor="u1")
    with Memory.open(db_path, tenant="globex", embedder=HashEmbedder(), clock=clock) as b:
        with pytest.raises(NotFound):
            b.get(rec.id)
        with pytest.raises(NotFound):
            b.forget(record_id=rec.id)


def test_remember_is_confirmed_at_once_and_not_duplicated(mem: Memory) -> None:
    rec = mem.remember(actor="alice", text="My passport expires in June 2027")
    assert rec.status is Status.ACTIVE and rec.authority.value == "confirmed"
    again = mem.remember(actor="alice", text="My passport expires in June 2027")
    assert again.id == rec.id
    assert len(mem.records(actor="alice")) == 1
    assert mem.recall(actor="alice", query="passport expiry").records[0].id == rec.id


def test_remember_with_valid_until_expires(mem: Memory, clock: Clock) -> None:
    mem.remember(actor="alice", text="Staying at the Hotel Granvia this week",
                 valid_until=at(200))  # fmt: skip
    assert mem.recall(actor="alice", query="hotel").records
    clock.now = clock.now.replace(year=2027)
    assert mem.recall(actor="alice", query="hotel", include_events=False).records == ()


def test_raw_events_fill_in_and_are_marked(mem: Memory) -> None:
    say(mem, "The ryokan in Hakone had a wonderful outdoor bath?", 0)  # a question: no record
    mem.process()
    packet = mem.recall(actor="alice", query="ryokan Hakone")
    assert packet.records and packet.records[0].kind == "event"
    assert packet.records[0].status == "event"


def test_budget_is_respected(mem: Memory) -> None:
    for i in range(30):
        mem.remember(actor="alice", text=f"Fact number {i} about the trip to Kyoto and Osaka")
    packet = mem.recall(actor="alice", query="trip Kyoto", k=30, budget=60)
    assert packet.tokens <= 60 and 0 < len(packet.records) < 30
    assert sum(it.tokens for it in packet.records) == packet.tokens


def test_explain_says_why_each_candidate_was_dropped(mem: Memory) -> None:
    say(mem, "Our budget for the trip is $500.", 0)
    say(mem, "Our budget increased to $750.", 3)
    mem.process()
    packet = mem.recall(actor="alice", query="budget", explain=True, k=1)
    assert packet.explain is not None
    reasons = {r["id"]: r["reason"] for r in packet.explain["rejected"]}
    old = next(r for r in mem.records(actor="alice", all=True) if r.status is Status.INVALID)
    assert reasons[old.id].startswith("invalid")
    assert packet.explain["selected"] == [it.id for it in packet.records]


def test_forget_record_and_tombstone_stop_a_stale_job(mem: Memory, clock: Clock) -> None:
    say(mem, "I'm allergic to peanuts.", 0)
    (stale,) = mem.store.jobs.claim_jobs(clock(), 10, 60)  # worker A takes the job, then stalls
    clock.advance(seconds=61)
    assert mem.process().jobs_done == 1  # worker B takes it over after the lease
    (rec,) = mem.records(actor="alice")
    report = mem.forget(record_id=rec.id)
    assert report.verified
    assert mem.records(actor="alice", all=True) == []
    assert mem.recall(actor="alice", query="peanuts allergy", include_events=False).records == ()
    with pytest.raises(NotFound):
        mem.get(rec.id)
    # worker A wakes up and finishes its copy of the job: the tombstone stops it
    result = mem.pipeline.run_jobs([stale])
    assert result.skipped_tombstoned == 1
    assert mem.records(actor="alice", all=True) == []


def test_forget_actor_with_pending_jobs_stays_forgotten(mem: Memory) -> None:
    say(mem, "I'm vegetarian.", 0)
    say(mem, "I live in Lisbon.", 1)
    report = mem.forget(actor="alice")  # before extraction ran
    assert report.verified and report.deleted["events"] == 2
    assert mem.process().records_added == 0
    assert mem.records(actor="alice", all=True) == []
    assert mem.events(actor="alice") == []
    assert mem.recall(actor="alice", query="vegetarian Lisbon").records == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": ""}, "non-empty"),
        ({"text": "   "}, "non-empty"),
        ({"text": "x" * 100_001}, "limit"),
        ({"role": "robot"}, "role"),
        ({"time": "yesterday"}, "not an ISO 8601 time"),
        ({"actor": ""}, "actor"),
        ({"actor": "../etc"}, "actor"),
        ({"text": 42}, "non-empty"),
    ],
)
def test_bad_events_are_refused_and_store_nothing(
    mem: Memory, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"actor": "alice", "session": "s1", "role": "user", "text": "hi"}
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        mem.add_event(**args)  # type: ignore[arg-type]
    assert mem.store.stats()["events"] == 0


def test_one_bad_row_in_a_batch_stores_nothing(mem: Memory) -> None:
    rows = [{"actor": "alice", "session": "s", "role": "user", "text": "I'm vegetarian"},
            {"actor": "alice", "session": "s", "role": "user", "text": ""}]  # fmt: skip
    with pytest.raises(InvalidInput):
        mem.add_events(rows)
    assert mem.store.stats()["events"] == 0


def test_a_bad_row_stops_an_import_at_its_line_keeping_the_rows_before(mem: Memory) -> None:
    row = {"actor": "alice", "session": "s", "role": "user"}
    rows = [{**row, "text": "I'm vegetarian"}, {**row, "text": ""}, {**row, "text": "Porto"}]
    with pytest.raises(InvalidInput, match=r"^line 7: .*lines before line 7 were kept"):
        mem.import_events(rows, batch=10, lines=[3, 7, 9])
    assert [e.text for e in mem.events(actor="alice")] == ["I'm vegetarian"]


def test_an_import_given_fewer_line_numbers_than_rows_stops_where_they_end(mem: Memory) -> None:
    row = {"actor": "alice", "session": "s", "role": "user"}
    rows = [{**row, "text": f"I like figs, kind {i}"} for i in range(4)]
    with pytest.raises(InvalidInput, match=r"^row 3: lines gives 2 line numbers.*were kept"):
        mem.import_events(rows, batch=10, lines=[3, 7])  # rows 3 and 4 were dropped silently
    assert [e.text for e in mem.events(actor="alice")] == [r["text"] for r in rows[:2]]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"k": 0},
        {"budget": 0},
        {"as_of": "not a time"},
        {"namespace": "/tenants/default/actors/bob/"},
    ],
)
def test_bad_recall_is_refused(mem: Memory, kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"actor": "alice", "query": "tea"}
    args.update(kwargs)
    with pytest.raises(InvalidInput):
        mem.recall(**args)  # type: ignore[arg-type]


def test_unknown_record(mem: Memory) -> None:
    with pytest.raises(NotFound):
        mem.get("rec_nope")
    with pytest.raises(NotFound):
        mem.history("rec_nope")
    with pytest.raises(NotFound):
        mem.forget(record_id="rec_nope")


def test_concurrent_writers_lose_nothing_within_a_short_busy_timeout(db_path: Path) -> None:
    # SQLite's busy handler polls with sleeps, so a thread that committed and began again
    # took the file before the others woke: with a 1 s busy timeout two to four of eight
    # writers failed here, and at load 10 the 30 s default was outwaited too. This
    # process's writers now take turns (`remem.store.sqlite.backend._Turns`).
    from remem.store.sqlite.store import SQLiteStore

    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with Memory(SQLiteStore(db_path, busy_timeout=1.0), embedder=None) as m:
                for i in range(50):
                    m.add_event(actor=f"a{n}", session="s", role="user", text=f"note {i}",
                                event_id=f"w{n}-{i}")  # fmt: skip
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    Memory.open(db_path, embedder=None).close()  # create the schema once
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Memory.open(db_path, embedder=None) as m:
        assert m.store.stats()["events"] == 400
        assert m.store.jobs.pending_jobs() == 400


def test_lexical_only_without_an_embedder(db_path: Path, clock: Clock) -> None:
    with Memory.open(db_path, embedder=None, clock=clock, ids=counter_ids()) as m:
        m.add_event(actor="alice", session="s", role="user", text="I prefer aisle seats",
                    time=at(0))  # fmt: skip
        m.process()
        packet = m.recall(actor="alice", query="aisle seats")
        assert packet.records and "lexical only" in packet.notes[0]


def test_forgetting_a_record_erases_its_source_event_text(mem: Memory) -> None:
    eid = say(mem, "I'm allergic to peanuts.", 0)
    mem.process()
    (rec,) = mem.records(actor="alice")
    report = mem.forget(record_id=rec.id)
    assert report.verified and report.deleted["event_texts"] == 1
    (event,) = mem.events(actor="alice")
    assert event.id == eid and event.text == "" and event.metadata == {"forgotten": True}
    packet = mem.recall(actor="alice", query="peanuts allergic")
    assert all("peanut" not in it.text.lower() for it in packet.records)
    (job,) = mem.deletions()
    assert job["id"] == report.job_id and job["status"] == "done"
    assert job["target"] == "record" and job["key"] == rec.id
    assert job["result"]["verified"] is True and job["attempts"] == 1


def test_each_forget_is_a_logged_job(mem: Memory) -> None:
    say(mem, "I'm vegetarian.", 0)
    mem.process()
    first = mem.forget(actor="alice")
    second = mem.forget(actor="alice")  # nothing left: still verified, still logged
    assert first.verified and second.verified and second.deleted["events"] == 0
    jobs = mem.deletions()
    assert [j["id"] for j in jobs] == [second.job_id, first.job_id]
    assert all(j["target"] == "actor" and j["status"] == "done" for j in jobs)


def test_a_correction_supersedes_and_keeps_history(mem: Memory) -> None:
    say(mem, "I'm vegetarian.", 0)
    say(mem, "that's wrong \u2014 I'm not vegetarian any more", 5)
    mem.process()
    (active,) = [r for r in mem.records(actor="alice") if r.field == "diet"]
    assert active.value == "not vegetarian"
    (old,) = [r for r in mem.records(actor="alice", all=True) if r.status is Status.INVALID]
    assert old.superseded_by == active.id
    assert [h.action for h in mem.history(old.id)] == ["ADD", "SUPERSEDED"]


def test_policy_that_cannot_decide_keeps_both_and_names_the_conflict(
    mem: Memory, clock: Clock
) -> None:
    confirmed = mem.remember(
        actor="alice", text="Lives in Lisbon", field="home", value="Lisbon"
    )  # explicit and confirmed
    clock.advance(days=30)
    say(mem, "I moved to Porto.", 100)  # newer, but only inferred by the extractor
    mem.process()
    active = [r for r in mem.records(actor="alice") if r.field == "home city"]
    assert {r.value for r in active} == {"Lisbon", "Porto"}
    assert mem.get(confirmed.id).status is Status.ACTIVE
    packet = mem.recall(actor="alice", query="where does she live, Lisbon or Porto")
    (conflict,) = packet.conflicts
    assert conflict["field"] == "home city"
    assert set(conflict["record_ids"]) == {r.id for r in active}
    assert "which is current" in conflict["question"]


def test_update_supersedes_with_links_and_history(mem: Memory) -> None:
    old = mem.remember(actor="alice", text="Prefers window seats", kind="preference")
    new = mem.update(old.id, text="Prefers aisle seats", by="support-agent")
    assert new.supersedes == old.id and new.authority.value == "confirmed"
    closed = mem.get(old.id)
    assert closed.status is Status.INVALID and closed.superseded_by == new.id
    assert mem.history(old.id)[-1].action == "SUPERSEDED"
    assert [r.id for r in mem.records(actor="alice")] == [new.id]
    with pytest.raises(Exception, match="only an active record"):
        mem.update(old.id, text="again")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        # a string names one (issue 36: a built-in name, a folder or a URL), else refused
        ("embedder", "no-such-embedder", "is none of default, minilm"),
        ("embedder", object(), "embedder must be an Embedder"),
        ("clock", 5, "clock must be callable"),
        ("ids", "ulid", "ids must be callable"),
    ],
)
def test_a_wrong_kind_of_option_is_refused_when_opening(
    tmp_path: Path, option: str, value: object, message: str
) -> None:
    # the wrong thing is refused at once, not later inside a worker's job
    db = tmp_path / "m.db"
    with pytest.raises(InvalidInput, match=message):
        Memory.open(db, **{option: value})  # type: ignore[arg-type]
    if option == "embedder":
        assert not db.exists()  # refused before any file was made


def test_a_released_write_turn_goes_to_the_thread_that_waited_first(tmp_path: Path) -> None:
    from remem.store.sqlite.store import _file_writer

    turns = _file_writer(str(tmp_path / "x.db"))
    order: list[str] = []
    assert turns.acquire(timeout=1)

    def wait_in_line() -> None:
        assert turns.acquire(timeout=5)
        order.append("waiter")
        turns.release()

    waiter = threading.Thread(target=wait_in_line)
    waiter.start()
    while not turns._queue:  # the waiter is in line
        threading.Event().wait(0.001)
    turns.release()
    assert turns.acquire(timeout=5)  # the releasing thread asks again at once: it queues
    order.append("releaser")
    waiter.join()
    assert order == ["waiter", "releaser"]
    turns.release()
    assert turns._owner is None
    assert turns.acquire(timeout=1)
    late: list[bool] = []
    impatient = threading.Thread(target=lambda: late.append(turns.acquire(timeout=0.05)))
    impatient.start()
    impatient.join()
    assert late == [False] and not turns._queue  # gave up, and left the line
    turns.release()
