"""Checkpoints over HTTP (`/v1/actors/{actor_id}/checkpoints`) through the `Client`:
optimistic concurrency, listing by name a page at a time, deletion, and the key's scope."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.errors import ConflictError, Forbidden, InvalidInput, NotFound
from tests.support.servers import Server, running_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(str(tmp_path / "service.db")) as running:
        yield running


def test_checkpoints_save_list_page_and_delete_over_http(server: Server) -> None:
    c = server.client("admin")
    for i in range(5):
        c.checkpoint_save(actor="bob", workflow=f"app.t1.{i}", state={"step": f"s{i}"})
    c.checkpoint_save(actor="bob", workflow="other", state={})
    first = c.checkpoint_load(actor="bob", workflow="app.t1.3")
    c.checkpoint_save(actor="bob", workflow="app.t1.3", state={"step": "x"}, expected_version=1)
    with pytest.raises(ConflictError, match="version 2"):
        c.checkpoint_save(actor="bob", workflow="app.t1.3", state={}, expected_version=1)
    assert first.version == 1 and first.tenant == "acme"

    # pages of two through the cursor, by name descending, the prefix only
    with server.http("admin") as http:
        page = http.get("/v1/actors/bob/checkpoints", params={"prefix": "app.", "limit": 2})
    page = page.json()
    names = [cp["workflow"] for cp in page["checkpoints"]]
    assert names == ["app.t1.4", "app.t1.3"] and page["next_cursor"] == "app.t1.3"
    scanned = c.checkpoint_scan(actor="bob", prefix="app.t1.", before="app.t1.3")
    assert [cp.workflow for cp in scanned] == ["app.t1.2", "app.t1.1", "app.t1.0"]

    assert c.checkpoint_delete(actor="bob", workflow="app.t1.0") == 1
    assert c.checkpoint_delete(actor="bob", workflow="app.t1.0") == 0
    assert c.checkpoint_delete(actor="bob", prefix="app.") == 4
    with pytest.raises(NotFound):
        c.checkpoint_load(actor="bob", workflow="app.t1.4")
    assert [cp.workflow for cp in c.checkpoint_scan(actor="bob")] == ["other"]
    # an empty prefix would delete everything of the actor: refused, nothing deleted
    with server.http("admin") as http:
        gone = http.delete("/v1/actors/bob/checkpoints", params={"prefix": ""})
    assert gone.status_code == 422
    assert [cp.workflow for cp in c.checkpoint_scan(actor="bob")] == ["other"]


def test_a_key_for_one_actor_reaches_only_its_checkpoints(server: Server) -> None:
    server.client("admin").checkpoint_save(actor="bob", workflow="w1", state={})
    alice = server.client("alice")
    alice.checkpoint_save(actor="alice", workflow="w1", state={"step": "mine"})
    assert [cp.actor for cp in alice.checkpoint_scan(actor="alice")] == ["alice"]
    for call in (
        lambda: alice.checkpoint_load(actor="bob", workflow="w1"),
        lambda: alice.checkpoint_scan(actor="bob"),
        lambda: alice.checkpoint_delete(actor="bob", prefix="w"),
        lambda: alice.checkpoint_save(actor="bob", workflow="w1", state={}),
    ):
        with pytest.raises(Forbidden):
            call()
    assert server.client("admin").checkpoint_load(actor="bob", workflow="w1").version == 1
    with pytest.raises(InvalidInput, match="prefix"):
        alice.checkpoint_scan(actor="alice", prefix="bad prefix")
