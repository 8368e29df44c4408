"""The console's audit page lists what the operator did at the CLI (issue 39), on both
backends: an erasure and a key change made with `remem forget` / `remem keys` show as
rows with no key, the surface `cli` and the OS user, filterable like the others."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.embed import HashEmbedder
from remem.memory.memory import Memory, open_store
from remem.service import keys as keyring
from remem.service.audit import os_user
from remem.service.http import create_app
from tests.support.cli import ok


def _csrf(text: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', text)
    assert found, text
    return found.group(1)


def _cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> dict[str, Any]:
    return ok(capsys, db, "--tenant", "acme", *args)


def test_cli_erasures_and_key_changes_show_in_the_console_audit_log(
    capsys: pytest.CaptureFixture[str], db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    store = open_store(db)
    try:
        _, secret = keyring.create_key(store.keys, tenant="acme", role="admin")
        mem = Memory(store, tenant="acme", embedder=HashEmbedder())
        veg = mem.remember(actor="bob", text="Bob is vegetarian")
    finally:
        store.close()
    gone = _cli(capsys, db, "forget", "--record", veg.id, "--reason", "DSR-11")
    made = _cli(capsys, db, "keys", "create", "--tenant", "acme", "--actor", "bob")

    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        form = client.get("/console/login")
        client.post("/console/login", data={"key": secret, "csrf": _csrf(form.text)})
        page = client.get("/console/audit", params={"actor": "bob"})
        assert page.status_code == 200
        rows = re.findall(
            r"<tr><td class=\"when\">[^<]*</td><td><code>([^<]*)</code></td><td>([^<]*)</td>\s*"
            r"<td>([^<]*)</td><td><code>([^<]*)</code></td>\s*<td>([^<]*)</td>",
            page.text,
        )
        user = os_user()
        assert [(k, a, who, t, unescape(d)) for k, a, who, t, d in rows] == [
            ("", "key_create", "bob", made["id"], f"surface cli · user {user}"),
            ("", "erase", "bob", str(gone["job_id"]), f"surface cli · user {user} · verified True"),
        ]
        erased = client.get("/console/audit/export", params={"action": "erase"}).text
        assert not re.search(r"\bvegetarian\b|DSR-11", erased, re.IGNORECASE)
