"""Names are matched whole: a trailing newline or carriage return is not a new name.

`alice\\n` once passed the name pattern (`$` matches before a final newline)
and became a second actor next to `alice`. Every surface refuses it now.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem.config.config import load_config
from remem.errors import ConfigError, InvalidInput
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from tests.support.cli import err, ok

BAD = ["alice\n", "alice\r", "alice\r\n", "turn-1\n"]


@pytest.mark.parametrize("bad", BAD)
def test_the_library_refuses_names_with_a_line_end(mem: Memory, bad: str) -> None:
    good = {"actor": "alice", "session": "s1", "role": "user", "text": "hello there"}
    for where in ("actor", "session", "event_id"):
        with pytest.raises(InvalidInput, match="must be 1-200 characters"):
            mem.add_event(**{**good, where: bad})
    with pytest.raises(InvalidInput):
        mem.remember(actor=bad, text="Alice is vegetarian")
    with pytest.raises(InvalidInput):
        Memory(mem.store, tenant=bad)
    with pytest.raises(InvalidInput):
        keyring.create_key(mem.store.keys, tenant=bad)
    with pytest.raises(InvalidInput):
        keyring.create_key(mem.store.keys, tenant="acme", actor=bad)
    assert mem.events(actor="alice") == []


@pytest.mark.parametrize("bad", BAD)
def test_the_cli_refuses_names_with_a_line_end(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str
) -> None:
    db = tmp_path / "names.db"
    base = ["event", "add", "--session", "s1", "--role", "user", "--text", "hi"]
    assert err(capsys, db, *base, "--actor", bad)["code"] == "invalid_input"
    assert err(capsys, db, *base, "--actor", "alice", "--id", bad)["code"] == "invalid_input"
    assert (
        err(capsys, db, "--tenant", bad, "recall", "--actor", "a", "--query", "x")["code"]
        == "invalid_input"
    )
    assert ok(capsys, db, "event", "list", "--actor", "alice")["events"] == []


@pytest.fixture
def http(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    db = tmp_path / "http.db"
    store = open_store(db)
    _, secret = keyring.create_key(store.keys, tenant="acme", role="admin")
    store.close()
    with TestClient(create_app(db, worker=False)) as client:
        yield client, secret


@pytest.mark.parametrize("bad", BAD)
def test_http_refuses_names_with_a_line_end(http: tuple[TestClient, str], bad: str) -> None:
    client, secret = http
    auth = {"Authorization": f"Bearer {secret}"}
    event = {"actor_id": "alice", "session_id": "s1", "role": "user", "text": "hi"}
    for where in ("actor_id", "session_id", "event_id"):
        r = client.post("/v1/events", json={**event, where: bad}, headers=auth)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "invalid_input"
    r = client.get("/v1/events", params={"actor_id": bad}, headers=auth)
    assert r.status_code == 422
    r = client.get("/v1/events", params={"actor_id": "alice", "session_id": bad}, headers=auth)
    assert r.status_code == 422
    r = client.get("/v1/events", params={"actor_id": "alice"}, headers=auth)
    assert r.json()["events"] == []


@pytest.mark.parametrize("bad", [*BAD, "r 1", "r\t1"])
def test_request_ids_with_line_ends_or_spaces_are_refused(
    mem: Memory, http: tuple[TestClient, str], bad: str
) -> None:
    with pytest.raises(InvalidInput, match="request_id must be 1-200 printable ASCII"):
        mem.write_records([{"request_id": bad, "actor": "alice", "text": "Alice keeps bees"}])
    client, secret = http
    item = {"request_id": bad, "actor_id": "alice", "text": "Alice keeps bees"}
    r = client.post(
        "/v1/memories/batch-create",
        json={"records": [item]},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert r.status_code == 422 and "printable ASCII" in r.json()["error"]["message"]
    assert mem.records(actor="alice") == []


@pytest.mark.parametrize("tail", ["\n", "\r", " "])
def test_namespaces_with_line_ends_are_refused(mem: Memory, tmp_path: Path, tail: str) -> None:
    facts = "/tenants/default/actors/alice/facts"
    with pytest.raises(InvalidInput, match="namespace must be 1-1000 characters without"):
        mem.recall(actor="alice", query="bees", namespace=facts + tail)
    escaped = {"\n": "\\n", "\r": "\\r", " ": " "}[tail]  # as TOML writes it
    config = tmp_path / "remem.toml"
    line = f'namespace = "/tenants/{{tenant}}/actors/{{actor}}/likes{escaped}"'
    config.write_text(f"[strategies.offline]\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="namespace must be 1-1000 characters without"):
        load_config(config)


@pytest.mark.parametrize("tail", ["\n", "\r"])
def test_thread_steps_workflows_and_keys_with_line_ends_are_refused(mem: Memory, tail: str) -> None:
    from remem.thread import api as thread
    from remem.thread.checkpoints import CheckpointState

    with pytest.raises(InvalidInput, match="step name"):
        thread.checkpoint_save(
            mem, actor="alice", workflow="refund", state=CheckpointState(step="pay" + tail)
        )
    with pytest.raises(InvalidInput, match="workflow"):
        thread.checkpoint_save(
            mem, actor="alice", workflow="refund" + tail, state=CheckpointState(step="pay")
        )
    with pytest.raises(InvalidInput, match="idempotency_key must be 1-255 printable"):
        thread.begin_tool_call(mem, actor="alice", workflow="refund", idempotency_key="k1" + tail)
    assert thread.checkpoint_list(mem, actor="alice") == []
