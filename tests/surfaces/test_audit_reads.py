"""Every read of an actor's memory through the API or MCP leaves an audit row (issue
39), as GET /v1/memories and recall did: a record's history (`read`), an actor's fact
or profile (`recall`: agents read them every turn, so one row per key, actor and
surface a minute, as recall), and MCP's list_memories (`read`), get_fact and
get_profile (`recall`). Both backends."""

from __future__ import annotations

from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.facts.request import FactAsk, ProfileAsk, RecordsAsk
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.service.mcp import McpServer


def test_history_facts_profiles_and_mcp_reads_are_audited(db: str) -> None:
    store = open_store(db)
    try:
        api = keyring.create_key(store, tenant="acme", role="admin")
        mcp = keyring.create_key(store, tenant="acme", actor="alice")
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        rec = mem.remember(actor="alice", text="Lives in Porto", field="home city", value="Porto")
        server = McpServer(store, mcp[1])
        server.list_memories(RecordsAsk(actor=None, limit=10))
        server.get_fact(FactAsk(actor=None, field="home city"))
        server.get_profile(ProfileAsk(actor=None))
    finally:
        store.close()
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {api[1]}"}
        for path in (
            f"/v1/memories/{rec.id}/history",
            "/v1/actors/alice/facts/home city",
            "/v1/actors/alice/profile",
        ):
            assert client.get(path, headers=auth).status_code == 200, path
        rows = client.get("/v1/audit", params={"actor_id": "alice"}, headers=auth).json()
    seen = {(r["key_id"], r["action"], r["detail"]["surface"], r["target"]) for r in rows["rows"]}
    assert seen >= {
        (api[0].id, "read", "api", rec.id),
        (api[0].id, "recall", "api", None),
        (mcp[0].id, "read", "mcp", None),
        (mcp[0].id, "recall", "mcp", None),
    }
    # facts and profiles of one minute share the recall's row
    assert [r["action"] for r in rows["rows"] if r["key_id"] == api[0].id].count("recall") == 1
