"""Events on the public surfaces: client ids as idempotency keys, re-runnable imports,
and times that are out of range, of the wrong type, early or in the future.

The library and CLI tests run on a SQLite file and on PostgreSQL (the session's
server, see `tests.support.pg`); the HTTP tests on a real uvicorn on loopback.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.types import TextContent

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import ConflictError, InvalidInput
from remem.ids import counter_ids
from remem.model import Status
from tests.support import pg
from tests.support.cli import err, ok
from tests.support.clock import Clock
from tests.support.mcp import mcp_keys as _mcp_keys
from tests.support.mcp import session_run
from tests.support.mcp import tool_error as _mcp_error
from tests.support.schema import rewind_sqlite
from tests.support.servers import Server, running_server

NOW = datetime(2026, 6, 1, tzinfo=UTC)
BAD_TIMES: list[Any] = [
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-01:00",
    12,
    [2026, 3, 1],
    True,
    {"at": "2026-03-01"},
    "next tuesday",
]
BAD_IDS = [repr(v)[:20] for v in BAD_TIMES]


@pytest.fixture
def target(db: str) -> str:
    """A new database on each backend (the `db` fixture of tests/conftest.py)."""
    return db


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def mem(target: str, clock: Clock) -> Iterator[Memory]:
    with Memory.open(target, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
        yield m


def _row(actor: str, text: str, **kw: Any) -> dict[str, Any]:
    return {"actor": actor, "session": "s1", "role": "user", "text": text, **kw}


def _texts(mem: Memory, actor: str) -> list[str]:
    return [e.text for e in mem.events(actor=actor)]


# -- 1. client event ids -------------------------------------------------------------------


def test_a_repeated_id_is_the_same_event_and_any_other_use_a_conflict(mem: Memory) -> None:
    text = "I'm vegetarian, my password is hunter2-Secret!"  # compared as stored: redacted
    first = mem.add_event(**_row("alice", text), time="2026-05-01T10:00:00Z", event_id="turn-1")
    again = mem.add_event(
        **_row("alice", text), time="2026-05-02T10:00:00Z", event_id="turn-1", metadata={"n": 2}
    )
    assert first == again == "turn-1"
    (event,) = mem.events(actor="alice")
    assert event.time == datetime(2026, 5, 1, 10, tzinfo=UTC) and "n" not in event.metadata
    assert len(mem.jobs()) == 1
    with pytest.raises(ConflictError) as caught:
        mem.add_event(**_row("bob", "I love steak"), event_id="turn-1")
    message = str(caught.value)
    assert "turn-1" in message and "unique per tenant" in message
    assert "alice" not in message and "vegetarian" not in message
    with pytest.raises(ConflictError):
        mem.add_event(**_row("alice", "I'm vegan now"), event_id="turn-1")
    assert [e.text for e in mem.events(actor="alice")] == [event.text]
    assert _texts(mem, "bob") == []
    # a batch holding the conflict writes none of its events
    with pytest.raises(ConflictError):
        mem.add_events([_row("bob", "I love steak", event_id="b-1"),
                        _row("bob", "I moved", event_id="turn-1")])  # fmt: skip
    assert _texts(mem, "bob") == []


def test_cli_conflicts_and_import_names_the_line(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db: Any = Path(target) if "://" not in target else target
    add = ["event", "add", "--session", "s1", "--role", "user", "--id", "turn-1"]
    ok(capsys, db, *add, "--actor", "alice", "--text", "I'm vegetarian")
    error = err(capsys, db, *add, "--actor", "bob", "--text", "I love steak")
    assert error["code"] == "conflict" and "alice" not in error["message"]

    lines = [
        json.dumps(_row("carol", "I live in Oslo", event_id="c-1")),
        "",
        json.dumps(_row("carol", "I like skiing", event_id="c-2")),
        json.dumps(_row("carol", "I moved to Bergen", event_id="turn-1")),  # alice's id
        json.dumps(_row("carol", "I have a cat", event_id="c-4")),
    ]
    file = tmp_path / "events.jsonl"
    file.write_text("\n".join(lines) + "\n")
    error = err(capsys, db, "event", "import", str(file))
    assert error["code"] == "conflict"
    assert error["message"].startswith("line 4: event id 'turn-1' is already used")
    assert "lines before line 4 were kept" in error["message"]
    listed = ok(capsys, db, "event", "list", "--actor", "carol")
    assert [e["text"] for e in listed["events"]] == ["I live in Oslo", "I like skiing"]

    lines[3] = json.dumps(_row("carol", "I moved to Bergen", event_id="c-3"))
    file.write_text("\n".join(lines) + "\n")
    done = ok(capsys, db, "event", "import", str(file))
    assert done == {"imported": 2, "skipped": 2}


# -- 3. re-running an interrupted import ------------------------------------------------


class Interrupted(Exception):
    pass


def _until(rows: list[dict[str, Any]], n: int) -> Iterator[dict[str, Any]]:
    """The rows, as a reader that dies after `n` of them (a killed import)."""
    for i, row in enumerate(rows):
        if i == n:
            raise Interrupted
        yield row


def test_an_interrupted_import_run_again_stores_every_line_once(mem: Memory) -> None:
    rows = [_row("alice", f"note {i}", time=f"2026-05-01T10:{i:02d}:00Z") for i in range(10)]
    rows += [_row("alice", "ok"), _row("alice", "ok")]  # two identical lines: two events
    with pytest.raises(Interrupted):
        mem.import_events(_until(rows, 7), batch=3)
    assert len(mem.events(actor="alice")) == 6  # two whole batches were kept
    result = mem.import_events(rows, batch=3)
    assert (result.imported, result.skipped) == (6, 6)
    texts = _texts(mem, "alice")
    assert sorted(texts) == sorted(r["text"] for r in rows)
    again = mem.import_events(rows, batch=5)
    assert (again.imported, again.skipped) == (0, 12)


def test_cli_import_without_ids_can_be_run_again(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db: Any = Path(target) if "://" not in target else target
    file = tmp_path / "events.jsonl"
    file.write_text("".join(json.dumps(_row("dave", f"fact {i}")) + "\n" for i in range(4)))
    assert ok(capsys, db, "event", "import", str(file)) == {"imported": 4, "skipped": 0}
    assert ok(capsys, db, "event", "import", str(file)) == {"imported": 0, "skipped": 4}
    assert len(ok(capsys, db, "event", "list", "--actor", "dave")["events"]) == 4


# -- 7. events before year 1000, and a batch that fails --------------------------------------


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00Z", "0999-06-01T12:00:00+02:00"])
def test_an_early_event_beside_other_actors_breaks_nothing(mem: Memory, when: str) -> None:
    mem.add_event(**_row("alice", "I was born in Porto"), time=when)
    mem.add_event(**_row("alice", "I prefer aisle seats"), time="2026-05-01T10:00:00Z")
    mem.add_event(**_row("bob", "I prefer window seats"), time="2026-05-01T10:00:00Z")
    result = mem.process()
    assert result.failed == 0
    assert {j.status for j in mem.jobs()} == {"done"}
    events = mem.events(actor="alice")
    assert events[0].time.year in (1, 999) and events[0].text == "I was born in Porto"
    packet = mem.recall(actor="alice", query="born in Porto seats")
    assert any("born in Porto" in i.text for i in packet.records)
    assert mem.recall(actor="bob", query="seats").records
    assert any(row["type"] == "event" for row in mem.export(actor="alice"))


class PoisonEmbedder(HashEmbedder):
    """A real embedder that fails on one input, as a model's server can for a bad input."""

    def embed(self, texts: Any) -> Any:
        if any("poison" in t for t in texts):
            raise ValueError("the embedding model cannot embed this input")
        return super().embed(texts)


