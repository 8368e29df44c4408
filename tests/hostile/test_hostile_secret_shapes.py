"""Secrets written in shapes the detectors did not read.

Written against issue 33, item 8: card numbers grouped by `/` or `_` or written in
full-width digits, lower-case IBANs, "my cvv is 123", a zero-width space or a space
inside "password", a wifi key stated as "its key is ...", "my social is 078 05 1120"
and "the door code is 4417-9921" were all stored. Text is now folded before the
detectors read it (NFKC, other digits as ASCII, format characters dropped), and the
labels and groupings above are read; a redaction still covers what was written. The
guards are ordinary text of the same look that must pass.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem import Memory, RefusedContent
from remem.embed import HashEmbedder
from remem.memory.memory import open_store
from remem.policy.dataclasses import find_secrets, redact
from remem.service import keys as keyring
from remem.service.http import create_app

WIDE = str.maketrans("0123456789", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19")
ARABIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")

# (text, kind, the secret as written in the text)
SECRETS = [
    ("card 4111/1111/1111/1111 exp 09/27", "payment_card", "4111/1111/1111/1111"),
    ("card 4111_1111_1111_1111", "payment_card", "4111_1111_1111_1111"),
    ("pay with 5500_0000_0000_0004 please", "payment_card", "5500_0000_0000_0004"),
    (
        "card " + "4111 1111 1111 1111".translate(WIDE),
        "payment_card",
        "4111 1111 1111 1111".translate(WIDE),
    ),
    (
        "card " + "4111111111111111".translate(WIDE),
        "payment_card",
        "4111111111111111".translate(WIDE),
    ),
    (
        "card " + "4556737586899855".translate(ARABIC),
        "payment_card",
        "4556737586899855".translate(ARABIC),
    ),
    (
        "card 4111\u200b1111\u200b1111\u200b1111",
        "payment_card",
        "4111\u200b1111\u200b1111\u200b1111",
    ),
    ("my iban is de89 3704 0044 0532 0130 00", "bank_account", "de89 3704 0044 0532 0130 00"),
    ("iban: gb82west12345698765432", "bank_account", "gb82west12345698765432"),
    ("send it to Gb82 West 1234 5698 7654 32", "bank_account", "Gb82 West 1234 5698 7654 32"),
    ("my cvv is 123", "payment_card", "123"),
    ("CVC: 4821", "payment_card", "4821"),
    ("the security code on the card is 907", "payment_card", "907"),
    ("cvv2 = 552", "payment_card", "552"),
    ("my pass word is hunter22", "password", "hunter22"),
    ("pass\u200bword: hunter22", "password", "hunter22"),
    ("p\u00adass\u200dword is Tr0ub4dor", "password", "Tr0ub4dor"),
    ("PASS WORD: correcthorse9", "password", "correcthorse9"),
    ("Our wifi is HomeNet-5G, its key is K7#pz!9QwErTy", "password", "K7#pz!9QwErTy"),
    ("wifi key: K7#pz!9QwErTy", "password", "K7#pz!9QwErTy"),
    ("the network key is Qx7mP2vL9nR4", "password", "Qx7mP2vL9nR4"),
    ("The WPA2 passphrase: blue-otter-42-river", "password", "blue-otter-42-river"),
    ("my social is 078 05 1120", "government_id", "078 05 1120"),
    ("social: 078-05-1120", "government_id", "078-05-1120"),
    ("social security 078051120", "government_id", "078051120"),
    ("my ssn is " + "078-05-1120".translate(WIDE), "government_id", "078-05-1120".translate(WIDE)),
    ("the door code is 4417-9921", "password", "4417-9921"),
    ("gate code: 4417", "password", "4417"),
    ("The alarm code is 55 21 90.", "password", "55 21 90"),
    ("garage door code is 7731", "password", "7731"),
    ("the keypad combination is 12-34-56", "password", "12-34-56"),
    ("lockbox code 4417", "password", "4417"),
    # spans map back across characters that fold to more or fewer characters
    ("\ufb01le \u2474 password: hunter22", "password", "hunter22"),
    ("\u2474\u200b my pass\u00adword is \uff48unter22 ok", "password", "\uff48unter22"),
    (
        "\u2474 card 4111\u200b 1111 1111\ufeff 1111",
        "payment_card",
        "4111\u200b 1111 1111\ufeff 1111",
    ),
]

ORDINARY = [
    "Meeting on 2024/05/12 at 10:30",
    "Dates: 12/05/2024 and 13/05/2024",
    "The train leaves 2026/03/01 08:15",
    "Call me at +44 20 7946 0958",
    "my phone is 415-555-0132",
    "order number 4111-2222-3333-4444",
    "order_1234_5678_9012_3456 shipped",
    "Invoice 2024/0042/0017",
    "the path is /srv/data/2024/05",
    "version 1_2_3_4",
    "\u6771\u4eac\u3067\uff13\u6708\uff15\u65e5\u306b\u4f1a\u3044\u307e\u3057\u3087\u3046",
    "\uff11\uff12\u6642\u306b\u99c5\u3067",
    "de89 is my locker number",
    "checksum de8937040044053201300012345678ab",
    "commit ab12cdef34567890ab12cdef34567890",
    "The key is consistency.",
    "The key is to start early",
    "the key is COVID-19 testing",
    "the key is under the mat",
    "Its key is in the drawer",
    "the key is 2FA-enabled",
    "the door code changed last week",
    "door code is in the drawer",
    "my social worker is Anna",
    "my social is on Friday",
    "social media manager since 2019",
    "the cvv is on the back of the card",
    "I passed the word along to Tom",
    "pass word games are fun",
    "zip code is 94110",
    "area code is 415",
    "error code is 404",
    "the postcode is 1011 AB",
    "my flight is BA 117 at 09:40",
    "room 4417 on floor 9",
    "Mein Passwort ist zu kurz",
]


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS)
def test_folded_and_labelled_secrets_are_found(text: str, kind: str, secret: str) -> None:
    found = [(f.kind, text[f.start : f.end]) for f in find_secrets(text)]
    assert found == [(kind, secret)], text


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS)
def test_a_redaction_covers_the_secret_as_written(text: str, kind: str, secret: str) -> None:
    clean = redact(text)
    assert secret not in clean and f"[REDACTED:{kind}]" in clean
    assert clean == text.replace(secret, f"[REDACTED:{kind}]")
    assert find_secrets(clean) == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_of_the_same_look_passes(text: str) -> None:
    assert find_secrets(text) == [], text


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_passes_folded_too(text: str) -> None:
    wide = unicodedata.normalize("NFKC", text).translate(WIDE)
    assert find_secrets(wide) == [], wide


# -- end to end: both backends, and over HTTP ---------------------------------------------------

REPORTED = [
    "my card is 4111/1111/1111/1111",
    "my card is " + "4111 1111 1111 1111".translate(WIDE),
    "my iban is de89 3704 0044 0532 0130 00",
    "my cvv is 123",
    "my pass word is hunter22",
    "pass\u200bword: hunter22",
    "Our wifi is HomeNet-5G, its key is K7#pz!9QwErTy",
    "my social is 078 05 1120",
    "the door code is 4417-9921",
]


@pytest.fixture
def bmem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


def test_events_keep_these_secrets_only_redacted(bmem: Memory) -> None:
    rows = [
        {"actor": "ana", "session": "s1", "role": "user", "text": t, "event_id": f"e{i}"}
        for i, t in enumerate(REPORTED)
    ]
    assert bmem.add_events(rows) == [True] * len(REPORTED)
    stored = {e.id: e for e in bmem.events(actor="ana")}
    for i, (text, (_, secret)) in enumerate(zip(REPORTED, _secrets(), strict=True)):
        event = stored[f"e{i}"]
        assert secret not in event.text and "[REDACTED:" in event.text, (text, event.text)
        assert event.metadata["redacted"], text
    bmem.process()
    for r in bmem.records(actor="ana", all=True):
        assert not any(s in r.text for _, s in _secrets()), r.text


@pytest.mark.parametrize("text", REPORTED)
def test_remember_refuses_these_secrets(bmem: Memory, text: str) -> None:
    with pytest.raises(RefusedContent, match="never stores secrets"):
        bmem.remember(actor="ana", text=text)
    assert bmem.records(actor="ana", all=True) == []


def _secrets() -> list[tuple[str, str]]:
    """Each reported text's kind and secret: the longest of SECRETS it holds."""
    return [
        max(((k, s) for _, k, s in SECRETS if s in text), key=lambda h: len(h[1]))
        for text in REPORTED
    ]


