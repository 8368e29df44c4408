"""An erasure's reason cannot carry the erased words (issue 39): a receipt and the
audit log outlive the erasure, so a reason or ticket reference that repeats a content
word of what is being erased is refused before anything is erased, with a clear
error, on every surface that takes one: the library, HTTP (one record, a subject, a
batch), the Python Client, the console (record page and Erasure page), the CLI
(`remem forget --reason`, `remem records import`) and MCP's forget. A reason that
quotes nothing of it goes through, and then a grep of every receipt and of the audit
log finds none of the erased words. Both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.cli.main import main
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.client import Client
from remem.service.http import create_app
from remem.service.mcp import McpServer
from remem.store.values import Asked
from tests.support import console
from tests.support.servers import serving

ERASED = ("oboe", "Lyon", "marzipan", "Quimper", "kayak")  # words only the memory holds
REFUSED = "repeats"  # the error says the reason repeats words of what is being erased


def _seed(db: str) -> tuple[dict[str, str], dict[str, str]]:
    store = open_store(db)
    try:
        keys = {
            "admin": keyring.create_key(store.keys, tenant="acme", role="admin", name="dpo")[1],
            "alice": keyring.create_key(store.keys, tenant="acme", actor="alice", role="admin")[1],
        }
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        mem.add_event(actor="bob", session="s1", role="user", text="I paddle a kayak in Quimper")
        ids = {
            "oboe": mem.remember(actor="alice", text="Plays the oboe in Lyon").id,
            "marzipan": mem.remember(actor="alice", text="Loves marzipan").id,
            "kayak": mem.remember(actor="alice", text="Owns a red kayak").id,
        }
    finally:
        store.close()
    return keys, ids


def _records(db: str, actor: str) -> set[str]:
    store = open_store(db)
    try:
        return {r.id for r in Memory(store, tenant="acme").records(actor=actor, limit=100)}
    finally:
        store.close()


def _bob_said(db: str) -> list[str]:
    store = open_store(db)
    try:
        return [e.text for e in store.events.list_events("acme", "bob", "s1")]
    finally:
        store.close()


def _cli(db: str, *args: str) -> tuple[int, str]:
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--db", db, "--tenant", "acme", *args])
    return code, out.getvalue() + err.getvalue()


def test_a_reason_repeating_erased_words_is_refused_everywhere(db: str, tmp_path: Path) -> None:
    keys, ids = _seed(db)
    everything = set(ids.values())

    # the library: the record's own words, any case
    store = open_store(db)
    try:
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        with pytest.raises(InvalidInput, match=REFUSED):
            mem.forget(record_id=ids["oboe"], asked=Asked(None, None, "DSR-1: the OBOE one"))
        with pytest.raises(InvalidInput, match=REFUSED):  # an event of the subject's
            mem.forget(actor="bob", asked=Asked(None, None, "user in quimper asked"))
        assert mem.deletions(10) == []
    finally:
        store.close()

    # the CLI: `remem forget --reason` and a delete of `remem records import`
    code, said = _cli(db, "forget", "--record", ids["marzipan"], "--reason", "marzipan, DSR-2")
    assert code != 0 and REFUSED in said
    lines = tmp_path / "rows.jsonl"
    row = {"op": "delete", "record_id": ids["kayak"], "reason": "red kayak removal"}
    lines.write_text(json.dumps(row) + "\n")
    code, said = _cli(db, "records", "import", str(lines), "--json")
    assert REFUSED in json.loads(said)["results"][0]["error"]["message"]

    # MCP's forget
    store = open_store(db)
    try:
        with pytest.raises(InvalidInput, match=REFUSED):
            McpServer(store, keys["admin"]).forget(
                record_id=ids["oboe"], actor_id=None, reason="lyon"
            )
    finally:
        store.close()

    app = create_app(db, embedder=HashEmbedder(), worker=False)
    with serving(app, keys["admin"]) as http:
        admin = {"Authorization": f"Bearer {keys['admin']}"}
        one = http.delete(f"/v1/memories/{ids['oboe']}", params={"reason": "Oboe"}, headers=admin)
        assert one.status_code == 422 and REFUSED in one.json()["error"]["message"], one.text
        subject = http.post("/v1/subjects/bob/forget", params={"reason": "Kayak"}, headers=admin)
        assert subject.status_code == 422 and REFUSED in subject.text
        batch = http.post(
            "/v1/memories/batch-delete",
            json={"records": [{"record_id": ids["marzipan"], "reason": "re: marzipan"}]},
            headers=admin,
        )
        assert REFUSED in batch.json()["results"][0]["error"]["message"], batch.text
        # the Python Client, through the same app
        with Client(str(http.base_url), keys["admin"]) as client:
            with pytest.raises(InvalidInput, match=REFUSED):
                client.forget(record_id=ids["kayak"], asked=Asked(None, None, "kayak, ticket"))
        # the console: the record page's forget, and the Erasure page's
        console.sign_in(http, keys["admin"])
        page = console.post(
            http,
            f"/console/records/{ids['oboe']}/forget",
            confirm=ids["oboe"],
            reason="Plays the oboe",
        )
        assert REFUSED in console.error(page)
        page = console.post(
            http, "/console/erasure/subject", actor="bob", confirm="bob", reason="quimper"
        )
        assert REFUSED in console.error(page)

        assert _records(db, "alice") == everything  # nothing was erased
        assert _bob_said(db) == ["I paddle a kayak in Quimper"]  # bob's memory too

        # reasons that quote nothing of the memory go through; receipts and the audit
        # log then hold none of the erased words
        gone = http.delete(
            f"/v1/memories/{ids['oboe']}", params={"reason": "DSR-1042: user asked"},
            headers=admin,
        )  # fmt: skip
        assert gone.status_code == 200, gone.text
        whole = http.post(
            "/v1/subjects/bob/forget", params={"reason": "ticket 77, erase all"}, headers=admin
        )
        assert whole.status_code == 200, whole.text
        jobs = http.get("/v1/deletions", headers=admin).json()["deletions"]
        receipts = [http.get(f"/v1/deletions/{j['id']}/receipt", headers=admin).text for j in jobs]
        log = http.get("/v1/audit", headers=admin).text
        log += http.get("/console/audit").text + http.get("/console/audit/export").text
    for word in ERASED[:2] + ERASED[3:]:
        for text in [*receipts, log]:
            assert word.casefold() not in text.casefold(), (word, text[:300])
