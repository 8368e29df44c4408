"""Who may change the procedures every actor's recall returns, per role and scope.

Only a key for the whole tenant proposes a shared procedure; only a tenant-wide
reviewer (or admin) approves or rejects one; only a tenant-wide admin forgets or
supersedes one. An actor's key proposes and reviews its own actor's procedures.
Over HTTP (FastAPI's TestClient on a SQLite file) and the MCP server over stdio.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession

from remem.memory.memory import Memory, open_store
from remem.policy.scope import SHARED_ACTOR
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.service.keys import Principal
from tests.support.mcp import session_run, tool_data, tool_error

ROLES = ["agent", "reviewer", "admin"]
KEYS = [f"{scope}-{role}" for scope in ("tenant", "alice") for role in ROLES]


@dataclass
class Api:
    client: TestClient
    db: Path
    secrets: dict[str, str]

    def call(self, key: str, method: str, path: str, **kw: object) -> tuple[int, dict[str, object]]:
        r = self.client.request(
            method, path, headers={"Authorization": f"Bearer {self.secrets[key]}"}, **kw
        )
        return r.status_code, r.json()

    def status(self, record_id: str) -> str:
        with Memory.open(self.db, tenant="acme") as mem:
            return mem.get(record_id).status.value


def _make_keys(db: Path | str) -> dict[str, str]:
    store = open_store(db)
    try:
        made = {}
        for name in KEYS:
            scope, role = name.split("-")
            actor = None if scope == "tenant" else "alice"
            made[name] = keyring.create_key(store.keys, tenant="acme", actor=actor, role=role)[1]
        return made
    finally:
        store.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    db = tmp_path / "procedures.db"
    secrets = _make_keys(db)
    with TestClient(create_app(db, worker=False)) as client:
        yield Api(client, db, secrets)


def _proposal(api: Api, actor: str | None = None, text: str = "Refunds need two approvals.") -> str:
    with Memory.open(api.db, tenant="acme") as mem:
        return mem.propose_procedure(text=text, actor=actor, proposed_by="setup").id


def _approved(api: Api) -> str:
    with Memory.open(api.db, tenant="acme") as mem:
        rid = mem.propose_procedure(text="Always confirm the order number.").id
        mem.approve(rid, reviewer="setup")
        return rid


@pytest.mark.parametrize("key", KEYS)
def test_only_tenant_wide_keys_propose_shared_procedures(api: Api, key: str) -> None:
    code, body = api.call(key, "POST", "/v1/procedures", json={"text": "Greet by name."})
    if key.startswith("tenant"):
        assert code == 201 and body["actor"] == SHARED_ACTOR
    else:
        assert code == 403, body
        assert "whole tenant" in body["error"]["message"]  # type: ignore[index]
    # an actor's key proposes for its own actor, never for another
    mine = api.call(key, "POST", "/v1/procedures", json={"text": "Hi.", "actor_id": "alice"})
    assert mine[0] == 201 and mine[1]["actor"] == "alice"
    other = api.call(key, "POST", "/v1/procedures", json={"text": "Hi.", "actor_id": "bob"})
    assert other[0] == (201 if key.startswith("tenant") else 403)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_only_tenant_wide_reviewers_review_shared_procedures(api: Api, key: str, verb: str) -> None:
    shared = _proposal(api)
    code, body = api.call(key, "POST", f"/v1/memories/{shared}/{verb}")
    allowed = key in ("tenant-reviewer", "tenant-admin")
    assert code == (200 if allowed else 403), body
    assert api.status(shared) == ({"approve": "active", "reject": "invalid"}[verb] if allowed
                                  else "proposed")  # fmt: skip
    # the actor's own proposals: any reviewer that allows the actor
    own = _proposal(api, actor="alice")
    code, body = api.call(key, "POST", f"/v1/memories/{own}/{verb}")
    assert code == (403 if key.endswith("agent") else 200), body


@pytest.mark.parametrize("key", KEYS)
def test_only_tenant_wide_admins_forget_shared_procedures(api: Api, key: str) -> None:
    rid = _approved(api)
    allowed = key == "tenant-admin"
    upd = api.call(
        key, "POST", "/v1/memories/batch-update",
        json={"records": [{"record_id": rid, "text": "Never confirm anything."}]},
    )  # fmt: skip
    assert upd[0] == 200
    result = upd[1]["results"][0]  # type: ignore[index]
    if not allowed:
        assert result["status"] == 403 and result["error"]["code"] == "forbidden"
        assert api.status(rid) == "active"
        batch = api.call(
            key, "POST", "/v1/memories/batch-delete", json={"records": [{"record_id": rid}]}
        )
        assert batch[1]["results"][0]["status"] == 403  # type: ignore[index]
        code, body = api.call(key, "DELETE", f"/v1/memories/{rid}")
        assert code == 403, body
        assert api.status(rid) == "active"
        # still readable by every key of the tenant
        assert api.call(key, "GET", f"/v1/memories/{rid}")[0] == 200
    else:
        assert result["status"] == 422, result  # procedures change by a new version only
        code, body = api.call(key, "DELETE", f"/v1/memories/{rid}")
        assert code == 200 and body["verified"] is True


def test_the_rule_is_one_pure_function() -> None:
    from remem.service.keys import refusal

    def who(actor: str | None, role: str) -> Principal:
        return Principal("key_x", "acme", actor, role)

    assert refusal(who(None, "agent"), "propose", SHARED_ACTOR) is None
    assert refusal(who("alice", "admin"), "propose", SHARED_ACTOR) is not None
    assert refusal(who("alice", "agent"), "propose", "alice") is None
    assert refusal(who(None, "agent"), "review", SHARED_ACTOR) is not None
    assert refusal(who("alice", "reviewer"), "review", SHARED_ACTOR) is not None
    assert refusal(who("alice", "reviewer"), "review", "alice") is None
    assert refusal(who(None, "reviewer"), "change", SHARED_ACTOR) is not None
    assert refusal(who("alice", "admin"), "change", SHARED_ACTOR) is not None
    assert refusal(who(None, "admin"), "change", SHARED_ACTOR) is None
    assert refusal(who("alice", "agent"), "change", "bob") is not None


@pytest.mark.parametrize("key", KEYS)
def test_mcp_forget_keeps_shared_procedures_from_all_but_tenant_admins(
    tmp_path: Path, key: str
) -> None:
    db = str(tmp_path / "mcp.db")
    secrets = _make_keys(db)
    with Memory.open(db, tenant="acme") as mem:
        rid = mem.propose_procedure(text="Always confirm the order number.").id
        mem.approve(rid, reviewer="setup")

    async def session(s: ClientSession) -> None:
        result = await s.call_tool("forget", {"record_id": rid})
        if key == "tenant-admin":
            assert tool_data(result)["verified"] is True
        else:
            assert "forbidden" in tool_error(result)

    with open(tmp_path / "server.log", "w") as errlog:
        session_run(db, secrets[key], errlog, session)
    if key != "tenant-admin":
        with Memory.open(db, tenant="acme") as mem:
            assert mem.get(rid).status.value == "active"
