"""Batch request ids: one per actor, claimed in the database, on both backends.

A request id is an actor's: another actor's "r1" is its own write, never a
replay of the first one's. It names one write: sent again with other fields it
is a conflict, not a replay that would drop the new write. It is claimed in the
database before the write runs, so two `Memory` instances (or two servers) on
one database racing one request id write one record; a claim whose process died
is retaken after its lease; a live claim makes a second caller wait, then get a
conflict.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from remem.errors import InvalidInput
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.store.postgres import sql as pq
from remem.store.sqlite.store import APPLICATION_ID, _migrations
from remem.writes import ledger
from tests.support import pg
from tests.support.cli import err, ok


def _create(actor: str, text: str, rid: str = "r1") -> dict[str, Any]:
    return {"request_id": rid, "actor": actor, "text": text}


def test_another_actors_request_id_is_its_own_write(db: str) -> None:
    with Memory.open(db, tenant="acme") as mem:
        (alice,) = mem.write_records([_create("alice", "Alice keeps bees")])
        (bob,) = mem.write_records([_create("bob", "Bob plays the cello")])
        assert alice["status"] == bob["status"] == "created"
        assert "replayed" not in bob and bob["record_id"] != alice["record_id"]
        assert [r.text for r in mem.records(actor="bob")] == ["Bob plays the cello"]
        # each actor's repeat replays its own first outcome
        (again,) = mem.write_records([_create("bob", "Bob plays the cello")])
        assert again["replayed"] is True and again["record_id"] == bob["record_id"]
        # an update names a record: the request id is that record's actor's
        upd = {"op": "update", "request_id": "r1", "record_id": bob["record_id"], "text": "x y"}
        (clash,) = mem.write_records([upd])
        assert clash["error"]["code"] == "conflict" and "create" in clash["error"]["message"]
        upd = {**upd, "request_id": "u1"}
        (first,) = mem.write_records([upd])
        (dele,) = mem.write_records([{"op": "delete", "request_id": "d1", "record_id": "rec_x"}])
        assert first["status"] == "updated" and dele["error"]["code"] == "not_found"


TEXTS = ["Alice keeps bees", "Alice plays chess", "Alice owns a red kayak", "Alice speaks Welsh"]


def test_two_memories_racing_one_request_id_write_one_record(db: str) -> None:
    rounds, racers = 4, 4
    mems = [Memory.open(db, tenant="acme") for _ in range(racers)]
    try:
        results: list[list[dict[str, Any]]] = [[] for _ in range(racers)]
        gate = threading.Barrier(racers)

        def race(i: int) -> None:
            for n in range(rounds):
                gate.wait(timeout=30)
                item = _create("alice", TEXTS[n], rid=f"race-{n}")
                results[i].extend(mems[i].write_records([item]))

        threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        recs = mems[0].records(actor="alice")
        assert len(recs) == rounds, [r.text for r in recs]
        for n in range(rounds):
            outcomes = [results[i][n] for i in range(racers)]
            assert len({o["record_id"] for o in outcomes}) == 1, outcomes
            assert sum(1 for o in outcomes if not o.get("replayed")) == 1, outcomes
    finally:
        for m in mems:
            m.close()


def test_a_request_id_sent_again_with_other_fields_is_a_conflict(db: str) -> None:
    with Memory.open(db, tenant="acme") as mem:
        first = {**_create("alice", "Alice keeps bees"), "valid_until": "2030-01-01"}
        (made,) = mem.write_records([first])
        # the same write, its time written another way and another strategy: a replay
        same = {**first, "valid_until": "2030-01-01T00:00:00+00:00", "strategy": "again"}
        (again,) = mem.write_records([same])
        assert again["replayed"] is True and again["record_id"] == made["record_id"]
        changed: list[dict[str, Any]] = [
            {**first, "text": "Alice keeps wasps"},
            {**first, "metadata": {"topic": "garden"}},
            {**first, "valid_until": "2031-01-01"},
            {**first, "kind": "preference"},
            {**first, "sensitivity": "personal"},
        ]
        for item in changed:
            (clash,) = mem.write_records([item])
            assert clash["status"] == "error" and clash["error"]["code"] == "conflict", item
            assert "other fields" in clash["error"]["message"]
        # nothing was replaced or added, and the first outcome still replays
        assert [r.text for r in mem.records(actor="alice", all=True)] == ["Alice keeps bees"]
        (still,) = mem.write_records([first])
        assert still["replayed"] is True and still["record_id"] == made["record_id"]
        # an update's id names its text; a delete's reason words only its receipt
        upd = {"op": "update", "request_id": "u1", "record_id": made["record_id"],
               "text": "Alice keeps two hives"}  # fmt: skip
        (fixed,) = mem.write_records([upd])
        (other,) = mem.write_records([{**upd, "text": "Alice keeps three hives"}])
        assert other["error"]["code"] == "conflict"
        gone = {"op": "delete", "request_id": "d1", "record_id": fixed["record_id"]}
        (d1,) = mem.write_records([{**gone, "reason": "ticket 1"}])
        (d2,) = mem.write_records([{**gone, "reason": "ticket 1, again"}])
        assert d1["status"] == "deleted" and d2["replayed"] is True


def _short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second claimant waits for a live first one's outcome `WAIT_SECONDS` (5 s), then
    conflicts; these tests, whose first claimant never ends, wait a fifth of a second."""
    monkeypatch.setattr(ledger, "WAIT_SECONDS", 0.2)


