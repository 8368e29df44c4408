"""LLM strategies, model consolidation and job retries, against a real
OpenAI-compatible server on loopback (`remem.testing.llm_server.ScriptedLLM`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder
from remem.llm.client import ChatModel, LLMSettings
from remem.llm.retry import RetryPolicy
from remem.model import Status
from remem.testing.llm_server import Reply, ScriptedLLM
from remem.testing.responders import memory_model
from tests.support.llm import llm_config

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0 + timedelta(days=30)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def _open(tmp_path: Path, config: Any, clock: Clock | None = None, **kw: Any) -> Memory:
    return Memory.open(
        tmp_path / "m.db", embedder=HashEmbedder(), config=config, clock=clock or Clock(), **kw
    )


def _conversation(mem: Memory) -> None:
    turns = [
        ("s1", "user", "Hi, I'm Ana. I live in Lisbon.", 0),
        ("s1", "assistant", "Nice to meet you, Ana!", 1),
        ("s1", "user", "I prefer aisle seats on long flights.", 2),
        ("s1", "tool", "book_flight LIS-BER: confirmed, ref ABC123", 3),
        ("s2", "user", "Can you check my hotel too?", 60 * 24),
        ("s2", "tool", "book_hotel Berlin: pending, waiting for payment", 60 * 24 + 1),
    ]
    for i, (session, role, text, minutes) in enumerate(turns):
        mem.add_event(
            actor="ana",
            session=session,
            role=role,
            text=text,
            time=T0 + timedelta(minutes=minutes),
            event_id=f"e{i}",
        )


def test_a_configured_endpoint_yields_all_four_kinds_with_provenance(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm)) as mem:
        _conversation(mem)
        result = mem.process()
        assert result.failed == 0 and result.jobs_done == 6 * 4
        recs = mem.records(actor="ana")
        kinds = {r.kind.value for r in recs}
        assert kinds == {"semantic", "preference", "summary", "episodic"}
        for r in recs:
            assert r.source.event_ids, r
            assert "prompt:" in r.source.extractor and "llm:fake-model" in r.source.extractor
        home = next(r for r in recs if r.field == "home city")  # the model's "home_city"
        assert home.value == "Lisbon" and home.source.event_ids == ("e0",)
        assert home.source.extractor.endswith("prompt:semantic/3")
        # only user and assistant turns feed semantic; tool turns feed episodic
        semantic_sources = {
            e for r in recs if r.kind.value == "semantic" for e in r.source.event_ids
        }
        assert semantic_sources <= {"e0", "e2", "e4"}
        episodes = [r for r in recs if r.kind.value == "episodic"]
        assert {r.source.event_ids for r in episodes} == {("e3",), ("e5",)}
        assert any(r.authority.value == "verified_outcome" for r in episodes)
        summaries = [r for r in recs if r.kind.value == "summary"]
        assert {r.field for r in summaries} == {
            "summary:s1:conversation",
            "summary:s2:conversation",
        }
        s2 = next(r for r in summaries if r.field == "summary:s2:conversation")
        meta = json.loads(s2.value or "{}")
        assert meta["first_event"] == "e4" and meta["last_event"] == "e5"
        assert meta["unresolved"] == ["Can you check my hotel too?"]
        assert meta["key_events"] == ["e5"] and "summary/1" in meta["summariser"]
        usage = mem.store.model_calls.llm_usage(mem.tenant)
        assert usage["calls"] == llm.calls and usage["errors"] == 0
        assert usage["prompt_tokens"] > 0


def test_one_call_per_strategy_per_session_batch(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        for i in range(10):
            mem.add_event(
                actor="ana", session="s1", role="user", text=f"I own {i + 2} bikes now.",
                time=T0 + timedelta(minutes=i), event_id=f"b{i}",
            )  # fmt: skip
        mem.process()
        extraction = [r for r in llm.requests if "durable facts" in r["messages"][0]["content"]]
        assert len(extraction) == 1  # ten events, one batch, one call
        assert "[10]" in extraction[0]["messages"][1]["content"]


def test_model_update_supersedes_through_policy(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I enjoy my job as a nurse.",
                      time=T0, event_id="a")  # fmt: skip
        mem.process()
        later = T0 + timedelta(days=1)
        mem.add_event(actor="ana", session="s2", role="user", event_id="b",
                      text="I moved jobs, now a nurse in Porto.", time=later)  # fmt: skip
        mem.process()
        recs = mem.records(actor="ana", all=True)
        old = next(r for r in recs if r.source.event_ids == ("a",))
        new = next(r for r in recs if r.source.event_ids == ("b",))
        assert old.status is Status.INVALID and old.superseded_by == new.id
        assert new.supersedes == old.id and new.status is Status.ACTIVE
        actions = [h.action for h in mem.history(new.id)]
        assert actions == ["UPDATE"]
        reason = mem.history(new.id)[0].reason
        assert reason.startswith("model")


def test_an_older_event_never_overwrites_a_newer_confirmed_record(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    clock = Clock()
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm, {"semantic": {}}), clock) as mem:
        confirmed = mem.remember(actor="ana", text="The user said: I moved to the coast.")
        # an event from before the confirmation arrives late; the model says UPDATE
        mem.add_event(actor="ana", session="s0", role="user", text="I moved to the mountains.",
                      time=clock.now - timedelta(days=3), event_id="old")  # fmt: skip
        mem.process()
        still = mem.get(confirmed.id)
        assert still.status is Status.ACTIVE and still.superseded_by is None
        late = next(r for r in mem.records(actor="ana", all=True) if r.source.event_ids == ("old",))
        assert late.status is Status.INVALID  # kept as history, never wins


def test_a_verdict_naming_a_record_outside_the_neighbours_is_not_applied(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        other = mem.remember(actor="bob", text="The user said: Bob has a dog named Rex.")
        first = mem.remember(actor="ana", text="The user said: Ana has a dog.")

        def hostile(request: dict[str, Any]) -> Reply:
            if "consistent" in request["messages"][0]["content"]:
                return Reply.json({"decisions": [
                    {"candidate": 1, "action": "INVALIDATE", "target": other.id, "reason": "x"}
                ]})  # fmt: skip
            return memory_model(request)

        llm.responder = hostile
        mem.add_event(actor="ana", session="s1", role="user", text="Ana has a dog.", time=T0,
                      event_id="d")  # fmt: skip
        mem.process()
        assert mem.get(other.id).status is Status.ACTIVE
        assert mem.get(first.id).status is Status.ACTIVE
        added = [r for r in mem.records(actor="ana") if r.source.event_ids == ("d",)]
        assert len(added) == 1


def test_rerunning_a_job_creates_no_duplicate(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        _conversation(mem)
        mem.process()
        before = sorted((r.text, r.status.value) for r in mem.records(actor="ana", all=True))
        assert mem.store.jobs.retry_jobs(mem.tenant, ("done",)) == 6  # every job runs again
        mem.process()
        after = sorted((r.text, r.status.value) for r in mem.records(actor="ana", all=True))
        assert after == before


def test_a_failing_endpoint_loses_nothing_and_jobs_retry_recovers(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.responder = lambda _req: Reply.error(500, "down")
    config = llm_config(llm, {"semantic": {}, "preference": {}})
    with _open(tmp_path, config) as mem:
        _conversation(mem)
        result = mem.process()
        assert result.failed > 0 and mem.records(actor="ana") == []
        failed = mem.jobs("failed")
        assert len(failed) == 12  # two attempts each, then failed for good
        assert all(j.attempts == 2 for j in failed)
        assert all("llm_unavailable" in (j.last_error or "") for j in failed)
        assert all("500" in (j.last_error or "") for j in failed)
        usage = mem.store.model_calls.llm_usage(mem.tenant)
        assert usage["errors"] == usage["calls"] == llm.calls
        llm.responder = memory_model  # the endpoint is back
        assert mem.retry_jobs() == 12
        recovered = mem.process()
        assert recovered.failed == 0 and recovered.jobs_done == 12
        assert mem.jobs("failed") == [] and mem.records(actor="ana")


def test_one_strategy_failing_never_blocks_another(tmp_path: Path, llm: ScriptedLLM) -> None:
    def broken_preferences(request: dict[str, Any]) -> Reply:
        if "preferences" in request["messages"][0]["content"]:
            return Reply.text("this is not json")
        return memory_model(request)

    llm.responder = broken_preferences
    with _open(tmp_path, llm_config(llm, {"semantic": {}, "preference": {}})) as mem:
        _conversation(mem)
        mem.process()
        kinds = {r.kind.value for r in mem.records(actor="ana")}
        assert kinds == {"semantic"}
        failed = mem.jobs("failed")
        assert failed and {j.strategy for j in failed} == {"preference"}
        assert all("llm_bad_output" in (j.last_error or "") for j in failed)


def test_timeouts_429_and_cut_connections_are_retried(tmp_path: Path, llm: ScriptedLLM) -> None:
    waits: list[float] = []
    settings = LLMSettings(base_url=llm.base_url, model="fake-model", timeout=0.5)
    chat = ChatModel(settings, RetryPolicy(attempts=4, base_seconds=0.01), sleep=waits.append)
    llm.script(
        Reply.slow(1.5, Reply.json({"facts": []})),  # past the client's timeout
        Reply.rate_limited(retry_after=0.04),
        Reply.cut(),  # the connection drops mid-response
    )
    llm.responder = memory_model  # the fourth try gets an answer
    with _open(tmp_path, llm_config(llm, {"semantic": {}}), chat=chat) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Faro.", time=T0)
        result = mem.process()
        assert result.failed == 0 and result.records_added == 1
        usage = mem.store.model_calls.llm_usage(mem.tenant)
        assert usage["calls"] == 4 and usage["errors"] == 3
    assert len(waits) == 3
    assert waits[1] >= 0.04  # Retry-After is honoured as a floor
    assert waits[0] < 0.04 and waits[2] < 0.1  # our own backoff is short here


def test_malformed_output_is_retried_then_recorded(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script(
        Reply.text("{not json"), Reply.json({"facts": [{"text": "Ana likes figs", "event": 1}]})
    )
    llm.responder = memory_model
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I like figs.", time=T0)
        result = mem.process()
        assert result.failed == 0
        assert [r.text for r in mem.records(actor="ana")] == ["Ana likes figs"]
        usage = mem.store.model_calls.llm_usage(mem.tenant)
        assert usage["calls"] == 2 and usage["errors"] == 1


def test_consolidation_failure_adds_the_candidate(tmp_path: Path, llm: ScriptedLLM) -> None:
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        mem.remember(actor="ana", text="The user said: Ana likes figs a lot.")

        def no_consolidation(request: dict[str, Any]) -> Reply:
            if "consistent" in request["messages"][0]["content"]:
                return Reply.error(503, "overloaded")
            return memory_model(request)

        llm.responder = no_consolidation
        mem.add_event(actor="ana", session="s1", role="user", text="Ana likes dried figs.",
                      time=T0, event_id="f")  # fmt: skip
        result = mem.process()
        assert result.failed == 0 and result.records_added == 1
        assert any(r.source.event_ids == ("f",) for r in mem.records(actor="ana"))


def test_the_key_is_never_logged(
    tmp_path: Path, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-test-DO-NOT-LOG-1234567890"
    llm.responder = lambda _req: Reply.error(500, "down")
    config = llm_config(llm, {"semantic": {}}, api_key=secret)
    caplog.set_level("DEBUG")
    with _open(tmp_path, config) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text="I live in Faro.", time=T0)
        mem.process()
        jobs = json.dumps([j.as_dict() for j in mem.jobs()])
        shown = json.dumps(mem.config.as_dict())
    assert llm.saw_auth
    assert secret not in caplog.text and secret not in jobs and secret not in shown
    assert secret not in repr(config.llm)
    raw = (tmp_path / "m.db").read_bytes()
    assert secret.encode() not in raw


def test_the_command_line_shows_failures_and_retries_them(
    tmp_path: Path, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.cli import ok

    config = tmp_path / "remem.toml"
    config.write_text(
        f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "fake-model"\n'
        "[strategies.semantic]\n[retry]\nattempts = 1\njob_attempts = 1\n",
        encoding="utf-8",
    )
    db = tmp_path / "cli.db"
    llm.responder = lambda _req: Reply.error(502, "bad gateway")
    run = ("--config", str(config))
    ok(capsys, db, *run, "event", "add", "--actor", "ana", "--session", "s1", "--role", "user",
       "--text", "I live in Faro.")  # fmt: skip
    processed = ok(capsys, db, *run, "process")
    assert processed["failed"] == 1 and processed["records_added"] == 0
    listed = ok(capsys, db, *run, "jobs", "list", "--status", "failed")
    (job,) = listed["jobs"]
    assert job["strategy"] == "semantic" and job["attempts"] == 1
    assert "502" in job["last_error"] and listed["llm_usage"]["errors"] == 1
    llm.responder = memory_model  # the endpoint is back
    retried = ok(capsys, db, *run, "jobs", "retry", "--failed")
    assert retried["requeued"] == 1 and retried["processed"]["records_added"] == 1
    assert retried["counts"] == {"pending": 0, "running": 0, "done": 1, "failed": 0}
    records = ok(capsys, db, *run, "records", "list", "--actor", "ana")["records"]
    assert [r["value"] for r in records] == ["Faro"]


def test_a_model_fact_with_a_secret_in_its_attribute_or_value_is_never_stored(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    def leaky(request: dict[str, Any]) -> Reply:
        if "durable facts" in request["messages"][0]["content"]:
            return Reply.json({"facts": [
                {"text": "Ana set up her wifi", "attribute": "wifi password",
                 "value": "hunter2x7", "event": 1},
                {"text": "Ana pays by card", "attribute": "card", "value": "4111 1111 1111 1111",
                 "event": 1},
                {"text": "Ana lives in Lisbon", "attribute": "home city", "value": "Lisbon",
                 "event": 1},
            ]})  # fmt: skip
        return memory_model(request)

    llm.responder = leaky
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        mem.add_event(actor="ana", session="s1", role="user", time=T0, event_id="w",
                      text="I live in Lisbon and set up the wifi.")  # fmt: skip
        mem.process()
        stored = mem.records(actor="ana", all=True)
        assert [r.value for r in stored] == ["Lisbon"]
        dumped = json.dumps([r.as_dict() for r in stored])
    assert "hunter2x7" not in dumped and "4111" not in dumped


def test_a_model_fact_with_a_blank_value_is_kept_as_text_with_no_field(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    """A model that names an attribute but gives "  " as its value states no value:
    `fact get` must not find an empty answer."""

    def blank(request: dict[str, Any]) -> Reply:
        if "durable facts" in request["messages"][0]["content"]:
            return Reply.json({"facts": [
                {"text": "Ana has a favourite colour", "attribute": "favourite colour",
                 "value": "   ", "event": 1},
            ]})  # fmt: skip
        return memory_model(request)

    llm.responder = blank
    with _open(tmp_path, llm_config(llm, {"semantic": {}})) as mem:
        mem.add_event(actor="ana", session="s1", role="user", time=T0, event_id="c",
                      text="I do have a favourite colour.")  # fmt: skip
        mem.process()
        (stored,) = mem.records(actor="ana", all=True)
        assert stored.text == "Ana has a favourite colour"
        assert (stored.field, stored.value) == (None, None)
        assert mem.fact(actor="ana", field="favourite colour").status == "not_found"
