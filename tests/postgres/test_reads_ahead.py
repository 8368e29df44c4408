"""Reads sent ahead in a span, and its last read carrying COMMIT (`remem.store.postgres.span`).

A recall knows some reads before it needs them; they ride with the span's next round
trip and a later identical read takes their rows instead of a round trip of its own.
What is taken must be what the read would have found: never rows from before this
thread's own write, never another tenant's, never twice; a queued read that fails
fails the round trip it rode in and leaves the span usable."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.pq import Trace

from remem.embed.base import HashEmbedder
from remem.errors import RememError
from remem.memory import reads
from remem.memory.memory import Memory
from remem.store.postgres.search import PostgresSearch
from remem.store.postgres.store import PostgresStore
from tests.support import pg
from tests.support.store import put, rec

RECORDS = "SELECT id FROM records WHERE actor = %(actor)s ORDER BY id"
UNFILTERED = "SELECT DISTINCT tenant FROM records ORDER BY tenant"  # RLS is the only filter


@pytest.fixture
def store(pg_admin_dsn: str) -> Iterator[PostgresStore]:
    with pg.fresh_database(pg_admin_dsn) as dsn:
        s = PostgresStore(dsn, min_size=1, max_size=1)  # one connection: the one traced
        put(s, rec("r1", "Alice plays the oboe", tenant="t1"))
        put(s, rec("r2", "Bob plays the viola", tenant="t2", actor="bob"))
        yield s
        s.close()


def traced(store: PostgresStore, trace: Path, call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What `call` returned, and the messages the client sent meanwhile."""
    with trace.open("w") as out:
        with store.backend.pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
        try:
            got = call()
        finally:
            with store.backend.pool.connection() as conn:
                conn.pgconn.untrace()
    sent = [line.split() for line in trace.read_text().splitlines()]
    return got, [f[2] for f in sent if len(f) > 2 and f[0] == "F"]


def round_trips(messages: list[str]) -> int:
    """The waits for the server, but for psycopg preparing a statement it has sent five
    times on the connection (Parse, Sync: once per statement and connection)."""
    after_parse = sum(1 for pair in itertools.pairwise(messages) if pair == ("Parse", "Sync"))
    return messages.count("Sync") + messages.count("Query") - after_parse


def ids(store: PostgresStore, tenant: str, actor: str) -> list[str]:
    return [r["id"] for r in store.backend.rows(tenant, RECORDS, {"actor": actor})]


def test_reads_sent_ahead_ride_with_the_next_round_trip_and_answer_later_once(
    store: PostgresStore, tmp_path: Path
) -> None:
    def recall() -> list[object]:
        with store.search.reading("t1"):
            store.backend.ahead("t1", [(RECORDS, {"actor": "alice"}), (UNFILTERED, {})])
            first = [r["tenant"] for r in store.backend.rows("t1", "SELECT 't1' AS tenant")]
            rows = store.backend.rows_many("t1", [(RECORDS, {"actor": "alice"}), (UNFILTERED, {})])
            again = ids(store, "t1", "alice")  # taken once: this one goes to the database
            return [first, [r["id"] for r in rows[0]], [r["tenant"] for r in rows[1]], again]

    got, messages = traced(store, tmp_path / "trace", recall)
    assert got == [["t1"], ["r1"], ["t1"], ["r1"]]  # RLS bound the reads sent ahead too
    # BEGIN, set_config, the read and the two sent ahead in one round trip; the read of
    # both answered without one; the third read; COMMIT
    assert round_trips(messages) == 3


def test_a_read_sent_ahead_is_not_answered_after_this_threads_write(
    store: PostgresStore, tmp_path: Path
) -> None:
    with store.search.reading("t1"):
        store.backend.ahead("t1", [(RECORDS, {"actor": "alice"})])
        assert ids(store, "t1", "nobody") == []  # carries the read sent ahead
        put(store, rec("r3", "Alice plays the flute", tenant="t1"))  # ends the span's transaction
        assert ids(store, "t1", "alice") == ["r1", "r3"]  # read afresh, not the rows kept


def test_a_read_sent_ahead_for_another_tenant_or_outside_a_span_is_not_kept(
    store: PostgresStore, tmp_path: Path
) -> None:
    store.backend.ahead("t1", [(RECORDS, {"actor": "alice"})])  # no span: nothing queued
    with store.search.reading("t1"):
        store.backend.ahead("t2", [(RECORDS, {"actor": "bob"})])  # not the span's tenant
        span = store.backend.spans.current()
        assert span is not None and not span.queued
        assert ids(store, "t2", "bob") == ["r2"]
        assert ids(store, "t1", "bob") == []  # bound to t1: bob's record is t2's


def test_reads_whose_parameters_cannot_be_matched_are_not_sent_ahead(
    store: PostgresStore,
) -> None:
    with store.search.reading("t1"):
        store.backend.ahead("t1", [("SELECT %(v)s::text AS v", {"v": object()})])
        span = store.backend.spans.current()
        assert span is not None and not span.queued


def test_a_failing_read_sent_ahead_fails_its_round_trip_and_leaves_the_span_usable(
    store: PostgresStore,
) -> None:
    with store.search.reading("t1"):
        store.backend.ahead("t1", [("SELECT 1 / 0 AS x", {})])
        with pytest.raises(RememError):
            ids(store, "t1", "alice")
        assert ids(store, "t1", "alice") == ["r1"]  # a new transaction, bound again
    with store.backend.pool.connection() as conn:
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_the_last_read_carries_commit_and_a_read_after_it_begins_anew(
    store: PostgresStore, tmp_path: Path
) -> None:
    def recall() -> list[list[str]]:
        with store.search.reading("t1"):
            first = ids(store, "t1", "alice")
            store.search.last_read("t1")
            last = ids(store, "t1", "alice")
            span = store.backend.spans.current()
            assert span is not None and span.conn is None  # back in the pool already
            after = ids(store, "t1", "alice")
            return [first, last, after]

    got, messages = traced(store, tmp_path / "trace", recall)
    assert got == [["r1"], ["r1"], ["r1"]]
    # BEGIN + binding + read; read + COMMIT; BEGIN + binding + read; COMMIT
    assert round_trips(messages) == 4
    assert messages.count("Execute") + messages.count("Query") == 3 + 2 + 3 + 1  # statements


def test_a_recall_sends_its_first_reads_with_the_catch_up_and_commits_with_its_last(
    store: PostgresStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory(store, tenant="t3", embedder=HashEmbedder(64))  # t1 holds test-8's
    memory.remember(actor="alice", text="Alice plays the oboe on Sundays")
    memory.add_event(actor="alice", session="s1", role="user", text="I bought a new reed")

    def recall() -> list[str]:
        packet = memory.recall(actor="alice", query="what does alice play")
        return [it.text for it in packet.records]

    recall()  # the catch-up runs the event's job; what recall keeps per version is made
    found, messages = traced(store, tmp_path / "trace", recall)
    assert any("oboe" in t for t in found)
    sent_ahead = round_trips(messages)
    # the same recall with nothing sent ahead and COMMIT in a round trip of its own
    monkeypatch.setattr(reads, "recall_ahead", lambda *args: None)
    monkeypatch.setattr(PostgresSearch, "last_read", lambda self, tenant: None)
    again, messages = traced(store, tmp_path / "trace2", recall)
    assert again == found
    # the index check, the shared scope's version, the events' and the records' word
    # searches ride with the catch-up's round trip, and COMMIT with the last read
    assert sent_ahead == round_trips(messages) - 5
