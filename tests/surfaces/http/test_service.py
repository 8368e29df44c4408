"""The HTTP service against a real uvicorn server on loopback, called with httpx and Client.

The server here runs on a SQLite file, and for the cases marked `on_both` on a PostgreSQL
database as well; `tests/postgres/test_service.py` holds what only PostgreSQL has.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, settings

from remem.cli.main import cli as remem_cli
from remem.errors import ConflictError, InvalidInput, NotFound
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.keys import Forbidden, Unauthorized
from tests.support import pg
from tests.support.backends import BACKENDS
from tests.support.servers import MAX_BODY, Server, event_body, running_server


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """The service on a SQLite file; for a test marked `on_both`, also on a PostgreSQL
    database of its own (the session's server, see `tests.support.pg`)."""
    if getattr(request, "param", "sqlite") == "postgres":
        with pg.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
            with running_server(pg.as_url(dsn)) as running:
                yield running
        return
    with running_server(str(tmp_path_factory.mktemp("service") / "service.db")) as running:
        yield running


# a case that is not about the SQLite file itself runs on PostgreSQL as well
on_both = pytest.mark.parametrize("server", BACKENDS, indirect=True)


def _drain(server: Server, key: str = "agent", stall: float = 20) -> None:
    """Wait until the in-process worker has no pending job for the key's tenant; fail
    when the job counts have not moved for `stall` seconds (a stuck worker), however
    long a loaded machine takes to work through them all."""
    seen, deadline = None, 0.0
    with server.http(key) as h:
        while True:
            jobs = h.get("/v1/jobs").json()
            if jobs["pending"] == 0 and jobs["running"] == 0:
                return
            if jobs != seen:
                seen, deadline = jobs, time.monotonic() + stall
            assert time.monotonic() < deadline, f"no job moved in {stall} s: {jobs}"
            time.sleep(0.05)


# -- health, OpenAPI, keys ---------------------------------------------------------------


@on_both
def test_health_and_openapi_need_no_key(server: Server) -> None:
    with server.http() as h:
        assert h.get("/healthz").json() == {"status": "ok"}
        paths = h.get("/openapi.json").json()["paths"]
    for path in [
        "/v1/events",
        "/v1/memories/retrieve",
        "/v1/memories",
        "/v1/memories/{record_id}",
        "/v1/memories/batch-create",
        "/v1/memories/batch-update",
        "/v1/memories/batch-delete",
        "/v1/jobs",
        "/v1/subjects/{actor_id}/forget",
        "/v1/subjects/{actor_id}/export",
    ]:
        assert path in paths


def test_only_the_hash_of_a_key_is_stored(server: Server) -> None:
    raw = Path(server.db).read_bytes()
    for secret in server.keys.values():
        assert secret.encode() not in raw


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer rk_nope"},
        {"Authorization": "Basic abc"},
        {"Authorization": ""},
    ],
    ids=["none", "unknown", "basic", "empty"],
)
@on_both
def test_without_a_valid_key_is_401(server: Server, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=server.url, headers=headers) as h:
        resp = h.get("/v1/memories", params={"actor_id": "alice"})
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "unauthorized"


@on_both
def test_a_revoked_key_is_401(server: Server) -> None:
    with server.http("revoked") as h:
        assert h.get("/v1/jobs").status_code == 401
    with pytest.raises(Unauthorized):
        server.client("revoked").jobs()


# -- scope and isolation ---------------------------------------------------------------------


