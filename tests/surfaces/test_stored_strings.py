"""Strings and JSON values a client sends, on every write path and both backends.

A lone surrogate, a NUL character, deep nesting or a non-JSON value is refused
with `InvalidInput` naming where it is, and nothing is stored: the actor's
events, records and export read back afterwards as before. Secrets are
screened in every stored string, not only in `text` (event metadata is kept
redacted, everything else refused). The library first, then HTTP, MCP and the
CLI, each on a SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from mcp import ClientSession

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput, RefusedContent
from remem.thread.api import begin_tool_call, checkpoint_list, checkpoint_save, tool_calls
from tests.support import pg
from tests.support.cli import err, ok
from tests.support.mcp import mcp_keys, session_run, tool_data, tool_error
from tests.support.secrets import BAD, BAD_PATHS, CARD, TOKEN
from tests.support.servers import Server, running_server


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def _event(**kw: Any) -> dict[str, Any]:
    return {"actor": "alice", "session": "s1", "role": "user", "text": "hello there", **kw}


def _nothing_stored(mem: Memory, procedures: int = 0) -> None:
    """alice's events, records, export and recall all read back, and hold nothing."""
    assert list(mem.events(actor="alice")) == []
    assert list(mem.records(actor="alice", all=True)) == []
    assert len(mem.procedures(all=True)) == procedures
    json.dumps(list(mem.export(actor="alice")))  # exportable, as JSON
    assert list(mem.recall(actor="alice", query="hello").records) == []


WRITES: dict[str, Callable[[Memory, str], object]] = {
    "event text": lambda m, b: m.add_event(**_event(text=f"hi {b} there")),
    "metadata key": lambda m, b: m.add_event(**_event(metadata={f"k{b}": 1})),
    "metadata value": lambda m, b: m.add_event(**_event(metadata={"k": f"v{b}"})),
    "nested metadata value": lambda m, b: m.add_event(
        **_event(metadata={"a": [{"b": ["ok", f"v{b}"]}]})
    ),
    "a batch": lambda m, b: m.add_events([_event(), _event(text=f"x{b}")]),
    # an import keeps the lines before a bad one, so the bad line comes first here
    "an import": lambda m, b: m.import_events([_event(metadata={"n": f"{b}"}), _event()]),
    "record text": lambda m, b: m.remember(actor="alice", text=f"Alice likes {b} tea"),
    "record field": lambda m, b: m.remember(
        actor="alice", text="Alice lives in Oslo", field=f"home{b}", value="Oslo"
    ),
    "record value": lambda m, b: m.remember(
        actor="alice", text="Alice lives in Oslo", field="home", value=f"Os{b}lo"
    ),
    "procedure text": lambda m, b: m.propose_procedure(text=f"Always {b} check the id"),
    "query": lambda m, b: m.recall(actor="alice", query=f"tea {b}"),
}


