"""A field's value is a short, non-blank string, on every write path and both backends.

An empty or blank value used to be stored and then found by `fact get` as the
field's answer (status "found", value ""), and the library took a value of a
million characters where HTTP stopped at 4,000 and a batch at 1,000. Now one
check in the write flow refuses each of them with `InvalidInput`, and nothing
is stored: the field stays unknown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import ClientSession

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.writes.checks import MAX_VALUE_CHARS
from tests.support.cli import err, ok
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error
from tests.support.servers import Server, running_server

BAD_VALUES = {
    "empty": ("", "non-empty"),
    "blank": (" \t ", "non-empty"),
    "too long": ("O" * (MAX_VALUE_CHARS + 1), "the limit is"),
}


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def _unknown(mem: Memory) -> None:
    assert mem.fact(actor="alice", field="home city").status == "not_found"
    assert list(mem.records(actor="alice", all=True)) == []


@pytest.mark.parametrize("case", list(BAD_VALUES), ids=list(BAD_VALUES))
def test_a_bad_value_is_refused_and_the_field_stays_unknown(mem: Memory, case: str) -> None:
    value, message = BAD_VALUES[case]
    with pytest.raises(InvalidInput, match=message):
        mem.remember(actor="alice", text="Alice lives in Oslo", field="home city", value=value)
    _unknown(mem)


def test_a_value_needs_a_field_and_the_longest_value_is_kept_whole(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="needs a field"):
        mem.remember(actor="alice", text="Alice lives in Oslo", value="Oslo")
    _unknown(mem)
    longest = "Oslo " + "o" * (MAX_VALUE_CHARS - 5)
    rec = mem.remember(actor="alice", text="Alice lives in Oslo", field="home city", value=longest)
    found = mem.fact(actor="alice", field="home city").found
    assert found is not None and found.value == longest == rec.value


def test_memory_given_a_path_says_to_open_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"Memory\.open"):
        Memory(cast(Any, str(tmp_path / "x.db")))
    with pytest.raises(InvalidInput, match=r"Memory\.open"):
        Memory(cast(Any, tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()


def test_a_batch_with_a_blank_value_is_refused_before_anything_is_written(mem: Memory) -> None:
    good = {"actor": "alice", "text": "Alice likes tea", "field": "drink", "value": "tea"}
    for value in ("", "  "):
        bad = {"actor": "alice", "text": "Alice lives in Oslo", "field": "home city"}
        with pytest.raises(InvalidInput, match=r"item 2: value: .*non-empty"):
            mem.write_records([good, {**bad, "value": value}])
    _unknown(mem)


# -- HTTP, MCP and the CLI -----------------------------------------------------------------


@pytest.fixture
def server(db: str) -> Iterator[Server]:
    with running_server(db) as running:
        yield running


def test_http_refuses_bad_values_with_422(server: Server) -> None:
    with server.http("admin") as h:
        for value, _ in BAD_VALUES.values():
            body = {
                "records": [
                    {
                        "actor_id": "alice",
                        "text": "Alice lives in Oslo",
                        "field": "home city",
                        "value": value,
                    }
                ]
            }
            r = h.post("/v1/memories/batch-create", json=body)
            if r.status_code == 200:
                (result,) = r.json()["results"]
                assert (result["status"], result["error"]["code"]) == (422, "invalid_input")
            else:
                assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_input"
        listed = h.get("/v1/memories", params={"actor_id": "alice", "all": "true"})
        assert listed.status_code == 200 and listed.json()["records"] == []


def test_mcp_refuses_bad_values(tmp_path: Path, db: str) -> None:
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        for value, _ in BAD_VALUES.values():
            args = {"text": "Alice lives in Oslo", "field": "home city", "value": value}
            assert "invalid_input" in tool_error(await s.call_tool("remember", args))
        assert tool_data(await s.call_tool("list_memories", {"all": True}))["records"] == []

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)


def test_cli_refuses_a_blank_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    where = cast(Path, db)
    for value in ("", "   "):
        error = err(
            capsys, where, "remember", "--actor", "alice", "--text", "Alice lives in Oslo",
            "--field", "home city", "--value", value,
        )  # fmt: skip
        assert error["code"] == "invalid_input" and "non-empty" in error["message"]
    records = tmp_path / "records.jsonl"
    records.write_text(
        json.dumps({"actor": "alice", "text": "Alice lives in Oslo", "field": "home", "value": ""})
    )
    error = err(capsys, where, "records", "import", str(records))
    assert error["code"] == "invalid_input" and "non-empty" in error["message"]
    assert ok(capsys, where, "records", "list", "--actor", "alice", "--all")["records"] == []
