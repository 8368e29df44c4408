"""`Client.import_events` and `Client.write_records`: the library's batch calls over HTTP,
with the library's ids, outcomes and refusals (issue 38, item 3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.errors import Forbidden, InvalidInput
from tests.support.servers import Server, running_server

_HMM = {"actor": "ida", "session": "s1", "role": "user", "text": "hmm", "time": "2026-01-02T10Z"}
ROWS = [
    _HMM,
    {"actor": "ida", "session": "s1", "role": "user", "text": "I live in Oslo."},
    dict(_HMM),  # identical rows stay distinct events, in one batch or across batches
    {"actor": "ida", "session": "s1", "role": "assistant", "text": "Noted.", "event_id": "e-own"},
    dict(_HMM),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(str(tmp_path_factory.mktemp("batches") / "b.db")) as running:
        yield running


def test_import_events_gives_the_librarys_ids_across_batches(
    server: Server, tmp_path: Path
) -> None:
    with Memory.open(tmp_path / "lib.db", tenant="acme") as mem:
        done = mem.import_events(ROWS, batch=2)
        lib = sorted(e.id for e in mem.events(actor="ida"))
    c = server.client("agent")
    seen: list[int] = []
    first = c.import_events(ROWS, batch=2, progress=seen.append)
    assert (first.imported, first.skipped) == (done.imported, done.skipped) == (5, 0)
    assert seen == [2, 2, 1]
    assert sorted(r["event_id"] for r in c.events(actor="ida")) == lib
    again = c.import_events(ROWS, batch=3)  # re-run: every row is a repeat
    assert (again.imported, again.skipped) == (0, 5)


def test_import_events_stops_at_a_bad_line_and_keeps_the_lines_before(server: Server) -> None:
    c = server.client("agent")
    rows = [
        {"actor": "jo", "session": "s", "role": "user", "text": "I like figs."},
        {"actor": "jo", "session": "s", "role": "user", "text": "I like dates."},
        {"actor": "jo", "session": "s", "role": "pirate", "text": "arr"},
        {"actor": "jo", "session": "s", "role": "user", "text": "never stored"},
    ]
    with pytest.raises(InvalidInput, match=r"^line 13: role must be one of"):
        c.import_events(rows, batch=10, lines=[11, 12, 13, 14])
    assert [r["text"] for r in c.events(actor="jo")] == ["I like figs.", "I like dates."]
    with pytest.raises(Forbidden):  # a key for alice imports no one else's events
        server.client("alice").import_events(rows[:1])


def test_import_events_given_fewer_line_numbers_than_rows_stops_where_they_end(
    server: Server,
) -> None:
    c = server.client("agent")
    rows = [{"actor": "lu", "session": "s", "role": "user", "text": f"I like figs, kind {i}"}
            for i in range(5)]  # fmt: skip
    with pytest.raises(InvalidInput, match=r"^row 4: lines gives 3 line numbers.*were kept"):
        c.import_events(rows, batch=2, lines=[11, 12, 13])
    assert [r["text"] for r in c.events(actor="lu")] == [r["text"] for r in rows[:3]]


def test_write_records_runs_a_mixed_batch_in_order(server: Server) -> None:
    c = server.client("agent")
    old = c.remember(actor="kai", text="Kai lives in Rome")
    gone = c.remember(actor="kai", text="Kai drives a red car")
    out = c.write_records(
        [
            {"op": "create", "request_id": "w1", "actor": "kai", "text": "Kai is vegetarian"},
            {"op": "update", "request_id": "w2", "record_id": old.id, "text": "Kai lives in Turin"},
            {"op": "delete", "request_id": "w3", "record_id": gone.id},
            {"op": "delete", "record_id": "rec_missing"},
        ]
    )
    assert [(r["op"], r["status"]) for r in out] == [
        ("create", "created"),
        ("update", "updated"),
        ("delete", "deleted"),
        ("delete", "error"),
    ]
    assert out[1]["supersedes"] == old.id and out[2]["verified"] is True
    assert out[3]["error"]["code"] == "not_found"
    made = c.get(out[0]["record_id"])
    assert made.text == "Kai is vegetarian" and made.source.strategy == "self-managed"
    assert {r.text for r in c.records(actor="kai")} == {"Kai is vegetarian", "Kai lives in Turin"}
    # the same request ids again: the first outcomes, nothing written twice
    first = {"op": "create", "request_id": "w1", "actor": "kai", "text": "Kai is vegetarian"}
    again = c.write_records([first])
    assert again[0]["record_id"] == out[0]["record_id"] and again[0]["replayed"] is True


def test_write_records_refuses_the_whole_batch_first(server: Server) -> None:
    alice = server.client("alice")
    with pytest.raises(Forbidden):
        alice.write_records(
            [
                {"op": "create", "actor": "alice", "text": "Alice likes tea"},
                {"op": "create", "actor": "bob", "text": "Bob likes coffee"},
            ]
        )
    assert alice.records(actor="alice") == []
    with pytest.raises(InvalidInput, match="item 2: update needs record_id and text"):
        alice.write_records([{"actor": "alice", "text": "ok"}, {"op": "update"}])
    assert alice.records(actor="alice") == []
