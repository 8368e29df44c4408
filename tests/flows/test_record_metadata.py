"""A record's metadata through the library, on both backends (issue 40 item 4).

Kept as sent and read back; selected by equality filters in `records` and `recall`
inside the storage query (same JSON type: 1 matches 1.0, never true or "1"); bounded
and screened like every stored string, with a clear error and nothing stored; erased
with the record (no byte of it left in the SQLite files); seen by no other actor or
tenant; carried by corrections, exports and self-managed batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput, RefusedContent
from remem.ids import counter_ids
from tests.support.backends import both_backends
from tests.support.clock import Clock

pytestmark = both_backends

TRIP = {"topic": "travel", "priority": 1, "vip": True, "source": {"app": "planner", "ids": [3]}}
FOOD = {"topic": "food", "priority": 1.0, "vip": False, "note": None}
TEXTS = {
    "trip": "Alice books aisle seats on long flights",
    "food": "Alice cooks vegetarian curry on Fridays",
    "plain": "Alice plays the cello in a quartet",
}


def fill(mem: Memory) -> dict[str, str]:
    ids = {
        "trip": mem.remember(actor="alice", text=TEXTS["trip"], metadata=TRIP).id,
        "food": mem.remember(actor="alice", text=TEXTS["food"], metadata=FOOD).id,
        "plain": mem.remember(actor="alice", text=TEXTS["plain"]).id,
    }
    mem.add_event(actor="alice", session="s", role="user", text="aisle seats and curry please")
    return ids


def listed(mem: Memory, **wanted: Any) -> set[str]:
    return {r.id for r in mem.records(actor="alice", metadata=wanted)}


def test_metadata_is_kept_as_sent_and_read_back(mem: Memory) -> None:
    ids = fill(mem)
    assert mem.get(ids["trip"]).metadata == TRIP
    assert mem.get(ids["food"]).metadata == FOOD
    assert mem.get(ids["plain"]).metadata == {}
    assert mem.get(ids["trip"]).as_dict()["metadata"] == TRIP


def test_list_filters_by_equal_values_of_the_same_type(mem: Memory) -> None:
    ids = fill(mem)
    assert listed(mem, topic="travel") == {ids["trip"]}
    assert listed(mem, topic="food", vip=False) == {ids["food"]}
    assert listed(mem, topic="travel", vip=False) == set()  # every pair must hold
    assert listed(mem, priority=1) == {ids["trip"], ids["food"]}  # 1 and 1.0
    assert listed(mem, priority=1.0) == {ids["trip"], ids["food"]}
    assert listed(mem, vip=True) == {ids["trip"]}
    assert listed(mem, vip=1) == set()  # a number is not a boolean
    assert listed(mem, priority="1") == set()  # nor a string
    assert listed(mem, priority=True) == set()
    assert listed(mem, note=None) == {ids["food"]}  # null, not a missing key
    assert listed(mem, missing="x") == set()
    assert {r.id for r in mem.records(actor="alice")} == set(ids.values())  # no filter


def test_list_filter_holds_with_all_as_of_and_field(mem: Memory, clock: Clock) -> None:
    first = mem.remember(
        actor="alice", text="Alice lives in Porto", field="home city", value="Porto",
        metadata={"topic": "home"},
    )  # fmt: skip
    clock.advance(minutes=1)
    mem.remember(actor="alice", text="Alice lives in Lisbon", field="home city", value="Lisbon")
    every = mem.records(actor="alice", all=True, metadata={"topic": "home"})
    assert [r.id for r in every] == [first.id] and every[0].status.value == "invalid"
    assert [
        r.id for r in mem.records(actor="alice", field="home", metadata={"topic": "home"})
    ] == []
    about = mem.records(actor="alice", field="home", all=True, metadata={"topic": "home"})
    assert [r.id for r in about] == [first.id]
    then = mem.records(actor="alice", as_of=clock.now.isoformat(), metadata={"topic": "home"})
    assert then == []  # superseded by now


def test_recall_returns_only_matching_records_and_no_raw_events(mem: Memory) -> None:
    ids = fill(mem)
    query = "aisle seats flights vegetarian curry cello"
    everything = mem.recall(actor="alice", query=query)
    assert {ids["trip"], ids["food"]} <= {r.id for r in everything.records}
    travel = mem.recall(actor="alice", query=query, metadata={"topic": "travel"})
    assert [r.id for r in travel.records] == [ids["trip"]]
    assert travel.records[0].metadata == TRIP
    assert travel.records[0].as_dict()["metadata"] == TRIP
    vip = mem.recall(actor="alice", query=query, metadata={"vip": False, "priority": 1})
    assert [r.id for r in vip.records] == [ids["food"]]
    assert mem.recall(actor="alice", query=query, metadata={"topic": "work"}).records == ()


def test_recall_filter_holds_for_pinned_fields(mem: Memory) -> None:
    tagged = mem.remember(
        actor="alice", text="Alice's timezone is CET", field="timezone", value="CET",
        metadata={"topic": "work"},
    )  # fmt: skip
    packet = mem.recall(
        actor="alice", query="meeting", pin=["timezone"], metadata={"topic": "home"}
    )
    assert packet.pinned == ()
    packet = mem.recall(
        actor="alice", query="meeting", pin=["timezone"], metadata={"topic": "work"}
    )
    assert [p.id for p in packet.pinned] == [tagged.id]


def test_another_actor_or_tenant_sees_nothing(mem: Memory, db_path: Path | str) -> None:
    fill(mem)
    mem.remember(actor="bob", text="Bob prefers window seats", metadata={"topic": "travel"})
    bob = mem.records(actor="bob", metadata={"topic": "travel"})
    assert [r.text for r in bob] == ["Bob prefers window seats"]
    packet = mem.recall(actor="bob", query="aisle seats flights", metadata={"topic": "travel"})
    assert all(r.id not in {x.id for x in mem.records(actor="alice")} for r in packet.records)
    with Memory.open(db_path, tenant="globex", embedder=HashEmbedder()) as other:
        assert other.records(actor="alice", metadata={"topic": "travel"}) == []
        assert (
            other.recall(actor="alice", query="aisle", metadata={"topic": "travel"}).records == ()
        )


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        ({"a": {"b": {"c": {"d": {"e": 1}}}}}, "nests deeper than 4 levels"),
        ({"blob": "x" * 9000}, "at most 8192"),
        ({f"k{i}": i for i in range(65)}, "at most 64"),
        ({"note": "a\x00b"}, "NUL"),
        ({"note": "a\ud800b"}, "lone surrogate"),
        ({"a\ud800": "b"}, "lone surrogate"),
        ({"to\u200bpic": "travel"}, "invisible format character"),
        ({"t\u043epic": "travel"}, "mixes"),
        ({"": "x"}, "1-100 characters"),
        ({"k" * 101: "x"}, "1-100 characters"),
        ({"n": float("nan")}, "JSON cannot represent"),
        ({"s": {1, 2}}, "not JSON"),
        (["topic", "travel"], "must be a JSON object"),
    ],
)
def test_bad_metadata_is_refused_and_nothing_stored(mem: Memory, metadata: Any, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        mem.remember(actor="alice", text="Alice likes green tea", metadata=metadata)
    assert mem.records(actor="alice", all=True) == []


@pytest.mark.parametrize(
    "metadata",
    [
        {"note": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"},
        {"password": "hunter2-Correct-Horse"},
        {"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD": "x"},
        {"nested": {"card": "4111 1111 1111 1111"}},
    ],
)
def test_secrets_in_keys_or_values_are_refused(mem: Memory, metadata: dict[str, Any]) -> None:
    with pytest.raises(RefusedContent, match="metadata") as refused:
        mem.remember(actor="alice", text="Alice likes green tea", metadata=metadata)
    assert "hunter2" not in str(refused.value) and "4111" not in str(refused.value)
    assert mem.records(actor="alice", all=True) == []


@pytest.mark.parametrize(
    ("wanted", "says"),
    [
        ({"topic": ["travel"]}, "string, number, boolean or null"),
        ({"topic": {"a": 1}}, "string, number, boolean or null"),
        ({"to\u200bpic": "x"}, "invisible format character"),
        ({"topic": "a\x00"}, "NUL"),
        ({"n": 2**70}, "64-bit"),
        ({f"k{i}": 1 for i in range(17)}, "at most 16 keys"),
        ("topic=travel", "JSON object"),
    ],
)
def test_bad_filters_are_refused(mem: Memory, wanted: Any, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        mem.records(actor="alice", metadata=wanted)
    with pytest.raises(InvalidInput, match=says):
        mem.recall(actor="alice", query="tea", metadata=wanted)


def test_keys_and_values_are_stored_in_nfc(mem: Memory) -> None:
    rec = mem.remember(
        actor="alice", text="Alice visited Malmo", metadata={"cafe\u0301": "Malmo\u0308"}
    )
    assert mem.get(rec.id).metadata == {"caf\u00e9": "Malm\u00f6"}
    assert [r.id for r in mem.records(actor="alice", metadata={"cafe\u0301": "Malm\u00f6"})] == [
        rec.id
    ]


def test_corrections_exports_and_batches_carry_metadata(mem: Memory) -> None:
    ids = fill(mem)
    fixed = mem.update(ids["trip"], text="Alice books window seats on long flights")
    assert fixed.metadata == TRIP
    rows = [r for r in mem.export(actor="alice") if r["type"] == "record"]
    assert {r["id"]: r["metadata"] for r in rows}[fixed.id] == TRIP
    out = mem.write_records(
        [{"op": "create", "request_id": "r1", "actor": "alice",
          "text": "Alice runs on Sundays", "metadata": {"topic": "sport"}}]
    )  # fmt: skip
    assert out[0]["status"] == "created"
    assert mem.get(out[0]["record_id"]).metadata == {"topic": "sport"}
    before = len(mem.records(actor="alice", all=True))
    with pytest.raises(InvalidInput, match=r"item 2: metadata: .*invisible"):
        mem.write_records(
            [{"op": "create", "actor": "alice", "text": "Alice swims"},
             {"op": "create", "actor": "alice", "text": "Alice rows", "metadata": {"a\u200b": 1}}]
        )  # fmt: skip
    assert len(mem.records(actor="alice", all=True)) == before  # nothing of the batch


def test_forget_leaves_no_metadata_byte_in_the_sqlite_files(
    tmp_path: Path, clock: Clock, db_backend: str
) -> None:
    if db_backend != "sqlite":
        pytest.skip("the files read here are SQLite's")
    db = tmp_path / "bytes.db"
    key, word, other = "zanzibarish", "quokkalicious", "wombatty"
    with Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as mem:
        one = mem.remember(actor="alice", text="Alice likes tea", metadata={key: word})
        mem.remember(actor="alice", text="Alice likes cake", metadata={"kept": other})
        mem.remember(actor="bob", text="Bob likes tea", metadata={"kept": "bobsword"})
        assert word.encode() in _bytes(db) and key.encode() in _bytes(db)
        assert mem.forget(record_id=one.id).verified
        assert word.encode() not in _bytes(db) and key.encode() not in _bytes(db)
        assert other.encode() in _bytes(db)
        assert mem.forget(actor="alice").verified
        assert other.encode() not in _bytes(db)
        assert b"bobsword" in _bytes(db)  # proves the files are read


def _bytes(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists()
    )
