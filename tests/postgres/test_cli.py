"""The CLI contract on PostgreSQL: the same commands and JSON fields as on a SQLite file.

`tests/surfaces/cli/test_cli.py` proves the contract on SQLite files; here the real
`remem` command line runs with `--db postgresql://...` against the session's server
(see `tests.support.pg`), one fresh database for the module and one tenant per
test, so the tests cannot see each other's rows. API keys and the HTTP and MCP
servers on PostgreSQL are proved by `tests/surfaces/http/test_service.py` and
`tests/surfaces/mcp/test_mcp.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from remem.store.postgres import sql as q
from remem.store.postgres.store import SCHEMA_VERSION
from tests.support import pg
from tests.support.cli import err as _err
from tests.support.cli import ok as _ok


@pytest.fixture(scope="module")
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield pg.as_url(app_dsn)


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # the CLI contract does not depend on the embedder; keep these tests fast
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


class Cli:
    """`remem --db DSN --tenant T ... --json`, in-process, for one test's tenant."""

    def __init__(self, capsys: pytest.CaptureFixture[str], dsn: str, tenant: str) -> None:
        self.capsys, self.dsn, self.tenant = capsys, dsn, tenant

    def ok(self, *args: str) -> dict[str, Any]:
        return _ok(self.capsys, self.dsn, "--tenant", self.tenant, *args)  # type: ignore[arg-type]

    def err(self, *args: str) -> dict[str, str]:
        return _err(self.capsys, self.dsn, "--tenant", self.tenant, *args)  # type: ignore[arg-type]

    def add(self, text: str, time_: str, actor: str = "alice", **kw: str) -> str:
        args = ["event", "add", "--actor", actor, "--session", "s1", "--role", "user",
                "--text", text, "--time", time_]  # fmt: skip
        if "id" in kw:
            args += ["--id", kw["id"]]
        return str(self.ok(*args)["event_id"])


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], dsn: str, request: pytest.FixtureRequest) -> Cli:
    # a tenant of its own per test: the module shares one database
    return Cli(capsys, dsn, "t-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:50])


def test_the_whole_path_through_the_cli(cli: Cli) -> None:
    assert cli.add("Our budget for the trip is $500", "2026-03-01T10:00:00Z", id="b1") == "b1"
    cli.add("Our budget increased to $750", "2026-03-05T10:00:00Z")
    cli.add("ok", "2026-03-05T10:01:00Z")
    events = cli.ok("event", "list", "--actor", "alice")["events"]
    assert next(e["text"] for e in events) == "Our budget for the trip is $500"
    done = cli.ok("process")
    assert {"jobs_done", "records_added", "records_updated", "noops"} <= set(done)
    assert done["jobs_done"] == 3 and done["records_updated"] == 1

    listed = cli.ok("records", "list", "--actor", "alice", "--all")["records"]
    fields = {"id", "text", "kind", "namespace", "status", "superseded_by", "valid_from",
              "valid_until", "source"}  # fmt: skip
    assert all(fields <= set(r) for r in listed)
    old = next(r for r in listed if "$500" in r["text"])
    new = next(r for r in listed if "$750" in r["text"])
    assert old["status"] == "invalid" and old["superseded_by"] == new["id"]
    assert old["source"]["event_ids"] == ["b1"]
    assert old["namespace"].startswith(f"/tenants/{cli.tenant}/actors/alice/")

    packet = cli.ok("recall", "--actor", "alice", "--query", "trip budget")
    assert {"records", "conflicts", "tokens", "budget"} <= set(packet)
    item = packet["records"][0]
    assert {"id", "text", "kind", "namespace", "status", "source_date", "source", "score",
            "flags"} <= set(item)  # fmt: skip
    # the current budget comes first: as its record, or (see the xfail below) as the raw
    # event it was made from, never both
    assert item["id"] in {new["id"], *new["source"]["event_ids"]}
    assert "$750" in item["text"] and "$500" not in json.dumps(packet["records"])

    past = cli.ok("recall", "--actor", "alice", "--query", "trip budget",
                  "--valid-at", "2026-03-02T00:00:00Z", "--no-events")  # fmt: skip
    assert [r["id"] for r in past["records"]] == [old["id"]]

    explained = cli.ok("recall", "--actor", "alice", "--query", "budget", "--explain")
    assert any(r["id"] == old["id"] for r in explained["explain"]["rejected"])

    hist = cli.ok("records", "history", old["id"])["history"]
    assert [h["action"] for h in hist] == ["ADD", "SUPERSEDED"]
    assert cli.ok("records", "get", new["id"])["record"]["text"] == new["text"]

    gone = cli.ok("forget", "--record", new["id"])
    assert gone["verified"] is True and gone["deleted"]["records"] == 1
    all_gone = cli.ok("forget", "--actor", "alice")
    assert all_gone["verified"] is True
    assert cli.ok("records", "list", "--actor", "alice", "--all")["records"] == []
    deletions = cli.ok("deletions")["deletions"]
    assert [(d["target"], d["status"]) for d in deletions] == [
        ("actor", "done"), ("record", "done"),
    ]  # fmt: skip
    assert {"id", "key", "attempts", "result", "last_error", "created_at"} <= set(deletions[0])


def test_recall_prefers_the_current_record_to_its_raw_event(cli: Cli) -> None:
    cli.add("Our budget for the trip is $500", "2026-03-01T10:00:00Z")
    new_event = cli.add("Our budget increased to $750", "2026-03-05T10:00:00Z")
    cli.ok("process")
    packet = cli.ok("recall", "--actor", "alice", "--query", "trip budget")
    top = packet["records"][0]
    assert top["kind"] == "semantic" and top["source"]["event_ids"] == [new_event]


def test_another_tenant_sees_nothing(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    cli.add("I'm vegetarian", "2026-01-01T00:00:00Z", id="v1")
    cli.ok("process")
    assert len(cli.ok("records", "list", "--actor", "alice")["records"]) == 1
    other = Cli(capsys, cli.dsn, cli.tenant + "-other")
    assert other.ok("event", "list", "--actor", "alice")["events"] == []
    assert other.ok("records", "list", "--actor", "alice", "--all")["records"] == []
    assert other.ok("recall", "--actor", "alice", "--query", "vegetarian")["records"] == []


def test_remember(cli: Cli) -> None:
    data = cli.ok("remember", "--actor", "alice", "--text", "I prefer aisle seats",
                  "--kind", "preference", "--valid-until", "2099-01-01T00:00:00Z")  # fmt: skip
    assert set(data) == {"record_id", "status"} and data["status"] == "active"
    rec = cli.ok("records", "get", data["record_id"])["record"]
    assert rec["kind"] == "preference" and rec["valid_until"].startswith("2099-01-01")


def test_import_keeps_times_and_skips_repeats(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "events.jsonl"
    rows = [
        {"actor": "alice", "session": "s1", "role": "user", "text": "I'm vegetarian",
         "time": "2026-01-02T03:04:05Z", "event_id": "x1"},
        {"actor": "alice", "session": "s1", "role": "assistant", "text": "Noted!", "id": "x2"},
    ]  # fmt: skip
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert cli.ok("event", "import", str(src)) == {"imported": 2, "skipped": 0}
    assert cli.ok("event", "import", str(src)) == {"imported": 0, "skipped": 2}
    events = cli.ok("event", "list", "--actor", "alice")["events"]
    assert events[0]["time"].startswith("2026-01-02T03:04:05")
    listed = cli.ok("jobs", "list")
    assert listed["counts"] == {"pending": 2, "running": 0, "done": 0, "failed": 0}
    assert {j["event_id"] for j in listed["jobs"]} == {"x1", "x2"}
    assert cli.ok("process")["jobs_done"] == 2
    assert cli.ok("jobs", "list", "--status", "done")["counts"]["done"] == 2


def test_records_import_replays_request_ids(cli: Cli, tmp_path: Path) -> None:
    lines = [
        {"request_id": "a", "actor": "ana", "text": "Ana keeps bees"},
        {"request_id": "b", "actor": "ana", "text": "Ana prefers tea", "kind": "preference"},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    data = cli.ok("records", "import", str(path))
    assert data["succeeded"] == 2 and data["failed"] == 0
    again = cli.ok("records", "import", str(path))
    assert [r["record_id"] for r in again["results"]] == [r["record_id"] for r in data["results"]]
    assert all(r["replayed"] for r in again["results"])
    assert len(cli.ok("records", "list", "--actor", "ana")["records"]) == 2
    path.write_text('{"actor": "ana", "text": "x"}\n{not json\n', encoding="utf-8")
    assert "line 2" in cli.err("records", "import", str(path))["message"]
    assert len(cli.ok("records", "list", "--actor", "ana")["records"]) == 2
    assert cli.ok("forget", "--actor", "ana")["deleted"]["requests"] == 2


def test_jobs_list_and_retry(cli: Cli) -> None:
    cli.add("I live in Lisbon", "2026-01-01T00:00:00Z", actor="ana")
    listed = cli.ok("jobs", "list")
    assert set(listed) == {"counts", "llm_usage", "jobs"}
    (job,) = listed["jobs"]
    assert job["strategy"] == "offline" and job["status"] == "pending" and job["attempts"] == 0
    assert cli.ok("process")["jobs_done"] == 1
    done = cli.ok("jobs", "list", "--status", "done")
    assert [j["id"] for j in done["jobs"]] == [job["id"]]
    assert cli.ok("jobs", "list", "--status", "failed")["jobs"] == []
    retried = cli.ok("jobs", "retry", "--failed")
    assert retried["requeued"] == 0 and retried["counts"]["done"] == 1
    assert listed["llm_usage"]["calls"] == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["event", "add", "--actor", "a", "--session", "s", "--role", "user", "--text", ""],
         "invalid_input"),
        (["event", "add", "--actor", "a", "--session", "s", "--role", "user", "--text", "x",
          "--time", "tomorrow-ish"], "invalid_input"),
        (["event", "add", "--actor", "a b", "--session", "s", "--role", "user", "--text", "x"],
         "invalid_input"),
        (["remember", "--actor", "a", "--text", "  "], "invalid_input"),
        (["recall", "--actor", "a", "--query", ""], "invalid_input"),
        (["records", "history", "rec_missing"], "not_found"),
        (["records", "get", "rec_missing"], "not_found"),
        (["forget", "--record", "rec_missing"], "not_found"),
        (["forget"], "invalid_input"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_error(cli: Cli, args: list[str], code: str) -> None:
    error = cli.err(*args)
    assert error["code"] == code and error["message"]


def test_huge_text_is_refused_and_nothing_is_stored(cli: Cli) -> None:
    error = cli.err("event", "add", "--actor", "a", "--session", "s", "--role", "user",
                    "--text", "x" * 200_000)  # fmt: skip
    assert "limit" in error["message"]
    assert cli.ok("event", "list", "--actor", "a")["events"] == []


def test_malformed_jsonl_imports_nothing(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"actor": "a", "session": "s", "role": "user", "text": "fine"}\n{oops\n')
    assert "line 2" in cli.err("event", "import", str(src))["message"]
    assert cli.ok("event", "list", "--actor", "a")["events"] == []


def test_procedure_review_through_the_cli(cli: Cli) -> None:
    prop = cli.ok("procedure", "propose", "--text", "Refunds need approval", "--name", "r")
    assert prop["status"] == "proposed"
    assert cli.ok("procedure", "list")["records"] == []
    listed = cli.ok("procedure", "list", "--all")["records"]
    assert [r["id"] for r in listed] == [prop["record_id"]]
    done = cli.ok("records", "approve", prop["record_id"], "--by", "dana")
    assert done == {"record_id": prop["record_id"], "status": "active"}
    assert [r["id"] for r in cli.ok("procedure", "list")["records"]] == [done["record_id"]]
    again = cli.err("records", "reject", prop["record_id"], "--by", "x")
    assert again["code"] == "conflict"
    other = cli.ok("procedure", "propose", "--text", "Skip checks")
    rejected = cli.ok("records", "reject", other["record_id"], "--by", "dana",
                      "--reason", "unsafe")  # fmt: skip
    assert rejected["status"] == "invalid"


def test_export_a_subject_then_forget_it(cli: Cli, tmp_path: Path) -> None:
    cli.add("Our budget for the trip is $500", "2026-03-01T10:00:00Z", id="b1")
    cli.add("Our budget increased to $750", "2026-03-05T10:00:00Z", id="b2")
    cli.add("I love tea", "2026-03-05T10:00:00Z", actor="bob", id="c1")
    cli.ok("process")
    out = tmp_path / "alice.jsonl"
    summary = cli.ok("export", "--actor", "alice", "--out", str(out))
    assert summary == {"path": str(out), "events": 2, "records": 2}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in rows if r["type"] == "event"} == {"b1", "b2"}
    records = [r for r in rows if r["type"] == "record"]
    old = next(r for r in records if r["status"] == "invalid")
    assert [h["action"] for h in old["history"]] == ["ADD", "SUPERSEDED"]
    assert all(r["actor"] == "alice" for r in rows)  # nothing of bob's

    assert cli.ok("forget", "--actor", "alice")["verified"] is True
    empty = cli.ok("export", "--actor", "alice", "--out", str(out))
    assert (empty["events"], empty["records"]) == (0, 0) and out.read_text() == ""
    assert cli.err("export", "--actor", "alice")["code"] == "invalid_input"
    assert len(cli.ok("records", "list", "--actor", "bob")["records"]) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["keys", "list"],
        ["keys", "revoke", "key_x"],
        ["serve", "--port", "0"],
        ["mcp", "--key", "k"],
    ],
)
def test_service_commands_on_an_unreachable_database_say_so(cli: Cli, args: list[str]) -> None:
    cli.dsn = cli.dsn.replace("/remem_test_", "/remem_no_such_database_", 1)
    error = cli.err(*args)
    assert error["code"] == "store_error"
    assert "cannot use the PostgreSQL database" in error["message"]
    assert "remem_app@" not in error["message"] and "password" not in error["message"]


def test_keys_on_postgresql_are_listed_per_tenant(cli: Cli) -> None:
    made = cli.ok("keys", "create", "--tenant", cli.tenant, "--actor", "alice")
    assert made["key"].startswith("rk_") and made["tenant"] == cli.tenant
    listed = cli.ok("keys", "list", "--tenant", cli.tenant)["keys"]
    assert listed == [{k: v for k, v in made.items() if k != "key"}]
    assert cli.err("keys", "revoke", "key_missing")["code"] == "not_found"


def test_thread_state_works_on_postgresql(cli: Cli) -> None:
    assert cli.ok("checkpoint", "list", "--actor", "a") == {"checkpoints": []}
    assert cli.ok("toolcall", "list", "--actor", "a") == {"tool_calls": []}


def test_unreachable_database_is_a_store_error(cli: Cli) -> None:
    cli.dsn = cli.dsn.replace("/remem_test_", "/remem_no_such_database_", 1)
    error = cli.err("records", "list", "--actor", "a")
    assert (
        error["code"] == "store_error"
        and "cannot use the PostgreSQL database" in (error["message"])
    )
    assert "remem_app@" not in error["message"] and "password" not in error["message"]


def test_newer_database_is_refused(pg_admin_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pg.fresh_database(pg_admin_dsn) as own:
        with psycopg.connect(own, autocommit=True) as conn:
            conn.execute(q.SET_VERSION, {"version": SCHEMA_VERSION + 1})
        error = Cli(capsys, pg.as_url(own), "t").err("event", "list", "--actor", "alice")
        assert error["code"] == "schema_too_new" and "newer remem" in error["message"]