def test_a_text_the_model_cannot_embed_fails_no_job_and_is_set_aside(
    target: str, clock: Clock, tmp_path: Path
) -> None:
    """A local model failing on one input (remem.memory.refusals): the event's records are
    still extracted, its job ends done, and the text stays without a vector, set aside
    and said in its actor's packet, found by its words; no one else's vector waits."""
    config = tmp_path / "remem.toml"
    config.write_text("[retry]\njob_attempts = 2\njob_base_seconds = 1\njob_max_seconds = 1\n")
    with Memory.open(target, embedder=PoisonEmbedder(), clock=clock, config=config) as mem:
        mem.add_event(**_row("alice", "I prefer aisle seats"))
        mem.add_event(**_row("bob", "I had poison ivy, I prefer window seats"))
        mem.add_event(**_row("carol", "I prefer the front row"))
        first = mem.process()
        assert first.failed == 0 and first.jobs_done == 3
        assert {j.status for j in mem.jobs()} == {"done"}
        assert (
            mem.records(actor="alice") and mem.records(actor="bob") and mem.records(actor="carol")
        )
        assert mem.store.backfill.count_unembedded(mem.tenant, "alice") == 0
        assert mem.store.backfill.count_unembedded(mem.tenant, "carol") == 0
        assert mem.store.backfill.count_unembedded(mem.tenant, "bob") >= 1
        packet = mem.recall(actor="bob", query="poison ivy")
        assert any("poison ivy" in i.text for i in packet.records)
        assert any("set aside" in n for n in packet.notes)
        # the query names the poison too: the model fails on it, and recall goes on by words
        assert any("failed on the query" in n and "lexical only" in n for n in packet.notes)
        clock.advance(seconds=5)
        assert mem.process().failed == 0