@on_both
def test_an_actor_key_cannot_widen_its_scope(server: Server) -> None:
    with server.http("alice") as h:
        assert h.post("/v1/events", json=event_body("alice", "hello there")).status_code == 201
        # the key's actor is the default; naming another actor is refused
        assert h.get("/v1/events").status_code == 200
        for resp in [
            h.post("/v1/events", json=event_body("bob", "I am bob")),
            h.post(
                "/v1/events", json={"events": [event_body("alice", "a"), event_body("bob", "b")]}
            ),
            h.get("/v1/events", params={"actor_id": "bob"}),
            h.get("/v1/memories", params={"actor_id": "bob"}),
            h.post("/v1/memories/retrieve", json={"query": "x", "actor_id": "bob"}),
            h.post(
                "/v1/memories/retrieve",
                json={"query": "x", "namespace": "/tenants/acme/actors/bob/"},
            ),
            h.post(
                "/v1/memories/batch-create", json={"records": [{"actor_id": "bob", "text": "x"}]}
            ),
        ]:
            assert resp.status_code == 403, resp.text
            assert resp.json()["error"]["code"] == "forbidden"
        # nothing of the refused batch was written, not even alice's half
        texts = [e["text"] for e in h.get("/v1/events").json()["events"]]
        assert "a" not in texts
    with server.http("agent") as h:
        assert h.get("/v1/events", params={"actor_id": "bob"}).json()["events"] == []


@on_both
def test_roles_gate_erasure_review_and_keys(server: Server) -> None:
    with server.http("agent") as h:
        assert h.post("/v1/subjects/alice/forget").status_code == 403
        assert h.get("/v1/subjects/alice/export").status_code == 403
        assert h.get("/v1/keys").status_code == 403
        assert h.post("/v1/memories/rec_x/approve").status_code == 403
    with server.http("alice") as h:
        assert h.get("/v1/memories").status_code == 200  # defaults to the key's actor
    with server.http("agent") as h:
        resp = h.get("/v1/memories")
        assert resp.status_code == 422 and "actor_id" in resp.json()["error"]["message"]


@on_both
def test_another_tenant_sees_nothing(server: Server) -> None:
    acme = server.client("agent")
    rec = acme.remember(actor="carol", text="Carol's locker code is the blue one")
    with server.http("globex") as h:
        assert h.get(f"/v1/memories/{rec.id}").status_code == 404
        assert h.delete(f"/v1/memories/{rec.id}").status_code == 404
        assert h.post(f"/v1/memories/{rec.id}/approve").status_code == 404
        deleted = h.post("/v1/memories/batch-delete", json={"records": [{"record_id": rec.id}]})
        assert deleted.json()["results"][0]["status"] == 404
        assert h.get("/v1/memories", params={"actor_id": "carol"}).json()["records"] == []
        packet = h.post("/v1/memories/retrieve", json={"query": "locker", "actor_id": "carol"})
        assert packet.status_code == 200 and packet.json()["records"] == []
        ns = {"query": "locker", "namespace": "/tenants/acme/actors/carol/"}
        assert h.post("/v1/memories/retrieve", json=ns).status_code == 403
        assert h.get("/v1/subjects/carol/export").json()["rows"] == []
    assert acme.get(rec.id).text == rec.text  # untouched
    with server.http("alice") as h:  # same tenant, another actor: 404 by id
        assert h.get(f"/v1/memories/{rec.id}").status_code == 404


# -- bad input --------------------------------------------------------------------------------