def test_a_dead_claim_is_retaken_and_a_live_one_is_a_conflict(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _short_wait(monkeypatch)
    with Memory.open(db, tenant="acme") as mem:
        # a process that claimed "r1" and died: its lease has passed
        mem.store.ledger.claim_request("acme", "alice", "r1", "create", None, None, "dead", -1)
        (taken,) = mem.write_records([_create("alice", "Alice keeps bees")])
        assert taken["status"] == "created"
        # a claimant that is alive (another server, mid-write): wait, then conflict
        mem.store.ledger.claim_request("acme", "alice", "r2", "create", None, None, "alive", 60)
        (busy,) = mem.write_records([_create("alice", "Alice keeps wasps", rid="r2")])
        assert busy["error"]["code"] == "conflict" and "in progress" in busy["error"]["message"]
        assert [r.text for r in mem.records(actor="alice")] == ["Alice keeps bees"]


@pytest.mark.parametrize("outsider", ["_shared", "bad name", "alice\n"])
def test_a_library_batch_is_scope_checked_before_anything_is_written(
    db: str, outsider: str
) -> None:
    # the ledger the HTTP routes run: every create's actor is checked first, as the
    # operator's scope allows it, so no item before the refused one is written or claimed
    with Memory.open(db, tenant="acme") as mem:
        first = _create("alice", "Alice keeps bees")
        with pytest.raises(InvalidInput, match="actor must be") as refused:
            mem.write_records([first, _create(outsider, "Someone else keeps wasps", rid="r2")])
        assert "Someone else" not in str(refused.value)
        assert mem.records(actor="alice", all=True) == []
        (alone,) = mem.write_records([first])  # "r1" was never claimed
        assert alone["status"] == "created" and "replayed" not in alone


def test_records_import_writes_nothing_when_a_line_names_an_unusable_actor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "cli.db"
    lines = [_create("alice", "Alice keeps bees"), _create("_shared", "A shared rule", "r2")]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    refused = err(capsys, db, "records", "import", str(path))
    assert refused["code"] == "invalid_input" and "actor must be" in refused["message"]
    assert ok(capsys, db, "records", "list", "--actor", "alice")["records"] == []


# -- HTTP ----------------------------------------------------------------------------------


def _keys(db: str) -> dict[str, str]:
    store = open_store(db)
    try:
        return {
            "alice": keyring.create_key(store.keys, tenant="acme", actor="alice")[1],
            "bob": keyring.create_key(store.keys, tenant="acme", actor="bob")[1],
            "agent": keyring.create_key(store.keys, tenant="acme")[1],
        }
    finally:
        store.close()


def _post(client: TestClient, key: str, path: str, items: list[dict[str, Any]]) -> Any:
    r = client.post(path, json={"records": items}, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_http_another_actors_request_id_is_its_own_write(db: str) -> None:
    keys = _keys(db)
    create = "/v1/memories/batch-create"
    with TestClient(create_app(db, worker=False)) as client:
        item = {"request_id": "r1", "text": "Alice keeps bees"}
        (alice,) = _post(client, keys["alice"], create, [item])
        (bob,) = _post(client, keys["bob"], create, [{**item, "text": "Bob plays the cello"}])
        assert alice["status"] == bob["status"] == 201
        assert "replayed" not in bob and bob["record"]["actor"] == "bob"
        # a tenant-wide key naming bob finds bob's entry, not alice's
        bobs = {**item, "text": "Bob plays the cello", "actor_id": "bob"}
        (again,) = _post(client, keys["agent"], create, [bobs])
        assert again["replayed"] is True and again["record_id"] == bob["record_id"]
        # the same id with another text is refused, on this route and the mixed one
        (clash,) = _post(client, keys["bob"], create, [{**item, "text": "Bob plays the viola"}])
        assert clash["status"] == 409 and "other fields" in clash["error"]["message"]
        mixed = {**bobs, "op": "create", "text": "Bob plays the viola"}
        (clash,) = _post(client, keys["agent"], "/v1/memories/batch", [mixed])
        assert clash["status"] == 409 and "other fields" in clash["error"]["message"]
        (same,) = _post(client, keys["agent"], "/v1/memories/batch", [{**bobs, "op": "create"}])
        assert same["replayed"] is True and same["record_id"] == bob["record_id"]
        r = client.get("/v1/memories", headers={"Authorization": f"Bearer {keys['bob']}"})
        assert [x["text"] for x in r.json()["records"]] == ["Bob plays the cello"]
        # bob's key cannot reach alice's entry through her record
        upd = {"request_id": "r1", "record_id": alice["record_id"], "text": "Alice keeps wasps"}
        (hidden,) = _post(client, keys["bob"], "/v1/memories/batch-update", [upd])
        assert hidden["status"] == 404
        # a delete retried after it succeeded replays, for the key of that actor only
        dele = {"request_id": "d1", "record_id": alice["record_id"]}
        (d1,) = _post(client, keys["alice"], "/v1/memories/batch-delete", [dele])
        (d2,) = _post(client, keys["alice"], "/v1/memories/batch-delete", [dele])
        assert d1["verified"] is True and d2 == {**d1, "replayed": True}
        (d3,) = _post(client, keys["bob"], "/v1/memories/batch-delete", [dele])
        assert d3["status"] == 404


def test_two_servers_racing_one_request_id_write_one_record(db: str) -> None:
    keys = _keys(db)
    racers = 4
    with (
        TestClient(create_app(db, worker=False)) as one,
        TestClient(create_app(db, worker=False)) as two,
    ):
        clients = [one, two] * (racers // 2)
        gate = threading.Barrier(racers)
        results: list[Any] = [None] * racers

        def race(i: int) -> None:
            gate.wait(timeout=30)
            item = {"request_id": "r1", "text": "Alice keeps bees"}
            results[i] = _post(clients[i], keys["alice"], "/v1/memories/batch-create", [item])[0]

        threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len({r["record_id"] for r in results}) == 1, results
        assert sum(1 for r in results if not r.get("replayed")) == 1, results
        r = one.get("/v1/memories", headers={"Authorization": f"Bearer {keys['alice']}"})
        assert len(r.json()["records"]) == 1


def test_http_a_live_claim_is_409_in_progress(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _short_wait(monkeypatch)
    keys = _keys(db)
    with TestClient(create_app(db, worker=False)) as client:
        client.app.state.service.store.ledger.claim_request(  # type: ignore[attr-defined]
            "acme", "alice", "r1", "create", None, None, "another-server", 60
        )
        item = {"request_id": "r1", "text": "Alice keeps bees"}
        (busy,) = _post(client, keys["alice"], "/v1/memories/batch-create", [item])
        assert busy["status"] == 409 and "in progress" in busy["error"]["message"]


# -- existing databases ----------------------------------------------------------------------

OLD_ROWS = [  # what schema 4 (SQLite) or 6 (PostgreSQL) kept: keyed by tenant and request id
    ("acme", "r1", "create", "alice", '{"status": "created", "record_id": "rec_a"}'),
    ("acme", "d1", "delete", "alice", '{"status": "deleted", "record_id": "rec_gone"}'),
]


def _old_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    for number, script in _migrations():
        if number <= 4:
            conn.executescript(script)
            conn.execute(f"PRAGMA user_version = {number}")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.executemany(
        "INSERT INTO api_requests (tenant, request_id, operation, actor, outcome, created_at) "
        "VALUES (?, ?, ?, ?, ?, '2026-01-01T00:00:00.000000+00:00')",
        OLD_ROWS,
    )
    conn.commit()
    conn.close()


def _old_postgres(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(pq.SCHEMA_TABLE)
        for number, script in pq.migrations():
            if number <= 6:
                for statement in pq.split_sql(script):
                    conn.execute(statement)
                conn.execute(pq.SET_VERSION, {"version": number})
        conn.execute(pq.SET_TENANT, {"tenant": "acme"})
        for row in OLD_ROWS:
            conn.execute(
                "INSERT INTO api_requests (tenant, request_id, operation, actor, outcome, "
                "created_at) VALUES (%s, %s, %s, %s, %s, now())",
                row,
            )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_existing_ledger_keeps_its_outcomes(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def check(target: str) -> None:
        with Memory.open(target, tenant="acme") as mem:
            (again,) = mem.write_records([_create("alice", "Alice keeps bees")])
            assert again == {
                "request_id": "r1", "op": "create", "status": "created",
                "record_id": "rec_a", "replayed": True,
            }  # fmt: skip
            gone = {"op": "delete", "request_id": "d1", "record_id": "rec_gone"}
            (d1,) = mem.write_records([gone])
            assert d1["status"] == "deleted" and d1["replayed"] is True
            (bob,) = mem.write_records([_create("bob", "Bob plays the cello")])
            assert bob["status"] == "created" and "replayed" not in bob

    if backend == "sqlite":
        _old_sqlite(tmp_path / "old.db")
        check(str(tmp_path / "old.db"))
    else:
        admin = request.getfixturevalue("pg_admin_dsn")
        with pg.fresh_database(admin, empty=True) as dsn:
            _old_postgres(dsn)
            check(pg.as_url(dsn))


def test_records_import_keeps_each_actors_request_ids_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "cli.db"
    lines = [_create("alice", "Alice keeps bees"), _create("bob", "Bob plays the cello")]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    first = ok(capsys, db, "records", "import", str(path))
    assert first["succeeded"] == 2 and not any(r.get("replayed") for r in first["results"])
    assert len({r["record_id"] for r in first["results"]}) == 2
    again = ok(capsys, db, "records", "import", str(path))
    assert [r["record_id"] for r in again["results"]] == [r["record_id"] for r in first["results"]]
    assert all(r["replayed"] for r in again["results"])
    assert [r["text"] for r in ok(capsys, db, "records", "list", "--actor", "bob")["records"]] == [
        "Bob plays the cello"
    ]
