"""Unicode edge cases in actor ids and namespaces: invisible characters, direction
marks, confusables and accents typed two ways.

Decided: an actor (and session, tenant, document scope name) is ASCII letters,
digits and `. _ @ : + -` (that held: "alice\\u200b", a Cyrillic "\u0430", a full-width
"\uff41" and a right-to-left override are refused, never a second "alice"). A namespace
may hold any script, so a Cyrillic segment stays its own namespace; but it was
stored exactly as typed, so "/…/notes\\u200b" was a namespace that reads as
"/…/notes", and an accent typed decomposed made another namespace than the same
accent composed. Now invisible format characters are refused, and a namespace is
kept (and looked up) in NFC.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.service.http import create_app
from tests.support.servers import key_for

LOOKALIKES = {
    "zero-width space": "alice\u200b",
    "zero-width joiner": "al\u200dice",
    "right-to-left override": "\u202ealice",
    "left-to-right mark": "alice\u200e",
    "byte-order mark": "\ufeffalice",
    "Cyrillic a": "\u0430lice",
    "full-width a": "\uff41lice",
    "decomposed accent": "ali\u0301ce",
}
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202e", "\u2066", "\ufeff",
             "\u00ad", "\u2060", "\x85"]  # fmt: skip
PREFIX = "/tenants/default/actors/alice/"


@pytest.fixture
def mem(db: str) -> Iterator[Memory]:
    with Memory.open(db, embedder=HashEmbedder()) as m:
        yield m


@pytest.mark.parametrize("actor", list(LOOKALIKES.values()), ids=list(LOOKALIKES))
def test_an_actor_that_looks_like_alice_is_refused_not_a_second_alice(
    mem: Memory, actor: str
) -> None:
    mem.add_event(actor="alice", session="s1", role="user", text="I prefer aisle seats")
    for write in (
        lambda: mem.add_event(actor=actor, session="s1", role="user", text="I prefer windows"),
        lambda: mem.remember(actor=actor, text="I prefer window seats"),
        lambda: mem.recall(actor=actor, query="seats"),
        lambda: mem.forget(actor=actor),
        lambda: mem.add_event(actor="alice", session=actor, role="user", text="hi"),
    ):
        with pytest.raises(InvalidInput, match="must be 1-200 characters"):
            write()
    assert [e.text for e in mem.events(actor="alice")] == ["I prefer aisle seats"]


@pytest.mark.parametrize("mark", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_a_namespace_with_an_invisible_character_is_refused(mem: Memory, mark: str) -> None:
    namespace = f"{PREFIX}no{mark}tes"
    with pytest.raises(InvalidInput, match="invisible ones"):
        mem.remember(actor="alice", text="I prefer aisle seats", namespace=namespace)
    with pytest.raises(InvalidInput, match="invisible ones"):
        mem.recall(actor="alice", query="seats", namespace=namespace)
    assert mem.records(actor="alice", all=True) == []


def test_a_namespace_typed_decomposed_is_the_composed_one(mem: Memory, db: str) -> None:
    composed, decomposed = f"{PREFIX}caf\u00e9", f"{PREFIX}cafe\u0301"
    rec = mem.remember(actor="alice", text="I prefer aisle seats", namespace=decomposed)
    assert rec.namespace == composed
    for spelling in (composed, decomposed):
        packet = mem.recall(actor="alice", query="aisle seats", namespace=spelling)
        assert [r.id for r in packet.records] == [rec.id], spelling
    other = mem.remember(
        actor="alice", text="My locker is number 12", namespace=f"{PREFIX}\u0441afe"
    )  # fmt: skip  (a Cyrillic es)
    assert other.namespace != composed  # another script: another namespace, kept as is
    key = key_for(db, tenant="default", actor="alice", role="agent")
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(db, embedder=HashEmbedder(), worker=False)) as client:
        item = {"text": "I prefer tea", "namespace": f"{PREFIX}no\u200btes", "request_id": "r1"}
        got = client.post("/v1/memories/batch-create", json={"records": [item]}, headers=auth)
        (result,) = got.json()["results"]
        assert result["status"] == 422 and "invisible" in result["error"]["message"], got.text
        body = {"query": "aisle seats", "namespace": decomposed}
        found = client.post("/v1/memories/retrieve", json=body, headers=auth).json()
        assert [r["id"] for r in found["records"]] == [rec.id], found
