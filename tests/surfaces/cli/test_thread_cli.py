"""`remem checkpoint ...` and `remem toolcall ...`: one JSON document out, clear errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from remem import Memory
from remem.cli.main import cli, main
from remem.cli.thread import checkpoint, toolcall
from remem.thread.api import begin_tool_call, checkpoint_save
from tests.support.cli import err, ok

WF = "refund-981"


@pytest.fixture(autouse=True)
def _groups(monkeypatch: pytest.MonkeyPatch) -> None:
    # registered here too, so these tests run whether or not remem.cli.main adds the groups
    monkeypatch.setitem(cli.commands, "checkpoint", checkpoint)
    monkeypatch.setitem(cli.commands, "toolcall", toolcall)
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")


def test_save_load_list_and_a_stale_save(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    who = ("--actor", "u42", "--workflow", WF)
    state = {"step": "pay", "completed_steps": ["quote"], "idempotency_key": "k-1"}
    saved = ok(capsys, db, "checkpoint", "save", *who, "--state", json.dumps(state))["checkpoint"]
    assert saved["version"] == 1 and saved["step"] == "pay" and saved["workflow"] == WF
    fields = {"completed_steps", "pending_approval", "tool_call_id", "idempotency_key",
              "artifacts", "last_verified_outcome", "data", "updated_at", "expires_at"}  # fmt: skip
    assert fields <= set(saved)

    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({**state, "completed_steps": ["quote", "pay"]}))
    args = ("checkpoint", "save", *who, "--state-file", str(state_file))
    v2 = ok(capsys, db, *args, "--expected-version", "1")["checkpoint"]
    assert v2["version"] == 2 and v2["completed_steps"] == ["quote", "pay"]

    stale = err(capsys, db, *args, "--expected-version", "1")
    assert stale["code"] == "conflict" and "version 2" in stale["message"]
    again = err(capsys, db, "checkpoint", "save", *who, "--state", "{}")
    assert again["code"] == "conflict" and "version 2" in again["message"]

    loaded = ok(capsys, db, "checkpoint", "load", *who)["checkpoint"]
    assert loaded == v2
    listed = ok(capsys, db, "checkpoint", "list", "--actor", "u42")["checkpoints"]
    assert [c["workflow"] for c in listed] == [WF]


def test_bad_input_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    who = ("--actor", "u42", "--workflow", WF)
    assert err(capsys, db, "checkpoint", "save", *who)["code"] == "usage"
    both = err(capsys, db, "checkpoint", "save", *who, "--state", "{}", "--state-file", "x")
    assert both["code"] == "usage"
    bad = err(capsys, db, "checkpoint", "save", *who, "--state", "{not json")
    assert bad["code"] == "invalid_input" and "--state is not valid JSON" in bad["message"]
    typo = err(capsys, db, "checkpoint", "save", *who, "--state", '{"stepp": 1}')
    assert typo["code"] == "invalid_input" and "stepp" in typo["message"]
    missing = err(capsys, db, "checkpoint", "save", *who, "--state-file", str(tmp_path / "no"))
    assert missing["code"] == "invalid_input"
    assert err(capsys, db, "checkpoint", "load", *who)["code"] == "not_found"
    assert ok(capsys, db, "checkpoint", "list", "--actor", "u42") == {"checkpoints": []}


def test_only_the_owner_can_load_a_workflow(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    ok(capsys, db, "checkpoint", "save", "--actor", "u42", "--workflow", WF, "--state", "{}")
    other_actor = err(capsys, db, "checkpoint", "load", "--actor", "mallory", "--workflow", WF)
    assert other_actor["code"] == "not_found"
    other_tenant = err(
        capsys, db, "--tenant", "evil", "checkpoint", "load", "--actor", "u42", "--workflow", WF
    )
    assert other_tenant["code"] == "not_found"
    status = ok(capsys, db, "toolcall", "status", "--actor", "mallory", "--workflow", WF,
                "--key", "k")  # fmt: skip
    assert status == {"state": "never_started", "tool_call": None}


def test_tool_call_lifecycle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    key = ("--actor", "u42", "--workflow", WF, "--key", "refund-981/pay")
    begun = ok(
        capsys, db, "toolcall", "begin", *key, "--id", "call-1", "--request", '{"amount":30}'
    )
    assert begun["begun"] is True and begun["decision"] == "perform"
    assert begun["tool_call"]["status"] == "started"
    assert begun["tool_call"]["tool_call_id"] == "call-1"
    again = ok(capsys, db, "toolcall", "begin", *key, "--request", '{"amount":30}')
    assert again["begun"] is False and again["decision"] == "unknown"
    assert ok(capsys, db, "toolcall", "status", *key)["state"] == "unknown"
    unresolved = ok(capsys, db, "toolcall", "list", "--actor", "u42", "--unresolved")
    assert [c["idempotency_key"] for c in unresolved["tool_calls"]] == ["refund-981/pay"]
    assert unresolved["tool_calls"][0]["resume"] == "unknown"
    differ = err(capsys, db, "toolcall", "begin", *key, "--request", '{"amount":3000}')
    assert differ["code"] == "conflict"

    done = ok(capsys, db, "toolcall", "complete", *key, "--result", '{"receipt":"r-1"}')
    assert done["tool_call"]["status"] == "completed"
    status = ok(capsys, db, "toolcall", "status", *key)
    assert status["state"] == "done" and status["tool_call"]["result"] == {"receipt": "r-1"}
    assert ok(capsys, db, "toolcall", "list", "--actor", "u42", "--unresolved") == {
        "tool_calls": []
    }
    assert err(capsys, db, "toolcall", "release", *key)["code"] == "conflict"
    no_key = ("--actor", "u42", "--workflow", WF, "--key", "other")
    assert err(capsys, db, "toolcall", "complete", *no_key, "--result", "1")["code"] == "not_found"


def test_release_reopens_a_verified_non_event(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    key = ("--actor", "u42", "--workflow", WF, "--key", "k")
    ok(capsys, db, "toolcall", "begin", *key)
    released = ok(capsys, db, "toolcall", "release", *key)["released"]
    assert released["status"] == "started"
    assert ok(capsys, db, "toolcall", "status", *key)["state"] == "never_started"
    assert ok(capsys, db, "toolcall", "begin", *key)["decision"] == "perform"


def test_expire_reports_what_it_kept(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    long_ago = datetime.now(UTC) - timedelta(days=30)
    with Memory.open(db, embedder=None, clock=lambda: long_ago) as mem:
        day = timedelta(days=1)
        checkpoint_save(mem, actor="u42", workflow="old", state={}, retention=day)
        checkpoint_save(
            mem,
            actor="u42",
            workflow="ask",
            state={"pending_approval": {"what": "x"}},
            retention=day,
        )
        begin_tool_call(mem, actor="u42", workflow="gone", idempotency_key="k", retention=day)
    ok(capsys, db, "checkpoint", "save", "--actor", "u42", "--workflow", "new", "--state", "{}",
       "--retention-days", "1")  # fmt: skip
    report = ok(capsys, db, "checkpoint", "expire")
    assert report["checkpoints_expired"] == 1 and report["tool_calls_expired"] == 0
    assert sorted((h["workflow"], h["reason"]) for h in report["held"]) == [
        ("ask", "pending_approval"),
        ("gone", "unresolved_tool_call"),
    ]
    listed = ok(capsys, db, "checkpoint", "list", "--actor", "u42")["checkpoints"]
    assert sorted(c["workflow"] for c in listed) == ["ask", "new"]
    assert next(c for c in listed if c["workflow"] == "new")["expires_at"] is not None


@pytest.mark.parametrize(
    "path",
    [
        "checkpoint save",
        "checkpoint load",
        "checkpoint list",
        "checkpoint expire",
        "toolcall begin",
        "toolcall complete",
        "toolcall status",
        "toolcall list",
        "toolcall release",
    ],
)
def test_every_thread_command_has_help(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path.split(), "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage:" in out and len(out.splitlines()) > 3


def test_human_output_is_plain_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert main(["--db", str(db), "checkpoint", "save", "--actor", "u42", "--workflow", WF,
                 "--state", '{"pending_approval": {"what": "x"}}']) == 0  # fmt: skip
    assert capsys.readouterr().out == f"{WF} saved at version 1\n"
    assert main(["--db", str(db), "checkpoint", "list", "--actor", "u42"]) == 0
    assert "[pending approval]" in capsys.readouterr().out
    assert main(["--db", str(db), "toolcall", "begin", "--actor", "u42", "--workflow", WF,
                 "--key", "k"]) == 0  # fmt: skip
    assert capsys.readouterr().out == "perform\n"


def test_export_counts_checkpoints_and_tool_calls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    who = ("--actor", "u42", "--workflow", WF)
    ok(capsys, db, "checkpoint", "save", *who, "--state", json.dumps({"step": "pay"}))
    ok(capsys, db, "toolcall", "begin", *who, "--key", "k-1")
    out = tmp_path / "u42.jsonl"
    data = ok(capsys, db, "export", "--actor", "u42", "--out", str(out))
    assert (data["checkpoints"], data["tool_calls"], data["events"]) == (1, 1, 0)
    types = [json.loads(line)["type"] for line in out.read_text().splitlines()]
    assert sorted(types) == ["checkpoint", "tool_call"]