@pytest.mark.parametrize("bad", BAD, ids=["surrogate", "nul"])
@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_a_bad_string_is_refused_on_every_write_and_nothing_is_stored(
    mem: Memory, write: str, bad: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        WRITES[write](mem, bad)
    message = str(info.value)
    assert ("NUL" if bad == "\x00" else "surrogate") in message
    assert bad not in message  # named, never echoed
    _nothing_stored(mem)


@pytest.mark.parametrize("bad", BAD, ids=["surrogate", "nul"])
def test_a_bad_strategy_reason_or_thread_state_is_refused(mem: Memory, bad: str) -> None:
    try:  # the batch's own model refuses a surrogate; a NUL is refused by remember
        (out,) = mem.write_records(
            [{"actor": "alice", "text": "Alice drinks tea", "strategy": f"mine{bad}"}]
        )
        error = out["error"]
    except InvalidInput as exc:
        error = {"code": exc.code, "message": str(exc)}
    assert error["code"] == "invalid_input" and "strategy" in error["message"]
    proposal = mem.propose_procedure(text="Check the id before a refund")
    with pytest.raises(InvalidInput, match="reason"):
        mem.reject(proposal.id, reviewer="bob", reason=f"no {bad}")
    assert mem.get(proposal.id).status.value == "proposed"
    with pytest.raises(InvalidInput, match=r'\["data"\]\["note"\]'):
        checkpoint_save(mem, actor="alice", workflow="wf", state={"data": {"note": f"a{bad}"}})
    with pytest.raises(InvalidInput, match="tool call request"):
        begin_tool_call(mem, actor="alice", workflow="wf", idempotency_key="k", request=[bad])
    assert checkpoint_list(mem, actor="alice") == [] and tool_calls(mem, actor="alice") == []
    _nothing_stored(mem, procedures=1)


def _nest(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return dict(value)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (_nest(300), "nests deeper than 32"),
        ({"a": json.loads("[" * 32 + "1" + "]" * 32)}, "nests deeper than 32"),
        ({"x": float("nan")}, "JSON cannot represent"),
        ({"x": float("inf")}, "JSON cannot represent"),
        ({"x": b"bytes"}, "not JSON"),
        ({"x": {1, 2}}, "not JSON"),
        ({"x": object()}, "not JSON"),
        ({1: "x"}, "non-string key"),
        ({"x": "y" * 70_000}, "at most 65536"),
    ],
    ids=["300-deep", "33-deep", "nan", "inf", "bytes", "set", "object", "int-key", "big"],
)
def test_metadata_must_be_bounded_json(mem: Memory, metadata: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        mem.add_event(**_event(metadata=metadata))
    _nothing_stored(mem)


def test_metadata_nests_at_most_32_levels_and_reads_back(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="nests deeper than 32"):
        mem.add_event(**_event(metadata=_nest(33)))
    deep = _nest(32)  # 32 objects below the metadata's own: the deepest that is kept
    mem.add_event(**_event(metadata=deep))
    (event,) = mem.events(actor="alice")
    assert event.metadata == deep
    (row,) = [r for r in mem.export(actor="alice") if r["type"] == "event"]
    assert row["metadata"] == deep


# -- secrets in every stored string (item 12) ---------------------------------------------


def test_secrets_in_event_metadata_are_redacted_in_place(mem: Memory) -> None:
    metadata = {
        "password": "hunter2x7",
        "note": f"paid with {CARD}",
        "nested": [{"token": TOKEN}, "plain words"],
        TOKEN: "a key that is a secret",
        "ok": "nothing to see",
    }
    mem.add_event(**_event(metadata=metadata))
    mem.import_events([_event(text="second", metadata={"auth": f"Bearer {TOKEN}"})])
    events = mem.events(actor="alice")
    first, second = events
    assert first.metadata["ok"] == "nothing to see"
    assert first.metadata["nested"][1] == "plain words"
    assert first.metadata["password"] == "[REDACTED:password]"
    assert first.metadata["redacted"] == ["access_token", "password", "payment_card"]
    assert second.metadata["redacted"] == ["access_token"]
    dumped = json.dumps([e.metadata for e in events]) + json.dumps(list(mem.export(actor="alice")))
    for secret in ("hunter2x7", "4111 1111", TOKEN):
        assert secret not in dumped


def _refused(call: Callable[[], object], field: str) -> None:
    with pytest.raises(RefusedContent) as info:
        call()
    message = str(info.value)
    assert f"the {field} contains" in message
    for secret in ("hunter2x7", "4111", TOKEN):
        assert secret not in message


def test_secrets_in_any_record_field_are_refused(mem: Memory) -> None:
    _refused(
        lambda: mem.remember(
            actor="alice", text="Alice's wifi", field="wifi password", value="hunter2x7"
        ),
        "value",
    )
    _refused(
        lambda: mem.remember(actor="alice", text="Alice pays by card", field="card", value=CARD),
        "value",
    )
    _refused(
        lambda: mem.remember(actor="alice", text="Alice has a token", field=f"token {TOKEN}"),
        "field",
    )
    _refused(
        lambda: mem.remember(actor="alice", text="Alice drinks tea", strategy=f"s {TOKEN}"),
        "strategy",
    )
    (out,) = mem.write_records(
        [{"actor": "alice", "text": "Alice drinks tea", "field": "pin", "value": "PIN is 4821"}]
    )
    assert out["error"]["code"] == "refused_content" and "4821" not in out["error"]["message"]
    rec = mem.remember(actor="alice", text="Alice drinks tea", field="drink", value="tea")
    _refused(lambda: mem.update(rec.id, text="Alice drinks tea", by=f"bot {TOKEN}"), "corrector")
    assert [r.id for r in mem.records(actor="alice", all=True)] == [rec.id]


def test_a_secret_in_a_records_namespace_is_refused(mem: Memory) -> None:
    home = "/tenants/default/actors/alice/"
    for namespace in (home + TOKEN, home + "password=hunter2x7"):
        _refused(
            lambda ns=namespace: mem.remember(actor="alice", text="Alice drinks tea", namespace=ns),
            "namespace",
        )
    assert list(mem.records(actor="alice", all=True)) == []


def test_secrets_in_procedures_and_reasons_are_refused(mem: Memory) -> None:
    _refused(lambda: mem.propose_procedure(text="Login with password hunter2x7"), "procedure text")
    proposal = mem.propose_procedure(text="Check the id before a refund")
    _refused(
        lambda: mem.reject(proposal.id, reviewer="bob", reason="use password: hunter2x7"),
        "reason",
    )
    key = "sk-abc123def456ghi789jkl012"
    with pytest.raises(RefusedContent, match="the reviewer contains an API key"):
        mem.approve(proposal.id, reviewer=key)
    assert mem.get(proposal.id).status.value == "proposed"
    history = json.dumps([h.as_dict() for h in mem.history(proposal.id)])
    assert "hunter2x7" not in history and key not in history


# -- HTTP ---------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    if request.param == "sqlite":
        with running_server(str(tmp_path_factory.mktemp("strings") / "s.db")) as running:
            yield running
    else:
        admin = request.getfixturevalue("pg_admin_dsn")
        with pg.fresh_database(admin) as dsn:
            with running_server(pg.as_url(dsn)) as running:
                yield running


def _ev(extra: str, actor: str) -> str:
    return f'{{"actor_id":"{actor}","session_id":"s1","role":"user",{extra}}}'


def _bodies(actor: str) -> dict[str, tuple[str, str | bytes]]:
    """Raw bodies, written as a client would send them: JSON escapes, not Python strings."""
    create = '{"records":[{"actor_id":"%s","text":"Alice lives in Oslo",%s}]}'
    return {
        "text surrogate": ("/v1/events", _ev(r'"text":"a\ud800b"', actor)),
        "text nul": ("/v1/events", _ev(r'"text":"a\u0000b"', actor)),
        "metadata key surrogate": (
            "/v1/events",
            _ev(r'"text":"hi","metadata":{"\udc00":1}', actor),
        ),
        "metadata key nul": ("/v1/events", _ev(r'"text":"hi","metadata":{"a\u0000":1}', actor)),
        "metadata value surrogate": (
            "/v1/events",
            _ev(r'"text":"hi","metadata":{"a":["\ud800"]}', actor),
        ),
        "metadata value nul": ("/v1/events", _ev(r'"text":"hi","metadata":{"a":"\u0000"}', actor)),
        "metadata 300 deep": (
            "/v1/events",
            _ev('"text":"hi","metadata":{"a":' + "[" * 300 + "]" * 300 + "}", actor),
        ),
        "a batch with one bad event": (
            "/v1/events",
            '{"events":[' + _ev('"text":"ok"', actor) + "," + _ev(r'"text":"\u0000"', actor) + "]}",
        ),
        "body 20000 deep": ("/v1/events", "[" * 20_000 + "]" * 20_000),
        "body not utf-8": ("/v1/events", _ev('"text":"', actor).encode() + b'\xff"}'),
        "record value nul": ("/v1/memories/batch-create", create % (actor, r'"value":"a\u0000"')),
        "record field surrogate": (
            "/v1/memories/batch-create",
            create % (actor, r'"field":"\ud800","value":"Oslo"'),
        ),
        "query nul": ("/v1/memories/retrieve", f'{{"actor_id":"{actor}","query":"a\\u0000b"}}'),
        "query surrogate": (
            "/v1/memories/retrieve",
            f'{{"actor_id":"{actor}","query":"a\\ud800b"}}',
        ),
    }


def test_http_refuses_bad_strings_with_422_and_stores_nothing(server: Server) -> None:
    """Each bad body is a 422 (or, in a batch, an item's 422) and leaves the actor's
    events and export readable and empty; bad paths and queries are 404 or 422."""
    wrong = []
    with server.http("admin") as h:
        for case in _bodies("x"):
            actor = "strings-" + "".join(c if c.isalnum() else "-" for c in case)
            path, body = _bodies(actor)[case]
            r = h.post(path, content=body, headers={"content-type": "application/json"})
            if path == "/v1/memories/batch-create" and r.status_code == 200:
                (result,) = r.json()["results"]
                status, code = result["status"], result["error"]["code"]
            else:
                status, code = r.status_code, r.json().get("error", {}).get("code")
            events = h.get("/v1/events", params={"actor_id": actor})
            exported = h.get(f"/v1/subjects/{actor}/export")
            if (status, code) != (422, "invalid_input") or "Traceback" in r.text:
                wrong.append((case, r.status_code, r.text[:200]))
            elif events.status_code != 200 or events.json()["events"] != []:
                wrong.append((case, "events", events.status_code, events.text[:200]))
            elif exported.status_code != 200 or exported.json()["rows"] != []:
                wrong.append((case, "export", exported.status_code, exported.text[:200]))
        for path in BAD_PATHS:
            r = h.get(path)
            if r.status_code not in (404, 422) or set(r.json()) != {"error"}:
                wrong.append((path, r.status_code, r.text[:200]))
    assert wrong == []


def test_http_secrets_in_metadata_and_record_values(server: Server) -> None:
    actor = "secret-holder"
    with server.http("admin") as h:
        r = h.post(
            "/v1/events",
            json={
                "actor_id": actor,
                "session_id": "s1",
                "role": "user",
                "text": "see metadata",
                "metadata": {"password": "hunter2x7", "card": CARD},
            },
        )
        assert r.status_code == 201, r.text
        (event,) = h.get("/v1/events", params={"actor_id": actor}).json()["events"]
        assert event["metadata"]["redacted"] == ["password", "payment_card"]
        created = h.post(
            "/v1/memories/batch-create",
            json={
                "records": [
                    {
                        "actor_id": actor,
                        "text": "wifi",
                        "field": "wifi password",
                        "value": "hunter2x7",
                    }
                ]
            },
        ).json()
        (result,) = created["results"]
        assert result["status"] == 422 and result["error"]["code"] == "refused_content"
        exported = h.get(f"/v1/subjects/{actor}/export").text
    assert "hunter2x7" not in exported and "4111" not in exported
    assert "hunter2x7" not in json.dumps(created)


def test_http_store_errors_never_show_the_connection_string(pg_admin_dsn: str) -> None:
    """A PostgreSQL database that refuses an operation is a 503 saying so, without the DSN,
    the role, the host or the driver's text."""
    with (
        pg.fresh_database(pg_admin_dsn) as dsn,
        running_server(pg.as_url(dsn)) as srv,
    ):
        admin = pg.admin_dsn_for(pg_admin_dsn, dsn)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"REVOKE SELECT ON records FROM {pg.APP_ROLE}")
        with srv.http("admin") as h:
            r = h.get("/v1/memories", params={"actor_id": "alice"})
    assert r.status_code == 503 and r.json()["error"]["code"] == "store_error"
    message = r.json()["error"]["message"]
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    hidden = [info["dbname"], info["password"], info["user"], info.get("host"), "permission"]
    for part in filter(None, hidden):
        assert str(part) not in message


