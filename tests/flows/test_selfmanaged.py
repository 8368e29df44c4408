"""Self-managed strategies: batch create / update / delete with request ids, and
`remem records import` / `remem jobs list|retry` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.errors import InvalidInput
from remem.model import Status
from tests.support.cli import err, ok


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    return Memory.open(tmp_path / "m.db", embedder=HashEmbedder())


def test_a_batch_creates_updates_and_deletes_with_provenance(mem: Memory) -> None:
    (created,) = mem.write_records(
        [{"request_id": "c1", "actor": "ana", "text": "Ana keeps bees", "strategy": "crm-sync"}]
    )
    assert created["status"] == "created"
    rec = mem.get(created["record_id"])
    assert rec.source.type == "self-managed" and rec.source.strategy == "crm-sync"
    (updated,) = mem.write_records(
        [{"op": "update", "request_id": "u1", "record_id": rec.id, "text": "Ana keeps wasps"}]
    )
    assert updated["supersedes"] == rec.id
    assert mem.get(rec.id).status is Status.INVALID
    assert mem.get(updated["record_id"]).supersedes == rec.id
    (deleted,) = mem.write_records(
        [{"op": "delete", "request_id": "d1", "record_id": updated["record_id"]}]
    )
    assert deleted["status"] == "deleted" and deleted["verified"]
    assert mem.records(actor="ana") == []


def test_a_repeated_request_id_returns_its_first_outcome(mem: Memory) -> None:
    item = {"request_id": "r1", "actor": "ana", "text": "Ana likes figs"}
    (first,) = mem.write_records([item])
    (again,) = mem.write_records([item])
    assert again["record_id"] == first["record_id"] and again["replayed"] is True
    (other,) = mem.write_records([{**item, "text": "Ana likes dates"}])  # another write
    assert other["status"] == "error" and other["error"]["code"] == "conflict"
    assert [r.text for r in mem.records(actor="ana")] == ["Ana likes figs"]
    clash_item = {"op": "delete", "request_id": "r1", "record_id": first["record_id"]}
    (clash,) = mem.write_records([clash_item])
    assert clash["status"] == "error" and clash["error"]["code"] == "conflict"


def test_a_bad_item_refuses_the_whole_batch(mem: Memory) -> None:
    good = {"actor": "ana", "text": "Ana likes figs"}
    for bad, reason in [
        ({"op": "update", "text": "x"}, "update needs record_id"),
        ({"actor": "ana", "text": ""}, "at least 1 character"),
        ({"actor": "ana", "text": "x", "colour": "red"}, "Extra inputs"),
        ({"actor": "ana", "text": "x", "kind": "procedural"}, "kind"),
    ]:
        with pytest.raises(InvalidInput, match=reason) as exc:
            mem.write_records([good, bad])
        assert "item 2" in str(exc.value)
    assert mem.records(actor="ana") == []


def test_items_fail_one_by_one_after_validation(mem: Memory) -> None:
    results = mem.write_records(
        [
            {"actor": "ana", "text": "my password is hunter2-Xq9!"},
            {"op": "delete", "record_id": "rec_missing"},
            {"actor": "ana", "text": "Ana likes figs"},
        ]
    )
    assert [r["status"] for r in results] == ["error", "error", "created"]
    assert results[0]["error"]["code"] == "refused_content"
    assert results[1]["error"]["code"] == "not_found"


def test_records_import_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.db"
    lines = [
        {"request_id": "a", "actor": "ana", "text": "Ana keeps bees"},
        {"request_id": "b", "actor": "ana", "text": "Ana prefers tea", "kind": "preference"},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    data = ok(capsys, db, "records", "import", str(path))
    assert data["succeeded"] == 2 and data["failed"] == 0
    again = ok(capsys, db, "records", "import", str(path))
    assert [r["record_id"] for r in again["results"]] == [r["record_id"] for r in data["results"]]
    assert all(r["replayed"] for r in again["results"])
    listed = ok(capsys, db, "records", "list", "--actor", "ana")
    assert len(listed["records"]) == 2
    path.write_text('{"actor": "ana", "text": "x"}\n{not json\n', encoding="utf-8")
    assert "line 2" in err(capsys, db, "records", "import", str(path))["message"]
    assert len(ok(capsys, db, "records", "list", "--actor", "ana")["records"]) == 2


def test_jobs_list_and_retry_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.db"
    ok(capsys, db, "event", "add", "--actor", "ana", "--session", "s1", "--role", "user",
       "--text", "I live in Lisbon")  # fmt: skip
    listed = ok(capsys, db, "jobs", "list")
    assert listed["counts"]["pending"] == 1
    (job,) = listed["jobs"]
    assert job["strategy"] == "offline" and job["status"] == "pending" and job["attempts"] == 0
    ok(capsys, db, "process")
    done = ok(capsys, db, "jobs", "list", "--status", "done")
    assert [j["id"] for j in done["jobs"]] == [job["id"]]
    assert ok(capsys, db, "jobs", "list", "--status", "failed")["jobs"] == []
    retried = ok(capsys, db, "jobs", "retry", "--failed")
    assert retried["requeued"] == 0 and retried["counts"]["done"] == 1
    assert "status" in err(capsys, db, "jobs", "list", "--status", "bogus")["message"].lower()
