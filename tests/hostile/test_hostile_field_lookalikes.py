"""Fields that read alike are one field, or refused; never a second fact.

Written against issue 33, item 9: `h\\u043eme city` (a Cyrillic o), `home city\\u200b`,
full-width `\\uff48\\uff4f\\uff4d\\uff45 city` and the ligature `\\ufb01eld x` each
became a field of their own, so an actor's profile listed four "home city" lines with
different values and no conflict. A field is now read in NFKC and case-folded (full-width
letters and ligatures are the plain ones), and refused when it holds a format character
(as a namespace is) or mixes scripts within a word. `canonical_field` is the one function
every surface goes through: remember, write_records, fact, profile, pin, HTTP, MCP and
the CLI.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.facts.request import FactAsk
from remem.memory.memory import open_store
from remem.policy.fields import canonical_field, valid_field
from remem.service import keys as keyring
from remem.service.http import create_app
from remem.service.mcp import McpServer
from remem.writes.request import RememberAsk
from tests.support.cli import err, ok

CYRILLIC = "h\u043eme city"
ZERO_WIDTH = "home city\u200b"
WIDE = "\uff48\uff4f\uff4d\uff45 city"
LIGATURE = "\ufb01eld x"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (WIDE, "home city"),
        ("\uff28\uff2f\uff2d\uff25 CITY", "home city"),
        ("HOME   City", "home city"),
        (LIGATURE, "field x"),
        ("\ufb02ight \ufb03x", "flight ffix"),
        ("\u2460st choice", "1st choice"),
        ("Stra\u00dfe", "strasse"),
        ("STRASSE", "strasse"),
        ("cafe\u0301 order", "caf\u00e9 order"),
        ("\u0433\u043e\u0440\u043e\u0434", "\u0433\u043e\u0440\u043e\u0434"),  # all Cyrillic
        ("\u03a0\u038c\u039b\u0397", "\u03c0\u03cc\u03bb\u03b7"),  # all Greek, case-folded
        ("\u6771\u4eac\u30bf\u30ef\u30fc", "\u6771\u4eac\u30bf\u30ef\u30fc"),  # Han + Katakana
        ("T\u30b7\u30e3\u30c4 size", "t\u30b7\u30e3\u30c4 size"),  # Latin + Katakana
        ("\ud55c\uad6d\uc5b4 \uc774\ub984", "\ud55c\uad6d\uc5b4 \uc774\ub984"),  # Hangul
        ("home city", "home city"),
        ("home", "home city"),
        ("allergy:peanut", "allergy:peanut"),
        ("allergy:\uff50eanut", "allergy:peanut"),
    ],
)
def test_lookalikes_fold_onto_the_plain_field(raw: str, field: str) -> None:
    assert canonical_field(raw) == field
    assert canonical_field(field) == field  # folding twice changes nothing


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (CYRILLIC, "mixes"),
        ("home \u0441ity", "mixes"),  # Cyrillic es
        ("h\u03bfme city", "mixes"),  # Greek omicron
        ("\uff48\u043eme city", "mixes"),  # full-width and Cyrillic
        ("allergy:p\u0435anut", "mixes"),  # in a family key too
        (ZERO_WIDTH, "invisible"),
        ("home\u200dcity", "invisible"),
        ("home\u00adcity", "invisible"),  # soft hyphen
        ("\u202ehome city", "invisible"),  # right-to-left override
        ("\ufeffhome city", "invisible"),  # byte-order mark
        ("home city\u2060", "invisible"),  # word joiner
    ],
)
def test_format_characters_and_mixed_scripts_are_refused(raw: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says) as info:
        canonical_field(raw)
    message = str(info.value)
    assert message.startswith("field") and raw not in message
    with pytest.raises(ValueError, match=says):  # as the surfaces' models refuse it
        valid_field(raw)


def test_the_refusal_names_the_word_and_its_scripts() -> None:
    with pytest.raises(InvalidInput) as info:
        canonical_field(CYRILLIC)
    assert '"h\\u043eme"' in str(info.value)
    assert "cyrillic" in str(info.value) and "latin" in str(info.value)
    with pytest.raises(InvalidInput) as info:
        canonical_field(ZERO_WIDTH)
    assert "U+200B" in str(info.value) and "position 9" in str(info.value)


def test_valid_field_keeps_what_it_is_given() -> None:
    assert valid_field(None) is None
    assert valid_field(WIDE) == WIDE  # the write path folds it, once


# -- end to end: both backends ------------------------------------------------------------------


@pytest.fixture
def bmem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def test_the_four_lookalikes_are_refused_or_one_field(bmem: Memory) -> None:
    bmem.remember(actor="ana", text="Lives in Porto", field="home city", value="Porto")
    for field in (CYRILLIC, ZERO_WIDTH):
        with pytest.raises(InvalidInput):
            bmem.remember(actor="ana", text="Lives in Faro", field=field, value="Faro")
    bmem.remember(actor="ana", text="Lives in Lisbon", field=WIDE, value="Lisbon")
    bmem.remember(actor="ana", text="Field x is 7", field=LIGATURE, value="7")
    profile = bmem.profile(actor="ana")
    fields = [f.field for f in profile.facts]
    assert sorted(fields) == ["field x", "home city"]
    home = bmem.fact(actor="ana", field=WIDE)
    assert home.status == "found" and [c.value for c in home.candidates] == ["Lisbon"]
    assert bmem.fact(actor="ana", field="\ufb01eld X").candidates[0].value == "7"
    stored = {r.field for r in bmem.records(actor="ana", all=True)}
    assert stored == {"home city", "field x"}
    for field in (CYRILLIC, ZERO_WIDTH):
        with pytest.raises(InvalidInput):
            bmem.fact(actor="ana", field=field)
        with pytest.raises(InvalidInput):
            bmem.recall(actor="ana", query="where", pin=[field])
    packet = bmem.recall(actor="ana", query="where does she live", pin=[WIDE])
    assert [it.text for it in packet.pinned] == ["home city: Lisbon"]


def test_a_batch_with_a_lookalike_field_writes_nothing(bmem: Memory) -> None:
    items = [
        {"op": "create", "actor": "ana", "text": "Lives in Porto", "field": "home city",
         "value": "Porto"},
        {"op": "create", "actor": "ana", "text": "Lives in Faro", "field": CYRILLIC,
         "value": "Faro"},
    ]  # fmt: skip
    with pytest.raises(InvalidInput, match="item 2: field"):
        bmem.write_records(items)
    assert bmem.records(actor="ana", all=True) == []
    items[1]["field"] = WIDE
    assert [r["status"] for r in bmem.write_records(items)] == ["created", "created"]
    assert bmem.fact(actor="ana", field="home city").status in ("found", "conflict")
    assert [f.field for f in bmem.profile(actor="ana").facts] == ["home city"]


# -- the surfaces: HTTP, MCP and the CLI -------------------------------------------------------


def _key(db: str, **kw: str) -> str:
    store = open_store(db)
    try:
        return keyring.create_key(store.keys, tenant="acme", **({"role": "admin"} | kw))[1]
    finally:
        store.close()


def test_over_http_a_lookalike_field_is_422_and_a_wide_one_the_same_field(tmp_path: Path) -> None:
    db = str(tmp_path / "http.db")
    auth = {"Authorization": f"Bearer {_key(db)}"}
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        for i, field in enumerate((CYRILLIC, ZERO_WIDTH)):
            item = {"actor_id": "ana", "text": "Lives in Faro", "field": field, "value": "Faro",
                    "request_id": f"bad{i}"}  # fmt: skip
            got = client.post("/v1/memories/batch-create", headers=auth, json={"records": [item]})
            assert got.status_code == 422, got.text
            assert got.json()["error"]["code"] == "invalid_input"
        item = {"actor_id": "ana", "text": "Lives in Lisbon", "field": WIDE, "value": "Lisbon",
                "request_id": "ok"}  # fmt: skip
        got = client.post("/v1/memories/batch-create", headers=auth, json={"records": [item]})
        assert got.status_code == 200 and got.json()["succeeded"] == 1, got.text
        fact = client.get("/v1/actors/ana/facts/home city", headers=auth)
        assert fact.json()["status"] == "found", fact.text
        bad = client.get(f"/v1/actors/ana/facts/{CYRILLIC}", headers=auth)
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_input"
        ask = {"actor_id": "ana", "query": "home", "pin": [ZERO_WIDTH]}
        pinned = client.post("/v1/memories/retrieve", headers=auth, json=ask)
        assert pinned.status_code == 422, pinned.text
        profile = client.get("/v1/actors/ana/profile", headers=auth).json()
    assert [f["field"] for f in profile["facts"]] == ["home city"]


def test_mcp_refuses_a_lookalike_field_and_reads_a_wide_one(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    server = McpServer.open(db, _key(db, actor="ana", role="agent"))
    try:
        with pytest.raises(InvalidInput):
            server.remember(RememberAsk(actor=None, text="Lives in Faro", field=CYRILLIC,
                                        value="Faro"))  # fmt: skip
        server.remember(RememberAsk(actor=None, text="Lives in Lisbon", field=WIDE, value="Lisbon"))
        assert server.get_fact(FactAsk(actor=None, field="home city"))["status"] == "found"
        with pytest.raises(InvalidInput):
            server.get_fact(FactAsk(actor=None, field=ZERO_WIDTH))
    finally:
        server.close()


def test_the_cli_refuses_a_lookalike_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    db = tmp_path / "cli.db"
    error = err(capsys, db, "remember", "--actor", "ana", "--text", "Lives in Faro",
                "--field", CYRILLIC, "--value", "Faro")  # fmt: skip
    assert error["code"] == "invalid_input" and "mixes" in error["message"]
    ok(capsys, db, "remember", "--actor", "ana", "--text", "Lives in Lisbon",
       "--field", WIDE, "--value", "Lisbon")  # fmt: skip
    found = ok(capsys, db, "fact", "get", "--actor", "ana", "--field", "home city")
    assert found["fact"]["status"] == "found"
    error = err(capsys, db, "fact", "get", "--actor", "ana", "--field", ZERO_WIDTH)
    assert error["code"] == "invalid_input" and "invisible" in error["message"]


def test_a_field_stored_before_the_checks_is_still_read(tmp_path: Path) -> None:
    """A record stored with a look-alike field before these checks (as the defect let
    through) still shows in the profile and can be corrected; only new names are checked."""
    db = tmp_path / "old.db"
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        old = mem.remember(actor="ana", text="Lives in Faro", field="faro field", value="Faro")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE records SET field = ? WHERE id = ?", (CYRILLIC, old.id))
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        assert [f.field for f in mem.profile(actor="ana").facts] == [CYRILLIC]
        fixed = mem.update(old.id, text="Lives in Tavira", by="ana")
        assert fixed.field == CYRILLIC and fixed.text == "Lives in Tavira"