def test_bodies_over_the_limit_are_413(server: Server) -> None:
    big = json.dumps(event_body("alice", "x" * (MAX_BODY + 10)))
    with server.http("alice") as h:
        resp = h.post("/v1/events", content=big, headers={"Content-Type": "application/json"})
        assert resp.status_code == 413
        assert resp.json()["error"]["code"] == "body_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts what arrives
            for i in range(0, len(big), 8192):
                yield big[i : i + 8192].encode()

        resp = h.post("/v1/events", content=chunks(), headers={"Content-Type": "application/json"})
        assert resp.status_code == 413
        assert h.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('{"actor_id": "alice", ', "malformed JSON"),
        ("[1, 2]", "object"),
        ('{"actor_id": "alice", "session_id": "s", "role": "user"}', "text"),
        ('{"actor_id": "alice", "session_id": "s", "role": "boss", "text": "x"}', "role"),
        ('{"actor_id": "alice", "session_id": "s", "role": "user", "text": "x", "bad": 1}', "bad"),
        ('{"actor_id": "al ice", "session_id": "s", "role": "user", "text": "x"}', "actor"),
        ('{"actor_id": "alice", "session_id": "s", "role": "user", "text": "x", "time": "soon"}',
         "time"),
        ('{"actor_id": "alice", "session_id": "s", "role": "user", "text": "\\ud800"}', ""),
    ],
)  # fmt: skip
def test_malformed_bodies_are_readable_422(server: Server, body: str, needle: str) -> None:
    with server.http("alice") as h:
        resp = h.post("/v1/events", content=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 422, resp.text
    err = resp.json()["error"]
    assert err["code"] == "invalid_input" and needle in err["message"]


def test_bad_queries_are_422_and_unknown_ids_404(server: Server) -> None:
    with server.http("agent") as h:
        assert h.get("/v1/events", params={"actor_id": "alice", "limit": 0}).status_code == 422
        assert h.get("/v1/events", params={"actor_id": "alice", "cursor": "zz"}).status_code == 400
        assert (
            h.post(
                "/v1/memories/retrieve",
                json={"query": "x", "actor_id": "alice", "as_of": "yesterday"},
            ).status_code
            == 422
        )
        assert (
            h.post(
                "/v1/memories/retrieve", json={"query": "x", "actor_id": "alice", "top_k": 10**9}
            ).status_code
            == 422
        )
        for resp in [
            h.get("/v1/memories/rec_missing"),
            h.delete("/v1/memories/rec_missing"),
            h.get("/v1/nowhere"),
        ]:
            assert resp.status_code == 404
            assert resp.json()["error"]["code"] == "not_found"
        refused = h.post(
            "/v1/memories/batch-create",
            json={"records": [{"actor_id": "alice", "text": "my password is hunter2hunter2"}]},
        )
        assert refused.status_code == 200
        assert refused.json()["results"][0]["error"]["code"] == "refused_content"
    with pytest.raises(NotFound):
        server.client("agent").get("rec_missing")
    with pytest.raises(InvalidInput):
        server.client("agent").recall(actor="alice", query="x", as_of="yesterday")


# -- the path of a memory -------------------------------------------------------------------------


@on_both
def test_event_to_extraction_to_retrieve(server: Server) -> None:
    c = server.client("agent")
    eid = c.add_event(actor="dave", session="s1", role="user", text="I prefer aisle seats.")
    assert c.add_event(actor="dave", session="s1", role="user", text="I prefer aisle seats.",
                       event_id=eid) == eid  # fmt: skip
    _drain(server)
    packet = c.recall(actor="dave", query="which seat should I book?", include_events=False)
    assert packet.records and "aisle" in packet.records[0].text.lower()
    assert packet.records[0].source["event_ids"] == [eid]
    with server.http("agent") as h:
        raw = h.post("/v1/memories/retrieve", json={
            "query": "seat", "namespace": "/tenants/acme/actors/dave/", "top_k": 3,
            "budget_tokens": 200, "include_events": False}).json()  # fmt: skip
    assert raw["budget"] == 200 and raw["records"][0]["id"] == packet.records[0].id
    assert [e["event_id"] for e in c.events(actor="dave")] == [eid]


@on_both
def test_events_page_with_a_cursor(server: Server) -> None:
    c = server.client("agent")
    rows = [_row("erin", f"note {i}", i) for i in range(25)]
    assert c.add_events(rows) == [True] * 25
    assert c.add_events(rows[:3]) == [False] * 3
    with server.http("agent") as h:
        seen: list[str] = []
        cursor = None
        while True:
            params = {"actor_id": "erin", "limit": 10, **({"cursor": cursor} if cursor else {})}
            page = h.get("/v1/events", params=params).json()
            seen += [e["text"] for e in page["events"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == [f"note {i}" for i in range(25)]


def _row(actor: str, text: str, minute: int) -> dict[str, object]:
    return {"actor": actor, "session": "s", "role": "user", "text": text,
            "time": f"2026-03-01T09:{minute:02d}:00Z", "id": f"{actor}-{minute}"}  # fmt: skip


@on_both
def test_batch_create_update_delete_are_idempotent(server: Server) -> None:
    with server.http("agent") as h:
        item = {"request_id": "req-1", "actor_id": "frank", "text": "Frank's desk is 4B",
                "field": "desk", "value": "4B"}  # fmt: skip
        first = h.post("/v1/memories/batch-create", json={"records": [item]}).json()
        again = h.post("/v1/memories/batch-create", json={"records": [item]}).json()
        rid = first["results"][0]["record_id"]
        assert first["results"][0]["status"] == 201 and first["succeeded"] == 1
        assert again["results"][0]["record_id"] == rid and again["results"][0]["replayed"]
        assert len(h.get("/v1/memories", params={"actor_id": "frank"}).json()["records"]) == 1

        upd = {"request_id": "req-2", "record_id": rid, "text": "Frank's desk is 7C"}
        u1 = h.post("/v1/memories/batch-update", json={"records": [upd]}).json()["results"][0]
        u2 = h.post("/v1/memories/batch-update", json={"records": [upd]}).json()["results"][0]
        assert u1["status"] == 200 and u2["record_id"] == u1["record_id"] != rid
        active = h.get("/v1/memories", params={"actor_id": "frank"}).json()["records"]
        assert [r["text"] for r in active] == ["Frank's desk is 7C"]
        assert h.get(f"/v1/memories/{rid}").json()["status"] == "invalid"

        # the same request id for another operation is a conflict, not a replay
        clash = {"request_id": "req-1", "record_id": u1["record_id"]}
        c = h.post("/v1/memories/batch-delete", json={"records": [clash]}).json()["results"][0]
        assert c["status"] == 409

        dele = {"request_id": "req-3", "record_id": u1["record_id"]}
        d1 = h.post("/v1/memories/batch-delete", json={"records": [dele]}).json()["results"][0]
        d2 = h.post("/v1/memories/batch-delete", json={"records": [dele]}).json()["results"][0]
        assert d1["verified"] and d2 == {**d1, "replayed": True}
        assert h.get(f"/v1/memories/{u1['record_id']}").status_code == 404


@on_both
def test_client_mirrors_memory(server: Server) -> None:
    c = server.client("alice")
    rec = c.remember(actor="alice", text="Alice works from Lisbon", field="city", value="Lisbon")
    assert c.get(rec.id) == rec
    assert rec.id in [r.id for r in c.records(actor="alice")]
    assert [h.action for h in c.history(rec.id)] == ["ADD"]
    assert c.recall(actor="alice", query="where does Alice work?").records
    report = c.forget(record_id=rec.id)
    assert report.verified and report.deleted
    with pytest.raises(NotFound):
        c.get(rec.id)
    with pytest.raises(Forbidden):
        c.records(actor="bob")


@on_both
def test_procedures_need_a_reviewer(server: Server) -> None:
    agent, reviewer = server.client("agent"), server.client("reviewer")
    prop = agent.propose_procedure(text="Refunds over 100 EUR need a second approval.",
                                   name="refunds")  # fmt: skip
    assert prop.status.value == "proposed"
    with pytest.raises(Forbidden):
        agent.approve(prop.id)
    assert reviewer.approve(prop.id).status.value == "active"
    other = agent.propose_procedure(text="Refunds need no approval.", name="refunds")
    rejected = reviewer.reject(other.id, reason="weakens the policy")
    assert rejected.status.value == "invalid"
    # decided already: 409, as the API's description says, and nothing changes
    with pytest.raises(ConflictError, match="active, not a proposal"):
        reviewer.approve(prop.id)
    with pytest.raises(ConflictError, match="invalid, not a proposal"):
        reviewer.approve(other.id)
    assert reviewer.get(other.id).status.value == "invalid"


@on_both
def test_forget_and_export_a_subject(server: Server) -> None:
    agent, admin = server.client("agent"), server.client("admin")
    agent.add_event(actor="gina", session="s", role="user", text="I'm allergic to peanuts.")
    agent.remember(actor="gina", text="Gina's team is platform", request_id="gina-1")
    _drain(server)
    rows = list(admin.export(actor="gina"))
    kinds = {r["type"] for r in rows}
    assert {"event", "record"} <= kinds
    report = admin.forget(actor="gina")
    assert report.verified and report.deleted.get("events", 0) >= 1
    assert list(admin.export(actor="gina")) == []
    assert agent.records(actor="gina", all=True) == []
    assert agent.recall(actor="gina", query="peanuts").records == ()


# -- load ----------------------------------------------------------------------


@on_both
def test_eight_concurrent_writers_lose_nothing(server: Server) -> None:
    errors: list[str] = []

    def writer(n: int) -> None:
        with server.http("agent") as h:
            for i in range(50):
                resp = h.post("/v1/events", json=event_body(f"load{n}", f"load note {n}-{i}"))
                if resp.status_code != 201:
                    errors.append(f"{resp.status_code} {resp.text}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    c = server.client("agent")
    for n in range(8):
        texts = {e["text"] for e in c.events(actor=f"load{n}")}
        assert texts == {f"load note {n}-{i}" for i in range(50)}
    _drain(server)
    assert c.jobs()["failed"] == 0


# -- the keys command group -----------------------------------------------------------------------


def keys_cli(db: str, *args: str) -> dict[str, Any]:
    """`remem --db DB keys ARGS --json` in-process; its JSON."""
    result = CliRunner().invoke(remem_cli, ["--db", db, "keys", *args, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    data: dict[str, Any] = json.loads(result.output)
    return data


def check_keys_commands(db: str) -> None:
    """Create, list and revoke a key with `remem keys` on the database `db` names."""
    key = keys_cli(db, "create", "--tenant", "acme", "--role", "reviewer")
    assert key["key"].startswith("rk_") and key["role"] == "reviewer" and key["actor"] is None
    listed = keys_cli(db, "list")
    assert [k["id"] for k in listed["keys"]] == [key["id"]] and "key" not in listed["keys"][0]
    store = open_store(db)
    try:
        assert keyring.verify_key(store.keys, key["key"]) is not None
        revoked = keys_cli(db, "revoke", key["id"])
        assert revoked["revoked_at"] and revoked["id"] == key["id"]
        assert keyring.verify_key(store.keys, key["key"]) is None
        assert keys_cli(db, "list", "--tenant", "acme")["keys"] == [revoked]
        assert keys_cli(db, "list", "--tenant", "globex")["keys"] == []
    finally:
        store.close()


def test_keys_commands(db: str) -> None:
    check_keys_commands(db)


@on_both
def test_a_key_from_the_cli_works_until_the_cli_revokes_it(server: Server) -> None:
    made = keys_cli(server.db, "create", "--tenant", "acme", "--actor", "hank")
    with httpx.Client(base_url=server.url, timeout=30) as h:
        auth = {"Authorization": f"Bearer {made['key']}"}
        assert h.get("/v1/memories", headers=auth).json()["records"] == []
        keys_cli(server.db, "revoke", made["id"])
        resp = h.get("/v1/memories", headers=auth)
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "unauthorized"


@on_both
def test_admin_keys_over_http_stay_in_their_tenant(server: Server) -> None:
    with server.http("admin") as h:
        made = h.post("/v1/keys", json={"actor_id": "ivan", "role": "agent"})
        assert made.status_code == 201, made.text
        new = made.json()
        assert new["tenant"] == "acme" and new["actor"] == "ivan"
        listed = [k["id"] for k in h.get("/v1/keys").json()["keys"]]
        assert new["id"] in listed and "key" not in h.get("/v1/keys").json()["keys"][0]
    with httpx.Client(base_url=server.url, timeout=30) as h:
        auth = {"Authorization": f"Bearer {new['key']}"}
        assert h.get("/v1/memories", headers=auth).status_code == 200
    with server.http("globex") as h:  # another tenant's admin: neither listed nor revocable
        assert new["id"] not in [k["id"] for k in h.get("/v1/keys").json()["keys"]]
        assert h.delete(f"/v1/keys/{new['id']}").status_code == 404
    with server.http("admin") as h:
        revoked = h.delete(f"/v1/keys/{new['id']}").json()
        assert revoked["id"] == new["id"] and revoked["revoked_at"]
        assert h.delete(f"/v1/keys/{new['id']}").json() == revoked  # the first time stays
    with httpx.Client(base_url=server.url, timeout=30) as h:
        assert h.get("/v1/memories", headers=auth).status_code == 401


# -- no 5xx for anything a client sends ---------------------------------------------------------


@pytest.fixture(scope="module")
def api_schema(server: Server) -> Any:
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


fuzz_schema = schemathesis.pytest.from_fixture("api_schema")


@fuzz_schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
)
def test_schemathesis_finds_no_5xx(case: Any, server: Server) -> None:
    # its own tenant: what the fuzzer writes or erases cannot disturb the tests above
    response = case.call(headers={"Authorization": f"Bearer {server.keys['fuzz']}"})
    assert response.status_code < 500, f"{case.method} {case.path}: {response.text[:300]}"
    # and every status it answers is in the document, for that route (test_openapi.py);
    # 405 answers a method the path does not have, which no operation lists
    documented = case.operation.definition.raw["responses"]
    assert response.status_code == 405 or str(response.status_code) in documented, (
        f"{case.method} {case.path}: {response.status_code}"
    )


@on_both
def test_facts_and_profile_over_http(server: Server) -> None:
    agent = server.client("agent")
    home = agent.remember(actor="farah", text="Farah lives in Lisbon", field="home",
                          value="Lisbon")  # fmt: skip
    with server.http("agent") as h:
        got = h.get("/v1/actors/farah/facts/city").json()
        assert got["status"] == "found" and got["field"] == "home city"
        assert got["record_id"] == home.id and got["value"] == "Lisbon"
        assert h.get("/v1/actors/farah/facts/home%20city").json()["record_id"] == home.id
        assert h.get("/v1/actors/farah/facts/diet").json()["status"] == "not_found"
        early = h.get("/v1/actors/farah/facts/home", params={"as_of": "2000-01-01T00:00:00Z"})
        assert early.json()["status"] == "not_found"
        for bad in [
            h.get("/v1/actors/farah/facts/home", params={"as_of": "whenever"}),
            h.get("/v1/actors/farah/facts/%00"),
            h.get("/v1/actors/farah/profile", params={"budget_tokens": 0}),
            h.get("/v1/actors/farah/profile", params={"max_sensitivity": "secret"}),
        ]:
            assert bad.status_code == 422, bad.text
            assert bad.json()["error"]["code"] == "invalid_input"
        prof = h.get("/v1/actors/farah/profile").json()
        assert [f["record_id"] for f in prof["facts"]] == [home.id]
        packet = h.post(
            "/v1/memories/retrieve",
            json={"query": "anything else", "actor_id": "farah", "pin": ["city"]},
        ).json()
        assert [p["id"] for p in packet["pinned"]] == [home.id]
        assert home.id not in [r["id"] for r in packet["records"]]
        # records as of a time before the write: none yet
        early_list = h.get("/v1/memories", params={"actor_id": "farah", "as_of": "2000-01-01"})
        assert early_list.status_code == 200 and early_list.json()["records"] == []
    assert agent.records(actor="farah", as_of="2000-01-01T00:00:00Z") == []
    assert [r.id for r in agent.records(actor="farah", as_of=home.created_at)] == [home.id]
    # the Python client reads the same
    fact = agent.fact(actor="farah", field="home")
    assert fact.found is not None and fact.found.record_id == home.id
    profile = agent.profile(actor="farah", budget=100)
    assert profile.facts[0].found is not None and profile.facts[0].found.value == "Lisbon"
    assert [p.id for p in agent.recall(actor="farah", query="x", pin=["home"]).pinned] == [home.id]
    # a key for one actor reads only that actor, like memories; another tenant sees nothing
    with server.http("alice") as h:
        for resp in [h.get("/v1/actors/farah/facts/home"), h.get("/v1/actors/farah/profile")]:
            assert resp.status_code == 403, resp.text
            assert resp.json()["error"]["code"] == "forbidden"
            assert "Lisbon" not in resp.text
        assert h.get("/v1/actors/alice/profile").status_code == 200
    with pytest.raises(Forbidden):
        server.client("alice").fact(actor="farah", field="home")
    with server.http("globex") as h:
        assert h.get("/v1/actors/farah/facts/home").json()["status"] == "not_found"
        assert h.get("/v1/actors/farah/profile").json()["facts"] == []


@on_both
def test_recall_as_of_known_at_and_valid_at_over_http_and_the_client(server: Server) -> None:
    # what the agent believed at one time about another (issue 21, item 6)
    query = "Where did she live, or move?"
    with server.http("agent") as h:
        porto = event_body("nadia", "I live in Porto.", time="2026-01-05T09:00:00Z")
        assert h.post("/v1/events", json=porto).status_code == 201
        _drain(server)
        between = datetime.now(UTC).isoformat()  # after Porto was written, before Lyon was
        time.sleep(0.02)
        lyon = event_body("nadia", "I moved to Lyon.", time="2026-02-01T10:00:00Z")  # said then
        assert h.post("/v1/events", json=lyon).status_code == 201
        _drain(server)

        def places(**when: str) -> list[str]:
            body = {"query": query, "actor_id": "nadia", "include_events": False, **when}
            r = h.post("/v1/memories/retrieve", json=body)
            assert r.status_code == 200, r.text
            return [it["text"].split()[-1] for it in r.json()["records"]]

        assert places() == ["Lyon"]
        assert places(known_at=between, valid_at="2026-01-15T00:00:00Z") == ["Porto"]
        assert places(as_of=between) == ["Porto"]  # Lyon held then, but was not yet known
        assert places(valid_at="2026-02-15T00:00:00Z") == ["Lyon"]
        explained = h.post("/v1/memories/retrieve", json={
            "query": query, "actor_id": "nadia", "as_of": between, "explain": True,
        }).json()["explain"]  # fmt: skip
        assert explained["as_of"] == explained["known_at"] == explained["valid_at"]
        assert "written after known_at" in {r["reason"] for r in explained["rejected"]}
        bad_times = [("known_at", "soon"), ("valid_at", "\x00"), ("known_at", "\ud800"),
                     ("valid_at", "0001-01-01T00:00:00+05:00")]  # fmt: skip
        for field_name, bad in bad_times:
            body = {"query": query, "actor_id": "nadia", field_name: bad}
            # json.dumps escapes a lone surrogate (\ud800) as JSON allows
            r = h.post("/v1/memories/retrieve", content=json.dumps(body),
                       headers={"content-type": "application/json"})  # fmt: skip
            assert r.status_code == 422, r.text
            assert r.json()["error"]["message"].startswith(f"{field_name}: ")
    agent = server.client("agent")
    then = agent.recall(actor="nadia", query=query, include_events=False, known_at=between,
                        valid_at="2026-01-15T00:00:00Z")  # fmt: skip
    assert [it.text.split()[-1] for it in then.records] == ["Porto"]
    now_about = agent.recall(actor="nadia", query=query, include_events=False,
                             valid_at=datetime(2026, 2, 15, tzinfo=UTC))  # fmt: skip
    assert [it.text.split()[-1] for it in now_about.records] == ["Lyon"]