def _key(db: str) -> str:
    store = open_store(db)
    try:
        return keyring.create_key(store.keys, tenant="acme", role="admin")[1]
    finally:
        store.close()


def test_over_http_a_record_is_refused_and_an_event_kept_redacted(tmp_path: Path) -> None:
    db = str(tmp_path / "http.db")
    auth = {"Authorization": f"Bearer {_key(db)}"}
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        records = [
            {"actor_id": "ana", "text": t, "request_id": f"r{i}"} for i, t in enumerate(REPORTED)
        ]
        made = client.post("/v1/memories/batch-create", headers=auth, json={"records": records})
        assert made.status_code == 200, made.text
        results = made.json()["results"]
        assert [r["error"]["code"] for r in results] == ["refused_content"] * len(REPORTED)
        for text in REPORTED[:3]:
            event = {"actor_id": "ana", "session_id": "s1", "role": "user", "text": text}
            assert client.post("/v1/events", json=event, headers=auth).status_code == 201
        listed = client.get("/v1/events", headers=auth, params={"actor_id": "ana"}).json()
    texts = [e["text"] for e in listed["events"]]
    assert len(texts) == 3
    for text, (_, secret) in zip(REPORTED[:3], _secrets()[:3], strict=True):
        assert not any(secret in t for t in texts), text