# -- 8. events dated in the future ----------------------------------------------------------


def test_an_event_beyond_the_clock_skew_is_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match=r"in the future, 2 days ahead.* at most 1 hour ahead"):
        mem.add_event(**_row("alice", "I moved to Porto"), time="2026-06-03T00:00:00Z")
    with pytest.raises(InvalidInput, match="in the future"):
        mem.import_events([_row("alice", "hello", time="9999-01-01T00:00:00Z")])
    assert mem.events(actor="alice") == []


def test_the_clock_skew_is_configurable(target: str, clock: Clock) -> None:
    with Memory.open(target, clock=clock, embedder=None, max_clock_skew=timedelta(days=3)) as mem:
        mem.add_event(**_row("alice", "I moved to Porto"), time="2026-06-03T00:00:00Z")
        assert len(mem.events(actor="alice")) == 1
        with pytest.raises(InvalidInput, match="at most 3 days ahead"):
            mem.add_event(**_row("alice", "I moved to Oslo"), time="2026-06-05T00:00:00Z")


def test_an_event_from_a_clock_running_ahead_is_recalled_at_once(mem: Memory) -> None:
    mem.add_event(**_row("alice", "Our budget for the trip is $500"), time="2026-05-30T00:00:00Z")
    mem.process()
    mem.add_event(**_row("alice", "Our budget increased to $750"), time="2026-06-01T00:40:00Z")
    mem.process()
    packet = mem.recall(actor="alice", query="trip budget", include_events=False)
    assert [i.text for i in packet.records] == ["Budget increased to $750"]
    (current,) = mem.records(actor="alice")
    assert current.valid_from == NOW  # not 00:40: valid from when it was processed
    old = next(r for r in mem.records(actor="alice", all=True) if r.status is Status.INVALID)
    assert old.valid_until == NOW


# -- 9. out-of-range and wrong-type times, on every surface ----------------------------------


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
def test_library_refuses_bad_times_clearly(mem: Memory, bad: Any) -> None:
    calls = [
        lambda: mem.add_event(**_row("alice", "hi"), time=bad),
        lambda: mem.add_events([_row("alice", "hi", time=bad)]),
        lambda: mem.import_events([_row("alice", "hi", time=bad)]),
        lambda: mem.remember(actor="alice", text="I like tea", valid_until=bad),
        lambda: mem.recall(actor="alice", query="tea", as_of=bad),
        lambda: mem.recall(actor="alice", query="tea", known_at=bad),
        lambda: mem.recall(actor="alice", query="tea", valid_at=bad),
        lambda: mem.write_records([{"actor": "alice", "text": "I like tea", "valid_until": bad}]),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match=_expected(bad)):
            call()
    rec = mem.remember(actor="alice", text="I like coffee")
    with pytest.raises(InvalidInput, match=_expected(bad)):
        mem.update(rec.id, text="I like green tea", valid_until=bad)
    assert mem.events(actor="alice") == []
    assert [r.text for r in mem.records(actor="alice")] == ["I like coffee"]


def _expected(bad: Any) -> str:
    if isinstance(bad, str) and bad.startswith("0001"):
        return r"out of range \(it falls before year 1 in UTC\)"
    if isinstance(bad, str) and bad.startswith("9999"):
        return r"out of range \(it falls after year 9999 in UTC\)"
    if isinstance(bad, str):
        return "is not an ISO 8601 time"
    return r"must be an ISO 8601 string such as 2026-03-01T09:30:00Z; got "


