"""A key has a name, for people: set by `remem keys create --name`, POST /v1/keys and
the console's Keys page; bounded and screened like every stored string; shown in the
console's key list, in an erasure's receipt ("who asked") and in the audit rows of
what the key did. A key for one actor lists that actor's keys only."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.http import create_app
from tests.support import console
from tests.support.cli import ok
from tests.support.secrets import GITHUB

DESK = "privacy desk: Dana"


def _seed(db: str) -> dict[str, str]:
    store = open_store(db)
    try:
        made = {
            "admin": keyring.create_key(store.keys, tenant="acme", role="admin", name=DESK),
            "plain": keyring.create_key(store.keys, tenant="acme", role="admin"),
            "alice": keyring.create_key(store.keys, tenant="acme", actor="alice", role="admin"),
            "bob": keyring.create_key(store.keys, tenant="acme", actor="bob", name="bob's bot"),
        }
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        mem.remember(actor="alice", text="Lives in Lyon")
        mem.remember(actor="alice", text="Plays the oboe")
    finally:
        store.close()
    return {k: v[1] for k, v in made.items()}


def test_a_key_name_is_shown_where_the_key_acted(db: str) -> None:
    keys = _seed(db)
    app = create_app(db, embedder=HashEmbedder(), worker=False)
    with TestClient(app) as client:
        admin = {"Authorization": f"Bearer {keys['admin']}"}
        made = client.post(
            "/v1/keys", json={"role": "agent", "name": "support: Sam"}, headers=admin
        )
        assert made.status_code == 201, made.text
        assert made.json()["name"] == "support: Sam"
        listed = client.get("/v1/keys", headers=admin).json()["keys"]
        assert {k["name"] for k in listed} >= {DESK, "support: Sam", None}

        rec = client.get("/v1/memories", params={"actor_id": "alice"}, headers=admin).json()
        lyon = next(r["id"] for r in rec["records"] if "Lyon" in r["text"])
        gone = client.delete(f"/v1/memories/{lyon}", params={"reason": "DSR-77"}, headers=admin)
        assert gone.status_code == 200, gone.text
        job = gone.json()["job_id"]
        receipt = client.get(f"/v1/deletions/{job}/receipt", headers=admin).json()
        assert receipt["requested_by"]["name"] == f"api: {DESK}"
        rows = client.get("/v1/audit", params={"action": "erase"}, headers=admin).json()["rows"]
        assert rows[0]["detail"]["key_name"] == DESK

        # an unnamed key keeps its surface, role and scope as its name
        plain = {"Authorization": f"Bearer {keys['plain']}"}
        oboe = next(r["id"] for r in rec["records"] if "oboe" in r["text"])
        job = client.delete(f"/v1/memories/{oboe}", params={"reason": "DSR-78"}, headers=plain)
        receipt = client.get(f"/v1/deletions/{job.json()['job_id']}/receipt", headers=plain)
        assert receipt.json()["requested_by"]["name"] == "api: admin key for the whole tenant"

        # bounded and screened, and nothing is made when refused
        before = len(client.get("/v1/keys", headers=admin).json()["keys"])
        for bad in (f"token {GITHUB}", "x" * (keyring.KEY_NAME_MAX + 1), "tab\x07bell"):
            refused = client.post("/v1/keys", json={"name": bad}, headers=admin)
            assert refused.status_code in (400, 422), refused.text
        assert len(client.get("/v1/keys", headers=admin).json()["keys"]) == before

        # the console: the key list names keys; a key made there is named; confinement
        console.sign_in(client, keys["admin"])
        page = client.get("/console/keys")
        assert DESK in page.text and "bob&#39;s bot" in page.text
        answer = console.post(client, "/console/keys", name="night shift", role="reviewer")
        assert "night shift" in answer.text and "rk_" in answer.text
        refused = console.error(console.post(client, "/console/keys", name=GITHUB))
        assert "the key's name contains an access token" in refused
        logged = client.get("/console/audit", params={"action": "key_create"})
        assert logged.status_code == 200 and DESK in logged.text  # who made the key
        console.sign_in(client, keys["alice"])
        mine = client.get("/console/keys").text
        assert "bob&#39;s bot" not in mine and DESK not in mine and "night shift" not in mine
        audit = client.get("/console/audit", params={"action": "key_create"})
        assert audit.status_code == 200 and DESK not in audit.text  # others' rows stay out


def test_remem_keys_create_takes_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "keys.db"
    made = ok(capsys, db, "keys", "create", "--tenant", "acme", "--name", "ops: Lee")
    assert made["name"] == "ops: Lee"
    listed = ok(capsys, db, "keys", "list")
    assert [k["name"] for k in listed["keys"]] == ["ops: Lee"]
    from remem.cli.main import main

    assert main(["--db", str(db), "keys", "create", "--tenant", "acme", "--name", GITHUB]) != 0
    assert "the key's name contains an access token" in capsys.readouterr().err
    assert len(ok(capsys, db, "keys", "list")["keys"]) == 1
