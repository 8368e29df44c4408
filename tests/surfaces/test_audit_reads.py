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
        api = keyring.create_key(store.keys, tenant="acme", role="admin")
        mcp = keyring.create_key(store.keys, tenant="acme", actor="alice")
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


def test_document_and_thread_state_reads_are_audited(db: str) -> None:
    """An actor's documents and checkpoints are its memory too: reading one document,
    a listing holding some or a checkpoint listing is a `read` row (the document's id,
    counts); a document search and a checkpoint load, made every turn, fold into the
    minute's `recall` row. A tenant document is nobody's memory: no row."""
    from remem.thread import api as thread

    store = open_store(db)
    try:
        admin = keyring.create_key(store.keys, tenant="acme", role="admin")
        agent = keyring.create_key(store.keys, tenant="acme", actor="alice")
        mcp = keyring.create_key(store.keys, tenant="acme", actor="alice")
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        hers = mem.add_document(text="Alice's quokka notes.", scope="actor:alice").document
        shared = mem.add_document(text="The quokka handbook.", title="handbook").document
        thread.checkpoint_save(mem, actor="alice", workflow="onboard", state={"step": "a"})
        found = McpServer(store, mcp[1]).search_documents(
            query="quokka", actor_id=None, top_k=5, namespaces=[]
        )
        assert {d["document_id"] for d in found["documents"]} == {hers.id, shared.id}
    finally:
        store.close()
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        auth = {"Authorization": f"Bearer {admin[1]}"}
        mine = {"Authorization": f"Bearer {agent[1]}"}
        for path, headers in (
            (f"/v1/documents/{hers.id}", auth),
            (f"/v1/documents/{shared.id}", auth),
            ("/v1/documents?scope=actor:alice", auth),
            ("/v1/documents", mine),
            ("/v1/actors/alice/checkpoints", auth),
            ("/v1/actors/alice/checkpoints/onboard", mine),
        ):
            assert client.get(path, headers=headers).status_code == 200, path
        body = {"query": "quokka", "actor_id": "alice"}
        assert client.post("/v1/documents/search", json=body, headers=auth).status_code == 200
        rows = client.get("/v1/audit", params={"limit": 100}, headers=auth).json()["rows"]
    seen = {
        (r["key_id"], r["action"], r["actor"], r["target"], r["detail"]["surface"],
         tuple(sorted(k for k in r["detail"] if k not in ("surface", "key_name"))))
        for r in rows
    }  # fmt: skip
    assert seen == {
        (admin[0].id, "read", "alice", hers.id, "api", ("documents",)),
        (admin[0].id, "read", "alice", None, "api", ("documents",)),
        (agent[0].id, "read", "alice", None, "api", ("documents",)),
        (admin[0].id, "read", "alice", None, "api", ("checkpoints",)),
        (agent[0].id, "recall", "alice", None, "api", ()),
        (admin[0].id, "recall", "alice", None, "api", ()),
        (mcp[0].id, "recall", "alice", None, "mcp", ()),
    }
    assert shared.id not in {r["target"] for r in rows} and "quokka" not in str(rows)


def test_a_listing_of_many_actors_costs_a_bounded_number_of_rows(db: str) -> None:
    from remem.service import audit

    store = open_store(db)
    try:
        who = keyring.verify_key(
            store.keys, keyring.create_key(store.keys, tenant="acme", role="admin")[1]
        )
        assert who is not None
        owners = {f"actor-{i:03}": 2 for i in range(audit.OWNERS_NOTED + 3)}
        audit.read_many(store.audit, who, "api", owners, "documents")
        rows = store.audit.audit_log("acme", limit=1000)
    finally:
        store.close()
    assert len(rows) == audit.OWNERS_NOTED + 1
    assert rows[0]["actor"] is None and rows[0]["detail"] == {
        "surface": "api", "actors": 3, "documents": 6
    }  # fmt: skip
    assert {r["actor"] for r in rows[1:]} == set(sorted(owners)[: audit.OWNERS_NOTED])
