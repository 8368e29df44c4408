"""A record's metadata on the service's surfaces, on both backends: the HTTP API (typed
in its OpenAPI answers), the `Client`, the CLI and the MCP tools keep it, filter by it,
refuse what the library refuses in the same words, and show another key's actor or
tenant nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from remem.errors import InvalidInput, NotFound, RefusedContent
from tests.support.cli import err, ok
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error
from tests.support.servers import running_server

TRIP = {"topic": "travel", "rank": 2, "vip": True}


def test_client_and_http_keep_and_filter_metadata(db: str) -> None:
    with running_server(db) as server:
        admin = server.client("admin")
        trip = admin.remember(actor="alice", text="Alice books aisle seats", metadata=TRIP)
        food = admin.remember(actor="alice", text="Alice cooks curry", metadata={"topic": "food"})
        assert trip.metadata == TRIP and admin.get(trip.id).metadata == TRIP
        assert [r.id for r in admin.records(actor="alice", metadata={"topic": "food"})] == [food.id]
        assert [r.id for r in admin.records(actor="alice", metadata={"rank": 2.0})] == [trip.id]
        assert admin.records(actor="alice", metadata={"rank": "2"}) == []
        packet = admin.recall(actor="alice", query="aisle seats curry", metadata={"vip": True})
        assert [r.id for r in packet.records] == [trip.id]
        assert packet.records[0].metadata == TRIP

        with server.http("admin") as h:
            raw = h.get(
                "/v1/memories", params={"actor_id": "alice", "metadata": '{"topic":"food"}'}
            )
            assert raw.status_code == 200 and [r["id"] for r in raw.json()["records"]] == [food.id]
            bad = h.get("/v1/memories", params={"actor_id": "alice", "metadata": "topic=food"})
            assert bad.status_code == 422 and "JSON object" in bad.json()["error"]["message"]
            doc = h.get("/openapi.json").json()
        schemas = doc["components"]["schemas"]
        assert "metadata" in schemas["RecordOut"]["required"]
        assert schemas["RecordOut"]["properties"]["metadata"]["type"] == "object"
        assert "metadata" in schemas["PacketItemOut"]["properties"]
        assert "metadata" in schemas["RetrieveIn"]["properties"]
        assert "metadata" in schemas["CreateItem"]["properties"]

        with pytest.raises(InvalidInput, match="nests deeper"):
            admin.remember(
                actor="alice", text="Alice x", metadata={"a": {"b": {"c": {"d": {"e": 1}}}}}
            )
        with pytest.raises(InvalidInput, match="invisible format character"):
            admin.remember(actor="alice", text="Alice y", metadata={"a\u200b": 1})
        with pytest.raises(RefusedContent, match="metadata"):
            admin.remember(actor="alice", text="Alice z", metadata={"password": "hunter2-Horse"})
        with pytest.raises(InvalidInput, match="string, number, boolean or null"):
            admin.recall(actor="alice", query="seats", metadata={"topic": ["travel"]})
        assert {r.id for r in admin.records(actor="alice", all=True)} == {trip.id, food.id}

        # another actor's key and another tenant's see nothing of alice's
        bob = server.client("agent")
        assert bob.records(actor="bob", metadata={"topic": "travel"}) == []
        assert server.client("globex").records(actor="alice", metadata={"topic": "travel"}) == []
        with pytest.raises(NotFound):
            server.client("globex").get(trip.id)

        exported = [r for r in admin.export(actor="alice") if r["type"] == "record"]
        assert {r["id"]: r["metadata"] for r in exported}[trip.id] == TRIP
        admin.forget(actor="alice")
        assert admin.records(actor="alice", all=True, metadata={"topic": "travel"}) == []


def test_cli_keeps_and_filters_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "cli.db"
    made = ok(capsys, db, "remember", "--actor", "alice", "--text", "Alice books aisle seats",
              "--metadata", json.dumps(TRIP))  # fmt: skip
    ok(capsys, db, "remember", "--actor", "alice", "--text", "Alice cooks curry",
       "--metadata", '{"topic": "food"}')  # fmt: skip
    listed = ok(capsys, db, "records", "list", "--actor", "alice", "--metadata", '{"vip": true}')
    assert [r["id"] for r in listed["records"]] == [made["record_id"]]
    assert listed["records"][0]["metadata"] == TRIP
    packet = ok(capsys, db, "recall", "--actor", "alice", "--query", "aisle curry",
                "--metadata", '{"topic": "food"}')  # fmt: skip
    assert [r["text"] for r in packet["records"]] == ["Alice cooks curry"]
    assert packet["records"][0]["metadata"] == {"topic": "food"}
    assert "JSON object" in err(capsys, db, "records", "list", "--actor", "alice",
                                "--metadata", "[1]")["message"]  # fmt: skip
    assert "JSON object" in err(capsys, db, "remember", "--actor", "alice", "--text", "x y",
                                "--metadata", "{nope")["message"]  # fmt: skip
    refused = err(capsys, db, "remember", "--actor", "alice", "--text", "Alice z",
                  "--metadata", '{"password": "hunter2-Horse"}')  # fmt: skip
    assert refused["code"] == "refused_content" and "hunter2" not in refused["message"]


def test_mcp_tools_keep_and_filter_metadata(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        rec = tool_data(await s.call_tool(
            "remember", {"text": "Alice books aisle seats", "metadata": TRIP}
        ))  # fmt: skip
        assert rec["metadata"] == TRIP
        tool_data(await s.call_tool("remember", {"text": "Alice cooks curry",
                                                 "metadata": {"topic": "food"}}))  # fmt: skip
        found = tool_data(await s.call_tool("list_memories", {"metadata": {"topic": "travel"}}))
        assert [r["id"] for r in found["records"]] == [rec["id"]]
        packet: dict[str, Any] = tool_data(await s.call_tool(
            "recall", {"query": "aisle seats curry", "metadata": {"rank": 2}}
        ))  # fmt: skip
        assert [r["id"] for r in packet["records"]] == [rec["id"]]
        bad = tool_error(await s.call_tool("remember", {"text": "x y", "metadata": {"a\u200b": 1}}))
        assert "invisible format character" in bad
        nested = await s.call_tool("list_memories", {"metadata": {"a": {"b": 1}}})
        assert "string, number, boolean or null" in tool_error(nested)

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)
