"""As-of recall is bi-temporal on every backend: what was known at one time about
another (issue 21, item 6), through `Memory` on the store under test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from remem import Memory, Packet
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.store.roles import Store
from remem.timeutil import utcnow
from tests.support.clock import Clock

# both records match its words: the time axes, not the ranking, decide which is held
QUERY = "Did Ana live in Porto, or did she move to Lyon?"
MARCH_1 = "2026-03-01T00:00:00Z"
MID_JANUARY = "2026-01-15T00:00:00Z"
MID_FEBRUARY = "2026-02-15T00:00:00Z"


@pytest.fixture
def moved(store: Store) -> Iterator[tuple[Memory, dict[str, str]]]:
    """Ana said she lived in Porto on 5 January (written then); that she had moved to
    Lyon on 1 February reached remem only on 10 March (an import from another channel)."""
    clock = Clock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    mem = Memory(store, embedder=HashEmbedder(), clock=clock, ids=counter_ids())
    mem.add_event(actor="ana", session="s1", role="user", text="I live in Porto.", time=clock())
    mem.process()
    clock.now = datetime(2026, 3, 10, 9, tzinfo=UTC)
    mem.add_event(
        actor="ana", session="s2", role="user", text="I moved to Lyon.", time="2026-02-01T10:00Z"
    )
    mem.process()
    ids = {r.text.split()[-1]: r.id for r in mem.records(actor="ana", all=True)}
    assert set(ids) == {"Porto", "Lyon"}  # the precondition: one record each, Lyon superseding
    yield mem, ids


def records(packet: Packet) -> list[str]:
    return [it.text.split()[-1] for it in packet.records if it.kind != "event"]


def test_what_the_agent_believed_on_1_march_about_where_the_user_lived_in_january(
    moved: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = moved
    believed = mem.recall(
        actor="ana", query=QUERY, known_at=MARCH_1, valid_at=MID_JANUARY, explain=True
    )
    assert records(believed) == ["Porto"]
    assert believed.explain is not None
    assert believed.explain["known_at"].startswith("2026-03-01")
    assert believed.explain["valid_at"].startswith("2026-01-15")
    reasons = {r["id"]: r["reason"] for r in believed.explain["rejected"]}
    assert reasons[ids["Lyon"]] == "written after known_at"
    # what is known now about January is the same: Lyon only began in February
    assert records(mem.recall(actor="ana", query=QUERY, valid_at=MID_JANUARY)) == ["Porto"]


def test_as_of_leaves_out_a_record_written_later_about_an_earlier_time(
    moved: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = moved
    # Lyon is valid from 1 February, but on 1 March nobody knew: Porto was current then,
    # though superseded since with a validity (to 1 February) that excludes 1 March
    then = mem.recall(actor="ana", query=QUERY, as_of=MARCH_1, explain=True)
    assert records(then) == ["Porto"]
    assert then.explain is not None and then.explain["as_of"].startswith("2026-03-01")
    reasons = {r["id"]: r["reason"] for r in then.explain["rejected"]}
    assert reasons[ids["Lyon"]] == "written after known_at"
    # no vector search of 1 March finds Porto as stored now: gathered back from Lyon
    assert ids["Porto"] in [v["id"] for v in then.explain["vector"]]
    assert mem.fact(actor="ana", field="home", as_of=MARCH_1).line() == "home city: Porto"
    # about mid-February: believed Porto on 1 March, known to be Lyon now
    assert records(mem.recall(actor="ana", query=QUERY, known_at=MARCH_1,
                              valid_at=MID_FEBRUARY)) == ["Porto"]  # fmt: skip
    now_about = mem.recall(actor="ana", query=QUERY, valid_at=MID_FEBRUARY, explain=True)
    assert records(now_about) == ["Lyon"]
    assert now_about.explain is not None
    reasons = {r["id"]: r["reason"] for r in now_about.explain["rejected"]}
    assert reasons[ids["Porto"]] == f"superseded before known_at by {ids['Lyon']}"
    # and now
    assert records(mem.recall(actor="ana", query=QUERY)) == ["Lyon"]


def test_known_at_alone_is_what_was_believed_then_about_now(
    moved: tuple[Memory, dict[str, str]],
) -> None:
    mem, _ = moved
    believed = mem.recall(actor="ana", query=QUERY, known_at=MARCH_1, explain=True)
    assert records(believed) == ["Porto"]
    assert believed.explain is not None  # with its own cosine, though closed now
    assert mem.get(believed.records[0].id).status.value == "invalid"
    assert believed.records[0].id in [v["id"] for v in believed.explain["vector"]]
    assert records(mem.recall(actor="ana", query=QUERY, known_at="2026-03-11T00:00Z")) == ["Lyon"]
    nothing = mem.recall(actor="ana", query=QUERY, as_of="2026-01-01T00:00:00Z")
    assert nothing.records == ()


def test_a_record_current_then_is_found_by_meaning_though_closed_since(
    moved: tuple[Memory, dict[str, str]],
) -> None:
    mem, ids = moved
    # no word of the question is in "Lives in Porto", and no vector search of 1 March
    # finds it as stored now (valid to 1 February): it is reached from Lyon, the match
    # that superseded it, and scored by its own vector
    query = "Where in Portugal, or a move?"
    then = mem.recall(actor="ana", query=query, as_of=MARCH_1, include_events=False, explain=True)
    assert then.explain is not None
    assert ids["Porto"] not in [h["id"] for h in then.explain["lexical"]]
    assert [it.id for it in then.records] == [ids["Porto"]]


def test_a_raw_event_is_known_from_when_remem_received_it(store: Store) -> None:
    # the real clock: the store stamps each event with the time it received it
    mem = Memory(store, embedder=HashEmbedder(), ids=counter_ids())
    first = mem.add_event(actor="bo", session="s1", role="user", text="We talked kayaks.",
                          time="2026-01-02T10:00:00Z")  # fmt: skip
    (stored,) = store.events.get_events(mem.tenant, [first])
    assert stored.received_at is not None and stored.received_at <= utcnow()
    between = utcnow()
    time.sleep(0.01)
    # said earlier, received later (an imported turn)
    later = mem.add_event(actor="bo", session="s1", role="user", text="Kayaks: the red one.",
                          time="2026-01-01T10:00:00Z")  # fmt: skip
    then = mem.recall(actor="bo", query="kayaks", known_at=between, explain=True)
    assert [it.id for it in then.records] == [first]
    assert then.explain is not None
    assert {"id": later, "reason": "received after known_at"} in then.explain["rejected"]
    # what is known now about the first day: only what was said by then
    about = mem.recall(actor="bo", query="kayaks", valid_at="2026-01-01T12:00:00Z", explain=True)
    assert [it.id for it in about.records] == [later]
    assert about.explain is not None
    assert {"id": first, "reason": "said after valid_at"} in about.explain["rejected"]
    assert {it.id for it in mem.recall(actor="bo", query="kayaks").records} == {first, later}
