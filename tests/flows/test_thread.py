"""Thread state: checkpoints under optimistic concurrency, idempotent tool calls, retention."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from remem import ConflictError, InvalidInput, Memory, NotFound, RefusedContent
from remem.store.sqlite.thread import SQLiteThreadStore
from remem.thread.api import (
    begin_tool_call,
    checkpoint_list,
    checkpoint_load,
    checkpoint_save,
    complete_tool_call,
    expire_thread_state,
    release_tool_call,
    tool_call_status,
    tool_calls,
)
from remem.thread.checkpoints import (
    CallStatus,
    CheckpointConflict,
    CheckpointState,
    ToolCall,
    resume_state,
    retention_hold,
)
from tests.support.backends import both_backends
from tests.support.clock import T0, Clock
from tests.support.thread import KEY, STATE, WF, WORKFLOW_SCRIPT, race, resume

# -- checkpoints -------------------------------------------------------------------------


@both_backends
def test_a_checkpoint_round_trips_every_field(mem: Memory, clock: Clock) -> None:
    saved = checkpoint_save(mem, actor="u42", workflow=WF, state=STATE)
    assert saved.version == 1 and saved.created_at == clock.now == saved.updated_at
    loaded = checkpoint_load(mem, actor="u42", workflow=WF)
    assert loaded == saved
    assert loaded.state.as_dict() == STATE
    assert loaded.tenant == "default" and loaded.expires_at is None
    assert not loaded.awaiting_approval
    assert loaded.as_dict()["completed_steps"] == ["quote", "confirm"]


@both_backends
def test_each_save_names_the_version_it_read_and_bumps_it(mem: Memory, clock: Clock) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={"step": "quote"})
    clock.advance(minutes=1)
    v2 = checkpoint_save(
        mem,
        actor="u42",
        workflow=WF,
        state=CheckpointState(step="pay", completed_steps=("quote",)),
        expected_version=1,
    )
    assert v2.version == 2 and v2.state.step == "pay" and v2.updated_at == clock.now
    assert v2.created_at == clock.now - timedelta(minutes=1)


@both_backends
def test_a_stale_writer_gets_a_conflict_and_the_checkpoint_is_unchanged(mem: Memory) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={"step": "quote"})
    current = checkpoint_save(
        mem, actor="u42", workflow=WF, state={"step": "pay"}, expected_version=1
    )
    with pytest.raises(CheckpointConflict, match="at version 2, not 1") as caught:
        checkpoint_save(mem, actor="u42", workflow=WF, state={"step": "oops"}, expected_version=1)
    assert caught.value.current_version == 2 and caught.value.code == "conflict"
    assert isinstance(caught.value, ConflictError)
    assert checkpoint_load(mem, actor="u42", workflow=WF) == current


@both_backends
def test_creating_twice_or_updating_a_missing_checkpoint_conflicts(mem: Memory) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={"step": "quote"})
    with pytest.raises(CheckpointConflict, match="already has a checkpoint at version 1"):
        checkpoint_save(mem, actor="u42", workflow=WF, state={"step": "again"})
    with pytest.raises(CheckpointConflict, match="has no checkpoint") as caught:
        checkpoint_save(mem, actor="u42", workflow="other", state={}, expected_version=3)
    assert caught.value.current_version is None
    assert checkpoint_load(mem, actor="u42", workflow=WF).state.step == "quote"
    with pytest.raises(NotFound):
        checkpoint_load(mem, actor="u42", workflow="other")


def test_concurrent_savers_exactly_one_wins_per_version(tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    outcomes = race(
        db, 8, lambda m, i: checkpoint_save(m, actor="u42", workflow=WF, state={"data": {"w": i}})
    )
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1
    assert all(isinstance(o, CheckpointConflict) for o in outcomes if isinstance(o, Exception))
    for version in range(1, 6):
        outcomes = race(
            db,
            8,
            lambda m, i, v=version: checkpoint_save(
                m, actor="u42", workflow=WF, state={"data": {"w": i}}, expected_version=v
            ),
        )
        winners = [o for o in outcomes if not isinstance(o, Exception)]
        assert len(winners) == 1 and winners[0].version == version + 1
        losers = [o for o in outcomes if isinstance(o, Exception)]
        assert all(isinstance(o, CheckpointConflict) for o in losers), losers
        assert {o.current_version for o in losers} == {version + 1}
        with Memory.open(db, embedder=None) as m:
            assert checkpoint_load(m, actor="u42", workflow=WF) == winners[0]


@both_backends
def test_threads_sharing_one_memory_also_get_one_winner(mem: Memory) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={})
    barrier = threading.Barrier(6, timeout=60)
    wins: list[int] = []
    conflicts: list[int | None] = []

    def work(i: int) -> None:
        barrier.wait()
        try:
            checkpoint_save(
                mem, actor="u42", workflow=WF, state={"data": {"w": i}}, expected_version=1
            )
            wins.append(i)
        except CheckpointConflict as exc:
            conflicts.append(exc.current_version)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and conflicts == [2] * 5


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"stepp": "typo"}, "unknown checkpoint field"),
        ({"step": ""}, "step name"),
        ({"completed_steps": "quote"}, "list of step names"),
        ({"completed_steps": ["ok", "bad\nstep"]}, "step name"),
        ({"pending_approval": "yes"}, "pending_approval must be a JSON object"),
        ({"data": {"x": float("nan")}}, "JSON cannot represent"),
        ({"data": {"x": {1, 2}}}, "not JSON"),
        ({"data": {"x": {1: "a"}}}, "non-string key"),
        ({"artifacts": ["x" * 300_000]}, "at most"),
        ({"idempotency_key": "has space"}, "idempotency_key"),
        (["step"], "must be a JSON object"),
    ],
)
def test_bad_state_is_refused_and_nothing_is_stored(mem: Memory, state: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        checkpoint_save(mem, actor="u42", workflow=WF, state=state)
    assert checkpoint_list(mem, actor="u42") == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"workflow": "has space"},
        {"actor": "../etc"},
        {"expected_version": 0},
        {"expected_version": True},
        {"retention": timedelta(0)},
    ],
)
def test_bad_arguments_are_refused(mem: Memory, kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"actor": "u42", "workflow": WF, "state": {}, **kwargs}
    with pytest.raises(InvalidInput):
        checkpoint_save(mem, **args)


@both_backends
def test_list_is_newest_first_and_flags_pending_approvals(mem: Memory, clock: Clock) -> None:
    checkpoint_save(mem, actor="u42", workflow="a", state={})
    clock.advance(seconds=1)
    checkpoint_save(mem, actor="u42", workflow="b", state={"pending_approval": {"what": "$30"}})
    listed = checkpoint_list(mem, actor="u42")
    assert [c.workflow for c in listed] == ["b", "a"]
    assert [c.awaiting_approval for c in listed] == [True, False]
    empty = checkpoint_save(mem, actor="u42", workflow="c", state={"pending_approval": {}})
    assert empty.awaiting_approval and empty.as_dict()["pending_approval"] == {}


@both_backends
def test_secrets_are_refused_in_thread_state_and_never_echoed(mem: Memory) -> None:
    card = "4111 1111 1111 1111"
    with pytest.raises(RefusedContent, match="a password") as caught:
        checkpoint_save(mem, actor="u42", workflow=WF, state={"data": {"password": "hunter22x"}})
    assert "hunter22x" not in str(caught.value) and caught.value.code == "refused_content"
    with pytest.raises(RefusedContent, match="payment card") as caught:
        begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"pan": card})
    assert card not in str(caught.value)
    assert checkpoint_list(mem, actor="u42") == [] and tool_calls(mem, actor="u42") == []
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"token": "tok_1"})
    with pytest.raises(RefusedContent, match="access token"):
        complete_tool_call(
            mem,
            actor="u42",
            workflow=WF,
            idempotency_key=KEY,
            result={"auth": "Bearer abcdefghijklmnop1234567890"},
        )
    call = tool_call_status(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert call is not None and call.status is CallStatus.STARTED and call.result is None


# -- authorised resume ---------------------------------------------------------------------


@both_backends
def test_another_actor_or_tenant_cannot_see_or_touch_a_workflow(
    mem: Memory, db_path: Path, clock: Clock
) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state=STATE)
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30})
    with pytest.raises(NotFound, match="no checkpoint") as caught:
        checkpoint_load(mem, actor="mallory", workflow=WF)
    assert "u42" not in str(caught.value)
    assert checkpoint_list(mem, actor="mallory") == []
    assert tool_call_status(mem, actor="mallory", workflow=WF, idempotency_key=KEY) is None
    assert tool_calls(mem, actor="mallory") == []
    with pytest.raises(NotFound):
        complete_tool_call(mem, actor="mallory", workflow=WF, idempotency_key=KEY, result={})
    with pytest.raises(NotFound):
        release_tool_call(mem, actor="mallory", workflow=WF, idempotency_key=KEY)
    with pytest.raises(CheckpointConflict, match="has no checkpoint"):
        checkpoint_save(mem, actor="mallory", workflow=WF, state={}, expected_version=1)

    with Memory.open(db_path, tenant="evil", embedder=None, clock=clock) as other:
        with pytest.raises(NotFound):
            checkpoint_load(other, actor="u42", workflow=WF)
        assert checkpoint_list(other, actor="u42") == []
        assert tool_call_status(other, actor="u42", workflow=WF, idempotency_key=KEY) is None
        # the same names in another tenant are another workflow altogether
        theirs = checkpoint_save(other, actor="u42", workflow=WF, state={"step": "theirs"})
        assert theirs.version == 1 and theirs.tenant == "evil"
    assert checkpoint_load(mem, actor="u42", workflow=WF).state.step == "pay"
    call = tool_call_status(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert call is not None and call.status is CallStatus.STARTED


# -- tool calls ----------------------------------------------------------------------------------


@both_backends
def test_a_tool_call_is_begun_once_and_a_second_begin_puts_it_in_doubt(mem: Memory) -> None:
    first = begin_tool_call(
        mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30}
    )
    assert first.begun and first.decision == "perform"
    assert first.call.status is CallStatus.STARTED and first.call.tool_call_id == "call_000001"
    again = begin_tool_call(
        mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30}
    )
    assert not again.begun and again.decision == "unknown"
    assert again.call.status is CallStatus.UNKNOWN and again.call.attempts == 2
    assert again.call.tool_call_id == "call_000001"
    assert len(tool_calls(mem, actor="u42")) == 1
    unresolved = tool_calls(mem, actor="u42", unresolved=True)
    assert [c.idempotency_key for c in unresolved] == [KEY]


@both_backends
def test_completed_calls_hand_back_their_result(mem: Memory, clock: Clock) -> None:
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30})
    clock.advance(seconds=5)
    done = complete_tool_call(
        mem, actor="u42", workflow=WF, idempotency_key=KEY, result={"receipt": "r-1"}
    )
    assert done.status is CallStatus.COMPLETED and done.completed_at == clock.now
    assert resume_state(done) == "done"
    later = begin_tool_call(
        mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30}
    )
    assert later.decision == "done" and later.call.result == {"receipt": "r-1"}
    assert later.call.status is CallStatus.COMPLETED
    # a retried completion with the same result is harmless; a different one is not
    same = complete_tool_call(
        mem, actor="u42", workflow=WF, idempotency_key=KEY, result={"receipt": "r-1"}
    )
    assert same.result == {"receipt": "r-1"} and same.completed_at == done.completed_at
    with pytest.raises(ConflictError, match="different result"):
        complete_tool_call(
            mem, actor="u42", workflow=WF, idempotency_key=KEY, result={"receipt": "r-2"}
        )
    assert tool_calls(mem, actor="u42", unresolved=True) == []


@both_backends
def test_one_key_names_one_request(mem: Memory) -> None:
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30})
    with pytest.raises(ConflictError, match="different request"):
        begin_tool_call(
            mem, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 3000}
        )
    call = tool_call_status(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert call is not None and call.status is CallStatus.STARTED and call.attempts == 1


@both_backends
def test_release_reopens_an_unresolved_call_but_never_a_completed_one(mem: Memory) -> None:
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    released = release_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert released.status is CallStatus.UNKNOWN
    assert tool_call_status(mem, actor="u42", workflow=WF, idempotency_key=KEY) is None
    fresh = begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    assert fresh.decision == "perform"
    complete_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY, result=None)
    with pytest.raises(ConflictError, match="cannot be released"):
        release_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    with pytest.raises(NotFound, match="begin it first"):
        complete_tool_call(mem, actor="u42", workflow=WF, idempotency_key="nope", result=1)


def test_concurrent_begins_let_exactly_one_caller_perform(tmp_path: Path) -> None:
    outcomes = race(
        tmp_path / "race.db",
        8,
        lambda m, i: begin_tool_call(
            m, actor="u42", workflow=WF, idempotency_key=KEY, request={"amount": 30}
        ),
    )
    assert [o.decision for o in outcomes].count("perform") == 1
    assert {o.call.tool_call_id for o in outcomes} == {outcomes[0].call.tool_call_id}
    assert max(o.call.attempts for o in outcomes) == 8


def _call(status: CallStatus) -> ToolCall:
    return ToolCall("t", "a", "w", "k", "c", status, 1, None, None, T0)


def test_resume_state_is_a_pure_decision() -> None:
    assert resume_state(None) == "never_started"
    assert resume_state(_call(CallStatus.COMPLETED)) == "done"
    assert resume_state(_call(CallStatus.STARTED)) == "unknown"
    assert resume_state(_call(CallStatus.UNKNOWN)) == "unknown"


# -- the done-when test: a process killed between "started" and "completed" ---------------------


def _killed_at(tmp_path: Path, point: str) -> tuple[Path, Path, Path]:
    script, db, effects = tmp_path / "workflow.py", tmp_path / "wf.db", tmp_path / "effects.txt"
    script.write_text(WORKFLOW_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db), str(effects), point],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == point, f"child did not reach {point}: {line!r}"
        proc.kill()  # SIGKILL: no cleanup, no rollback handlers, no atexit
    finally:
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()
    assert proc.returncode == -9
    return script, db, effects


def test_a_kill_between_started_and_completed_is_neither_repeated_nor_lost(
    tmp_path: Path,
) -> None:
    script, db, effects = _killed_at(tmp_path, "after_effect")
    assert effects.read_text().splitlines() == ["paid 30"]

    resumed = resume(script, db, effects)
    assert resumed["begun"] is False and resumed["decision"] == "unknown"
    assert resumed["tool_call"]["status"] == "unknown" and resumed["tool_call"]["result"] is None
    assert effects.read_text().splitlines() == ["paid 30"]  # not repeated

    with Memory.open(db, embedder=None) as mem:  # not lost: surfaced for reconciliation
        (open_call,) = tool_calls(mem, actor="u42", unresolved=True)
        assert open_call.idempotency_key == KEY and open_call.request == {"amount": 30}
        assert checkpoint_load(mem, actor="u42", workflow=WF).state.step == "pay"
        # a reconciler checks the payment provider and records the verified outcome
        complete_tool_call(
            mem, actor="u42", workflow=WF, idempotency_key=KEY, result={"receipt": "r-1"}
        )
    again = resume(script, db, effects)
    assert again["decision"] == "done" and again["tool_call"]["result"] == {"receipt": "r-1"}
    assert effects.read_text().splitlines() == ["paid 30"]


def test_a_kill_after_completion_resumes_as_done_with_its_result(tmp_path: Path) -> None:
    script, db, effects = _killed_at(tmp_path, "after_complete")
    resumed = resume(script, db, effects)
    assert resumed["begun"] is False and resumed["decision"] == "done"
    assert resumed["tool_call"]["status"] == "completed"
    assert resumed["tool_call"]["result"] == {"receipt": "r-1"}
    assert effects.read_text().splitlines() == ["paid 30"]
    with Memory.open(db, embedder=None) as mem:
        assert tool_calls(mem, actor="u42", unresolved=True) == []


def test_an_uninterrupted_run_performs_once_and_checkpoints_the_outcome(tmp_path: Path) -> None:
    script, db, effects = tmp_path / "workflow.py", tmp_path / "wf.db", tmp_path / "effects.txt"
    script.write_text(WORKFLOW_SCRIPT)
    assert resume(script, db, effects)["decision"] == "perform"
    assert resume(script, db, effects)["decision"] == "done"
    assert effects.read_text().splitlines() == ["paid 30"]
    with Memory.open(db, embedder=None) as mem:
        cp = checkpoint_load(mem, actor="u42", workflow=WF)
    assert cp.version == 2 and cp.state.step == "notify"
    assert cp.state.last_verified_outcome == {"receipt": "r-1"}


# -- retention ----------------------------------------------------------------------------------


@both_backends
def test_retention_expires_old_workflows_but_holds_and_reports_open_ones(
    mem: Memory, db_path: Path, clock: Clock
) -> None:
    day = timedelta(days=1)
    checkpoint_save(mem, actor="u42", workflow="old", state={"step": "done"}, retention=day)
    begin_tool_call(mem, actor="u42", workflow="old", idempotency_key="k1", retention=day)
    complete_tool_call(mem, actor="u42", workflow="old", idempotency_key="k1", result=1)
    checkpoint_save(
        mem,
        actor="u42",
        workflow="approval",
        state={"step": "refund", "pending_approval": {"what": "refund $30", "by": "manager"}},
        retention=day,
    )
    checkpoint_save(mem, actor="u42", workflow="in-doubt", state={}, retention=day)
    begin_tool_call(mem, actor="u42", workflow="in-doubt", idempotency_key="k2", retention=day)
    checkpoint_save(mem, actor="u42", workflow="kept", state={})  # no retention
    checkpoint_save(mem, actor="u42", workflow="young", state={}, retention=3 * day)
    begin_tool_call(mem, actor="u7", workflow="orphan-done", idempotency_key="k3", retention=day)
    complete_tool_call(mem, actor="u7", workflow="orphan-done", idempotency_key="k3", result=2)
    begin_tool_call(mem, actor="u7", workflow="orphan-open", idempotency_key="k4", retention=day)
    with Memory.open(db_path, tenant="other", embedder=None, clock=clock) as other:
        checkpoint_save(other, actor="u42", workflow="old", state={}, retention=day)

    clock.advance(hours=23)
    assert expire_thread_state(mem).as_dict() == {
        "checkpoints_expired": 0,
        "tool_calls_expired": 0,
        "held": [],
    }
    clock.advance(hours=2)
    report = expire_thread_state(mem)
    assert report.checkpoints_expired == 1 and report.tool_calls_expired == 2
    assert sorted((h.actor, h.workflow, h.reason, h.idempotency_key) for h in report.held) == [
        ("u42", "approval", "pending_approval", None),
        ("u42", "in-doubt", "unresolved_tool_call", None),
        ("u7", "orphan-open", "unresolved_tool_call", "k4"),
    ]
    assert sorted(c.workflow for c in checkpoint_list(mem, actor="u42")) == [
        "approval",
        "in-doubt",
        "kept",
        "young",
    ]
    assert tool_call_status(mem, actor="u42", workflow="old", idempotency_key="k1") is None
    assert [c.idempotency_key for c in tool_calls(mem, actor="u7")] == ["k4"]
    with Memory.open(db_path, tenant="other", embedder=None, clock=clock) as other:
        assert checkpoint_load(other, actor="u42", workflow="old").version == 1  # not its run

    # held items stay held on every run until someone resolves them
    assert len(expire_thread_state(mem).held) == 3
    checkpoint_save(
        mem, actor="u42", workflow="approval", state={"step": "refund"}, expected_version=1
    )  # approved: the save clears the approval and, with no retention, the expiry
    complete_tool_call(mem, actor="u42", workflow="in-doubt", idempotency_key="k2", result="ok")
    report = expire_thread_state(mem)
    assert report.checkpoints_expired == 1 and report.tool_calls_expired == 1
    assert [h.workflow for h in report.held] == ["orphan-open"]


def test_retention_hold_is_a_pure_decision() -> None:
    assert retention_hold(False, False) is None
    assert retention_hold(True, False) == "pending_approval"
    assert retention_hold(False, True) == "unresolved_tool_call"
    assert retention_hold(True, True) == "pending_approval"


def test_forget_actor_erases_their_thread_state(mem: Memory) -> None:
    from remem.store.sqlite.store import SQLiteStore
    from remem.store.sqlite.thread import count_actor_rows

    checkpoint_save(mem, actor="u42", workflow=WF, state={"pending_approval": {"x": 1}})
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    checkpoint_save(mem, actor="u7", workflow=WF, state={})
    assert isinstance(mem.store, SQLiteStore)
    erased = SQLiteThreadStore(mem.store).forget_actor(mem.tenant, "u42")
    assert erased == {"checkpoints": 1, "tool_calls": 1}
    assert count_actor_rows(mem.store, mem.tenant, "u42") == {"checkpoints": 0, "tool_calls": 0}
    assert count_actor_rows(mem.store, mem.tenant, "u7") == {"checkpoints": 1, "tool_calls": 0}
    assert checkpoint_list(mem, actor="u42") == [] and tool_calls(mem, actor="u42") == []
    assert len(checkpoint_list(mem, actor="u7")) == 1


@both_backends
def test_forget_and_export_reach_thread_state(mem: Memory) -> None:
    checkpoint_save(mem, actor="u42", workflow=WF, state={"pending_approval": {"x": 1}})
    begin_tool_call(mem, actor="u42", workflow=WF, idempotency_key=KEY)
    rows = list(mem.export(actor="u42"))
    assert [r["type"] for r in rows] == ["checkpoint", "tool_call"]
    report = mem.forget(actor="u42")
    assert report.verified and report.deleted["checkpoints"] == 1
    assert report.deleted["tool_calls"] == 1 and report.remaining["checkpoints"] == 0
    assert checkpoint_list(mem, actor="u42") == []
