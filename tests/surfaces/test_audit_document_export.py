"""Removing a document and exporting an actor leave an audit row on every surface that
does them (issue 39), on both backends: DELETE /v1/documents/{id}, `remem docs
remove`, `remem export` (the API's and the console's exports already did). A row names
whose memory it was (a document of an actor's scope: that actor), the document or the
counts, and never the document's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.audit import os_user
from remem.service.http import create_app
from tests.support.cli import ok

WORDS = "The lighthouse keeper's logbook mentions a marmalade recipe"


def _cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> dict[str, Any]:
    return ok(capsys, db, "--tenant", "acme", *args)


def test_document_removal_and_export_are_audited(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path
) -> None:
    store = open_store(db)
    try:
        _, secret = keyring.create_key(store.keys, tenant="acme", role="admin", name="records team")
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        by_api = mem.add_document(text=WORDS, title="log", scope="actor:alice").document.id
        by_cli = mem.add_document(text=WORDS + " again", title="log 2").document.id
        mem.remember(actor="alice", text="Keeps a logbook")
    finally:
        store.close()

    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        gone = client.delete(
            f"/v1/documents/{by_api}", headers={"Authorization": f"Bearer {secret}"}
        )
        assert gone.status_code == 200, gone.text
    _cli(capsys, db, "docs", "remove", by_cli)
    _cli(capsys, db, "export", "--actor", "alice", "--out", str(tmp_path / "alice.jsonl"))

    store = open_store(db)
    try:
        rows = store.audit.audit_log("acme")
    finally:
        store.close()
    mine = [(r["action"], r["actor"], r["target"], r["detail"]) for r in rows]
    assert mine[0] == ("export", "alice", None, {
        "surface": "cli", "user": os_user(), "events": 0, "records": 1,
    })  # fmt: skip
    removed = [m for m in mine if m[0] == "document_remove"]
    assert [(m[1], m[2], m[3]["surface"]) for m in removed] == [
        (None, by_cli, "cli"),
        ("alice", by_api, "api"),
    ]
    assert removed[1][3]["key_name"] == "records team" and removed[1][3]["verified"] is True
    assert "lighthouse" not in json.dumps(rows) and "marmalade" not in json.dumps(rows)