@pytest.mark.parametrize("bad", BAD_TIMES[:2])
def test_cli_refuses_out_of_range_times_clearly(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    base = ["--actor", "alice"]
    cases = [
        ["event", "add", *base, "--session", "s", "--role", "user", "--text", "hi", "--time", bad],
        ["remember", *base, "--text", "I like tea", "--valid-until", bad],
        ["recall", *base, "--query", "tea", "--as-of", bad],
        ["recall", *base, "--query", "tea", "--known-at", bad],
        ["recall", *base, "--query", "tea", "--valid-at", bad],
    ]
    for args in cases:
        error = err(capsys, db_path, *args)
        assert error["code"] == "invalid_input"
        assert "Traceback" not in error["message"]


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
def test_cli_import_refuses_a_bad_time_naming_its_line(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: Any
) -> None:
    file = tmp_path / "events.jsonl"
    file.write_text(
        json.dumps(_row("alice", "I like tea")) + "\n" + json.dumps(_row("alice", "hi", time=bad))
    )
    error = err(capsys, db_path, "event", "import", str(file))
    assert error["code"] == "invalid_input"
    assert error["message"].startswith("line 2: event time")
    assert ok(capsys, db_path, "event", "list", "--actor", "alice")["events"][0]["text"] == (
        "I like tea"
    )


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    if request.param == "sqlite":
        with running_server(str(tmp_path_factory.mktemp("events") / "svc.db")) as running:
            yield running
    else:
        admin = request.getfixturevalue("pg_admin_dsn")
        with pg.fresh_database(admin) as dsn:
            with running_server(pg.as_url(dsn)) as running:
                yield running


def _post(h: httpx.Client, path: str, body: Mapping[str, Any]) -> httpx.Response:
    return h.post(path, json=body)


def test_http_a_reused_event_id_is_409_and_a_repeat_201(server: Server) -> None:
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I'm vegan"}
    with server.http("agent") as h:
        assert _post(h, "/v1/events", {**event, "event_id": "http-1"}).status_code == 201
        repeat = _post(h, "/v1/events", {**event, "event_id": "http-1"})
        assert repeat.status_code == 201
        assert repeat.json()["events"] == [{"event_id": "http-1", "created": False}]
        other = _post(h, "/v1/events", {**event, "actor_id": "bob", "event_id": "http-1"})
        assert other.status_code == 409
        assert other.json()["error"]["code"] == "conflict"
        assert "vegan" not in other.text and "alice" not in other.text
        listed = h.get("/v1/events", params={"actor_id": "bob"}).json()
        assert listed["events"] == []


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
def test_http_refuses_bad_times_naming_the_field(server: Server, bad: Any) -> None:
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "hi"}
    with server.http("agent") as h:
        cases = [
            ("/v1/events", {**event, "time": bad}, "time"),
            ("/v1/events", {"events": [{**event, "time": bad}]}, "events.0.time"),
            ("/v1/memories/retrieve", {"query": "x", "actor_id": "alice", "as_of": bad}, "as_of"),
            (
                "/v1/memories/retrieve",
                {"query": "x", "actor_id": "alice", "known_at": bad},
                "known_at",
            ),
            (
                "/v1/memories/retrieve",
                {"query": "x", "actor_id": "alice", "valid_at": bad},
                "valid_at",
            ),
            (
                "/v1/memories/batch-create",
                {"records": [{"actor_id": "alice", "text": "I like tea", "valid_until": bad}]},
                "records.0.valid_until",
            ),
        ]
        for path, body, field in cases:
            r = _post(h, path, body)
            assert r.status_code == 422, (path, r.text)
            error = r.json()["error"]
            assert error["code"] == "invalid_input"
            assert error["message"].startswith(f"{field}: "), error["message"]
            assert "EventBatchIn" not in error["message"]
            assert "ISO 8601" in error["message"] or "out of range" in error["message"]


def test_http_refuses_a_future_event(server: Server) -> None:
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "I moved"}
    with server.http("agent") as h:
        r = _post(h, "/v1/events", {**event, "time": "9999-01-01T00:00:00Z"})
        assert r.status_code == 422
        assert "in the future" in r.json()["error"]["message"]
        soon = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
        assert _post(h, "/v1/events", {**event, "time": soon}).status_code == 201


def test_mcp_refuses_bad_times_with_a_clear_tool_error(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    keys = _mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        for bad in BAD_TIMES:
            calls = [
                ("remember", {"text": "I like tea", "valid_until": bad}, "valid_until"),
                ("recall", {"query": "tea", "as_of": bad}, "as_of"),
                ("recall", {"query": "tea", "known_at": bad}, "known_at"),
                ("recall", {"query": "tea", "valid_at": bad}, "valid_at"),
            ]
            for tool, args, field in calls:
                text = _mcp_error(await s.call_tool(tool, args))
                assert field in text and "internal error" not in text, text
                assert re.search(_expected(bad), text), text
        listed = await s.call_tool("list_memories", {})
        assert '"records":[]' in "".join(
            c.text for c in listed.content if isinstance(c, TextContent)
        ).replace(" ", "")

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)