# -- MCP ----------------------------------------------------------------------------------


def test_mcp_refuses_bad_strings_and_secrets(tmp_path: Path, db: str) -> None:
    keys = mcp_keys(db)

    async def as_alice(s: ClientSession) -> None:
        for args in (
            {"text": "Alice likes \x00 tea"},
            {"text": "Alice lives in Oslo", "field": "home\x00", "value": "Oslo"},
            {"text": "Alice lives in Oslo", "field": "home", "value": "Os\x00lo"},
        ):
            assert "invalid_input" in tool_error(await s.call_tool("remember", args))
        assert "invalid_input" in tool_error(await s.call_tool("recall", {"query": "tea \x00"}))
        refused = tool_error(
            await s.call_tool(
                "remember",
                {"text": "Alice's wifi", "field": "wifi password", "value": "hunter2x7"},
            )
        )
        assert "refused_content" in refused and "hunter2x7" not in refused
        assert tool_data(await s.call_tool("list_memories", {"all": True}))["records"] == []

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, keys["alice"], errlog, as_alice)


# -- CLI ----------------------------------------------------------------------------------


def test_cli_refuses_bad_strings_and_secrets_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str
) -> None:
    where = cast(Path, db)  # the CLI takes it as text; Path() would fold a URL's "//"
    events = tmp_path / "events.jsonl"
    good = {"actor": "alice", "session": "s1", "role": "user", "text": "hello"}
    # written as a client would: the JSON escape of a lone surrogate, 300-deep metadata
    events.write_text(
        json.dumps(good)
        + "\n"
        + json.dumps({**good, "metadata": {"note": "\ud800"}})
        + "\n"
        + json.dumps({**good, "metadata": {"a": json.loads("[" * 300 + "]" * 300)}})
        + "\n"
    )
    error = err(capsys, where, "event", "import", str(events))
    assert error["code"] == "invalid_input" and "surrogate" in error["message"]
    assert error["message"].startswith("line 2:")  # the line before it was kept
    events.write_text(json.dumps({**good, "metadata": {"a": json.loads("[" * 300 + "]" * 300)}}))
    assert "nests deeper" in err(capsys, where, "event", "import", str(events))["message"]
    nul = err(
        capsys,
        where,
        "event",
        "add",
        "--actor",
        "alice",
        "--session",
        "s1",
        "--role",
        "user",
        "--text",
        "a\x00b",
    )
    assert nul["code"] == "invalid_input" and "NUL" in nul["message"]
    records = tmp_path / "records.jsonl"
    records.write_text(
        json.dumps(
            {"actor": "alice", "text": "wifi", "field": "wifi password", "value": "hunter2x7"}
        )
    )
    (result,) = ok(capsys, where, "records", "import", str(records))["results"]
    assert result["error"]["code"] == "refused_content"
    refused = err(capsys, where, "procedure", "propose", "--text", "Login with password hunter2x7")
    assert refused["code"] == "refused_content" and "hunter2x7" not in refused["message"]
    kept = ok(capsys, where, "event", "list", "--actor", "alice")["events"]
    assert [e["text"] for e in kept] == ["hello"]  # the good first line, nothing else
    out = tmp_path / "alice.jsonl"
    assert ok(capsys, where, "export", "--actor", "alice", "--out", str(out))["events"] == 1


def test_http_procedures_and_reasons_refuse_bad_strings_and_secrets(server: Server) -> None:
    with server.http("admin") as h:
        made = h.post("/v1/procedures", json={"text": "Check the id before a refund"})
        assert made.status_code == 201, made.text
        rid = made.json()["id"]
        cases = [
            ("/v1/procedures", r'{"text":"Always \u0000 check"}', "invalid_input"),
            ("/v1/procedures", '{"text":"Login with password hunter2x7"}', "refused_content"),
            (f"/v1/memories/{rid}/reject", r'{"reason":"no\u0000"}', "invalid_input"),
            (f"/v1/memories/{rid}/reject", '{"reason":"pw: s3cr3t!9"}', "refused_content"),
        ]
        answers = [
            h.post(path, content=body, headers={"content-type": "application/json"})
            for path, body, _ in cases
        ]
        assert [(r.status_code, r.json()["error"]["code"]) for r in answers] == [
            (422, code) for _, _, code in cases
        ]
        assert all("hunter2x7" not in r.text and "s3cr3t" not in r.text for r in answers)
        assert h.get(f"/v1/memories/{rid}").json()["status"] == "proposed"