def _set_event_time(db: Path, event_id: str, stored: str) -> None:
    """Write an events row's time as another program (or an older remem) left it."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE events SET time = ? WHERE id = ?", (stored, event_id))
    conn.close()


def test_a_database_with_unpadded_early_years_still_reads_them(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "old.db"
    with Memory.open(db, embedder=None, clock=clock) as mem:
        mem.add_event(**_row("alice", "I was born in Porto"), time="0999-06-01T00:00:00Z",
                      event_id="old-1")  # fmt: skip
    _set_event_time(db, "old-1", "999-06-01T00:00:00.000000+00:00")  # as remem wrote it before
    with Memory.open(db, embedder=None, clock=clock) as mem:
        (event,) = mem.events(actor="alice")
        assert event.time == datetime(999, 6, 1, tzinfo=UTC)
        assert mem.process().failed == 0


def test_migration_6_pads_the_early_years_an_older_remem_stored(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "schema5.db"
    with Memory.open(db, embedder=None, clock=clock) as mem:
        mem.add_event(**_row("alice", "I was born in Porto"), time="0999-06-01T00:00:00Z",
                      event_id="old-1")  # fmt: skip
        mem.add_event(**_row("alice", "I moved to Lyon"), time="2020-01-01T00:00:00Z",
                      event_id="new-1")  # fmt: skip
    _set_event_time(db, "old-1", "999-06-01T00:00:00.000000+00:00")  # as remem 5 wrote it
    conn = sqlite3.connect(db)
    rewind_sqlite(conn, 5)  # as remem 5 left the file
    conn.close()
    with Memory.open(db, embedder=None, clock=clock) as mem:
        assert [e.id for e in mem.events(actor="alice")] == ["old-1", "new-1"]
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT time FROM events ORDER BY time").fetchall()
    conn.close()
    assert [t for (t,) in stored] == [
        "0999-06-01T00:00:00.000000+00:00",
        "2020-01-01T00:00:00.000000+00:00",
    ]


def test_an_unreadable_event_row_fails_its_job_alone(tmp_path: Path, clock: Clock) -> None:
    db = tmp_path / "damaged.db"
    config = tmp_path / "remem.toml"
    config.write_text("[retry]\njob_attempts = 1\n")
    with Memory.open(db, embedder=None, clock=clock, config=config) as mem:
        mem.add_event(**_row("alice", "I prefer aisle seats"), event_id="a-1")
        mem.add_event(**_row("bob", "I prefer window seats"), event_id="b-1")
        _set_event_time(db, "b-1", "not a time")
        result = mem.process()
        assert (result.jobs_done, result.failed) == (1, 1)
        jobs = {j.event_id: j for j in mem.jobs()}
        assert jobs["a-1"].status == "done" and mem.records(actor="alice")
        assert jobs["b-1"].status == "failed"
        assert "could not be read" in (jobs["b-1"].last_error or "")


def test_concurrent_writers_of_one_id_store_one_event_and_refuse_the_rest(target: str) -> None:
    mems = [Memory.open(target, embedder=None) for _ in range(6)]
    start = threading.Barrier(len(mems))
    outcomes: list[str] = []

    def write(i: int) -> None:
        start.wait()
        try:
            mems[i].add_event(**_row(f"actor{i}", f"turn of actor {i}"), event_id="race-1")
            outcomes.append("stored")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(mems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert sorted(outcomes) == ["conflict"] * (len(mems) - 1) + ["stored"]
        stored = [m.events(actor=f"actor{i}") for i, m in enumerate(mems)]
        assert sum(len(s) for s in stored) == 1
    finally:
        for m in mems:
            m.close()


def test_a_job_whose_workers_died_each_time_ends_failed(tmp_path: Path, clock: Clock) -> None:
    config = tmp_path / "remem.toml"
    config.write_text("[retry]\njob_attempts = 2\n[worker]\nlease_seconds = 5\n")
    with Memory.open(tmp_path / "m.db", embedder=None, clock=clock, config=config) as mem:
        mem.add_event(**_row("alice", "I prefer aisle seats"), event_id="a-1")
        mem.add_event(**_row("bob", "I prefer window seats"), event_id="b-1")
        for _ in range(2):  # a worker takes alice's job and dies holding it, twice
            assert [j.event_id for j in mem.store.jobs.claim_jobs(clock(), 1, 5)] == ["a-1"]
            clock.advance(seconds=10)
        mem.process()
        jobs = {j.event_id: j for j in mem.jobs()}
        assert jobs["a-1"].status == "failed" and "gave up" in (jobs["a-1"].last_error or "")
        assert jobs["b-1"].status == "done" and mem.records(actor="bob")
